// Command is the command Lambda function: the service's HTTP API behind API Gateway.
//
// Environment: EVENTS_TABLE, and PAYMENT_WEBHOOK_SECRET_ID (a Secrets Manager secret)
// or PAYMENT_WEBHOOK_SECRET; see internal/wiring.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bikerental/bikerental/internal/wiring"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	ctx := context.Background()
	cfg, err := wiring.AWSConfig(ctx)
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	service, err := wiring.Build(ctx, cfg, os.Getenv, logger)
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(service.API.Handle)
}
