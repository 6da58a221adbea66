// Package sweepfn builds the sweep function and is the one recipe of the sweep,
// which the sweep function, the local stack and rentalctl sweep run.
package sweepfn

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// Sweep is the one recipe of the sweep, which the sweep function, the local stack
// (through it) and rentalctl sweep all run: its three parts (the kinds' rows,
// deadline.Sweeper; the owed cancellations' retries, owed.Retries; the parked
// records' redelivery, parked.Redelivery), all over the Deadlines table, from the
// service's parts (Core, its
// commands configured by opts), the kinds of deadline declared once
// (DeadlineKinds, from PAYMENT_TIMEOUT, STUCK_GRACE and RENTAL_PERIOD) with their
// commands' receivers, the to-do table read and written through those kinds, the
// repairer that mends the stuck rentals (unless STUCK_REPAIR is off) and delivers
// the parked stream records again through the consumers' own handlers (the
// process's and the projector's, stamping rows by the same kinds), the retries of
// the cancellations owed to the provider, SWEEP_CONCURRENCY, and, when metrics is
// not nil, each sweep's metrics with the dimension METRICS_SERVICE. Its settings
// are checked (CheckSweep, or without metrics all of them but METRICS_SERVICE)
// before any client is made.
func Sweep(cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, metrics *emf.Writer, opts ...command.Option) (*sweep.Sweep, error) {
	check := wiring.CheckSweeper
	if metrics != nil {
		check = wiring.CheckSweep
	}
	if err := check(getenv); err != nil {
		return nil, err
	}
	concurrency, err := wiring.Int(getenv, wiring.EnvSweepConcurrency, deadline.DefaultConcurrency)
	if err != nil {
		return nil, err
	}
	auto, err := wiring.StuckRepair(getenv)
	if err != nil {
		return nil, err
	}
	s, err := paymentfn.Core(cfg, getenv, logger, opts...)
	if err == nil && s.Projection == nil {
		err = wiring.ErrNoDeadlinesTable
	}
	if err != nil {
		return nil, err
	}
	// The repairer is the stuck kind's receiver and writes rows through the
	// projection of the same kinds: it is made first and given its consumers once
	// the kinds are declared. The process its repairs run through counts no refund
	// owed: one a repair records is logged here, and counted by the process
	// function when the stream brings it there, once.
	repairer := &repair.Repairer{Store: s.Store}
	receivers := deadlinekinds.Receivers{Canceller: s.Process, Flagger: s.Commands}
	if auto {
		receivers.Repairer = repairer
	}
	kinds, err := wiring.DeadlineKinds(getenv, receivers)
	if err != nil {
		return nil, err
	}
	projection := s.Projection.WithKinds(kinds)
	repairer.Consumers = map[string]repair.Handler{eventfilter.Process: s.Process.Handle, eventfilter.Projector: projection.Apply}
	sweeper := &sweep.Sweep{
		Deadlines: &deadline.Sweeper{Index: projection, Kinds: kinds, Concurrency: concurrency, Logger: logger},
		Owed:      &owed.Retries{Rows: projection, Retrier: s.Commands, Concurrency: concurrency, Logger: logger},
		Parked:    &parked.Redelivery{Rows: projection, Redeliverer: repairer, Concurrency: concurrency, Logger: logger},
		Logger:    logger,
	}
	if metrics != nil {
		service, err := wiring.MetricsService(getenv)
		if err != nil {
			return nil, err
		}
		sweeper.Reporter = sweepmetrics.NewWriter(metrics, service, func(err error) {
			logger.Error("sweep: metrics not written", "error", err)
		})
	}
	return sweeper, nil
}

// Check validates, touching nothing, every setting SweepFunction reads: the
// sweep's (wiring.CheckSweep) and the payment provider's (paymentfn.Check).
func Check(getenv wiring.Getenv) error {
	if err := wiring.CheckSweep(getenv); err != nil {
		return err
	}
	return paymentfn.Check(getenv)
}

// Handler is the sweep function's handler: the invocation's input is the
// scheduler's (or an EventBridge rule's) event.
type Handler = func(context.Context, json.RawMessage) (sweep.Summary, error)

// SweepFunction builds the sweep's handler, once Check passed, its cancellations
// reaching the configured provider; its metrics go to stdout in Embedded Metric
// Format.
func SweepFunction(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, stdout io.Writer) (any, error) {
	if err := Check(getenv); err != nil {
		return nil, err
	}
	pay, err := paymentfn.Load(ctx, cfg, getenv)
	if err != nil {
		return nil, err
	}
	sweeper, err := Sweep(cfg, getenv, logger, emf.NewWriter(stdout), pay.Option())
	if err != nil {
		return nil, err
	}
	return Handler(func(ctx context.Context, input json.RawMessage) (sweep.Summary, error) {
		trigger, err := deadline.ParseTrigger(input, sweeper.Deadlines.Kinds)
		if err != nil {
			return sweep.Summary{}, err
		}
		clock := time.Now()
		if trigger.OneRow() {
			return sweeper.SweepOne(ctx, trigger.Kind, trigger.Key, clock)
		}
		now, err := trigger.Now(clock)
		if err != nil {
			return sweep.Summary{}, err
		}
		return sweeper.Sweep(ctx, now)
	}), nil
}
