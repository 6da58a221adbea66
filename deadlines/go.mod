module github.com/bikerental/bikerental/deadlines

go 1.26.0
