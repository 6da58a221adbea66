// Process is the rental-payment process Lambda function. It consumes the Events
// table's stream and reports failed records by sequence number, so that Lambda
// retries from the first one that failed.
//
// Environment: EVENTS_TABLE, RECORDING_MODE (append or command), RENTAL_PRICE_CENTS,
// RENTAL_CURRENCY; see internal/wiring.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/stream"
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
	store, err := wiring.EventStore(cfg, os.Getenv)
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	process, err := wiring.Process(store, command.New(store), os.Getenv, logger)
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return stream.HandleBatch(ctx, ev, process.Handle, logger), nil
	})
}
