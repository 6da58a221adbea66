// Sweep is the Lambda function EventBridge Scheduler invokes once per interval: it
// finds overdue payments through the PendingPayments index and sends
// CancelRentalPayment for each. "now" is the scheduled time in its input, never later
// than the clock.
//
// Environment: EVENTS_TABLE, PENDING_TABLE, PENDING_SHARDS, PAYMENT_TIMEOUT,
// SWEEP_CONCURRENCY, RECORDING_MODE; see internal/wiring.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bikerental/bikerental/internal/deadline"
	"github.com/bikerental/bikerental/internal/wiring"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := wiring.AWSConfig(context.Background())
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	service, err := wiring.Core(cfg, os.Getenv, logger)
	if err == nil && service.Projection == nil {
		err = errors.New("PENDING_TABLE is not set")
	}
	var sweeper *deadline.Sweeper
	if err == nil {
		sweeper, err = wiring.Sweeper(service.Projection, service.Process, os.Getenv, logger, os.Stdout)
	}
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, input json.RawMessage) (deadline.Summary, error) {
		now, err := deadline.NowFrom(input, time.Now())
		if err != nil {
			return deadline.Summary{}, err
		}
		return sweeper.Sweep(ctx, now)
	})
}
