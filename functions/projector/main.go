// Projector is the Lambda function that maintains the PendingPayments table from the
// Events table's stream, reporting failed records by sequence number.
//
// Environment: EVENTS_TABLE, PENDING_TABLE, PENDING_SHARDS, SETTLED_MARKER_TTL; see
// internal/wiring.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bikerental/bikerental/internal/stream"
	"github.com/bikerental/bikerental/internal/wiring"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := wiring.AWSConfig(context.Background())
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	projection, err := wiring.Projection(cfg, os.Getenv)
	if err == nil && projection == nil {
		err = errors.New("PENDING_TABLE is not set")
	}
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return stream.HandleBatch(ctx, ev, projection.Apply, logger), nil
	})
}
