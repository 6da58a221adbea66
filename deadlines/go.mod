module github.com/bikerental/bikerental/deadlines

go 1.26.0

require github.com/aws/aws-lambda-go v1.55.1
