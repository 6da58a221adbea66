// Package processfn builds the process function: the rental-payment process on the
// Events table's stream, its commands reaching the payment provider.
package processfn

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

// Check validates, touching nothing, every setting ProcessFunction reads: the
// process's (wiring.CheckProcess) and the payment provider's (paymentfn.Check).
func Check(getenv wiring.Getenv) error {
	if err := wiring.CheckProcess(getenv); err != nil {
		return err
	}
	if _, err := streamfn.Batch(getenv, eventfilter.Process, nil); err != nil {
		return err
	}
	return paymentfn.Check(getenv)
}

// ProcessFunction builds the process's stream handler, once Check passed: the
// process records its events through commands that reach the configured provider,
// and writes its metrics to stdout in Embedded Metric Format. A record that cannot
// be handled yet is parked in its parking stream of the Events table (package
// parked) rather than holding up its shard's later records.
func ProcessFunction(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, stdout io.Writer) (any, error) {
	if err := Check(getenv); err != nil {
		return nil, err
	}
	pay, err := paymentfn.Load(ctx, cfg, getenv)
	if err != nil {
		return nil, err
	}
	store, err := wiring.EventStore(cfg, getenv)
	if err != nil {
		return nil, err
	}
	batch, err := streamfn.Batch(getenv, eventfilter.Process, logger)
	if err != nil {
		return nil, err
	}
	service, err := wiring.MetricsService(getenv)
	if err != nil {
		return nil, err
	}
	p, err := wiring.Process(store, paymentfn.Commands(store, pay.Option()), getenv, logger, func(c *process.Config) {
		c.Metrics, c.MetricsService = emf.NewWriter(stdout), service
	})
	if err != nil {
		return nil, err
	}
	batch = append(batch, awslambda.Park(streamfn.Park(store, eventfilter.Process)))
	return wiring.StreamHandler(awslambda.Stream(dynamo.StreamRecord, streamfn.Handle(p.Handle), batch...)), nil
}
