// Hello is the smallest useful Lambda function written with aws-lambda-go: the
// reference the start-up benchmark (cmd/startupbench) compares the service's functions
// with. It is built with the same flags as they are and answers every event with a
// fixed greeting.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (string, error) { return "hello", nil })
}
