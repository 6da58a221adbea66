// Package sweepfn builds the sweep function and is the one recipe of the sweep
// (New), which the sweep function, the local stack and rentalctl sweep run.
package sweepfn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// Sweep is the service's sweep: the deadlines module's sweeper over the service's
// kinds, with their commands' receivers, and the options its handler runs with.
type Sweep struct {
	Sweeper *deadlines.Sweeper
	opts    []awslambda.SweepOption
}

// Handler is the sweep function's handler: the invocation's input is the
// scheduler's, an EventBridge rule's or a row's own schedule's event
// (awslambda.Sweep).
type Handler = func(context.Context, json.RawMessage) (awslambda.Summary, error)

// Handler returns the sweep function's handler.
func (s *Sweep) Handler() Handler { return awslambda.Sweep(s.Sweeper, s.opts...) }

// Run sweeps every swept kind as of now, as the handler does for a trigger of that
// time: the local stack's schedule and rentalctl sweep run it.
func (s *Sweep) Run(ctx context.Context, now time.Time) (awslambda.Summary, error) {
	clock := awslambda.Clock(func() time.Time { return now })
	return awslambda.Sweep(s.Sweeper, append(slices.Clone(s.opts), clock)...)(ctx, nil)
}

// New is the one recipe of the sweep, which the sweep function, the local stack
// and rentalctl sweep all run: the deadlines module's sweeper over the Deadlines
// table, from the service's parts (paymentfn.Core, its commands configured by
// opts) and the kinds of deadline declared once (DeadlineKinds, from
// PAYMENT_TIMEOUT, STUCK_GRACE and RENTAL_PERIOD) with their commands' receivers
// (receivers). SWEEP_CONCURRENCY commands are in flight at once; SWEEP_RATE says
// how often it runs, which the backoff of the owed cancellations and the parked
// records counts by. When metrics is not nil, each sweep's metrics are written with
// the dimension METRICS_SERVICE. Its settings are checked (CheckSweep, or without
// metrics all of them but METRICS_SERVICE) before any client is made.
func New(cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, metrics *emf.Writer, opts ...command.Option) (*Sweep, error) {
	check := wiring.CheckSweeper
	if metrics != nil {
		check = wiring.CheckSweep
	}
	if err := check(getenv); err != nil {
		return nil, err
	}
	concurrency, err := wiring.Int(getenv, wiring.EnvSweepConcurrency, deadlines.DefaultConcurrency)
	if err != nil {
		return nil, err
	}
	every, err := wiring.SweepInterval(getenv)
	if err != nil {
		return nil, err
	}
	auto, err := wiring.StuckRepair(getenv)
	if err != nil {
		return nil, err
	}
	s, err := paymentfn.Core(cfg, getenv, logger, opts...)
	if err == nil && s.Deadlines == nil {
		err = wiring.ErrNoDeadlinesTable
	}
	if err != nil {
		return nil, err
	}
	kinds, err := receivers(cfg, getenv, s, auto)
	if err != nil {
		return nil, err
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: s.Deadlines.Index, Kinds: kinds, Every: every, Concurrency: concurrency, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("wiring: %w", err)
	}
	sw := &Sweep{Sweeper: sweeper, opts: []awslambda.SweepOption{awslambda.Logger(logger)}}
	if metrics != nil {
		service, err := wiring.MetricsService(getenv)
		if err != nil {
			return nil, err
		}
		w := sweepmetrics.NewWriter(metrics, service, func(err error) {
			logger.Error("sweep: metrics not written", "error", err)
		})
		sw.opts = append(sw.opts, awslambda.Report(w.Report))
	}
	return sw, nil
}

// receivers declares the kinds with their commands' receivers: the process, which
// cancels payments; the command handler, which flags overdue returns and retries
// the cancellations owed to the provider; the repairer, which mends the stuck
// rentals (unless auto is false) and delivers the parked stream records again
// through the consumers' own handlers (the process's, and the projector's, writing
// rows through the Deadlines table of the same kinds): it is made first and given
// its consumers once the kinds are declared. The process its repairs run through
// counts no refund owed: one a repair records is logged here, and counted by the
// process function when the stream brings it there, once.
func receivers(cfg aws.Config, getenv wiring.Getenv, s *paymentfn.Service, auto bool) (deadlines.Kinds, error) {
	repairer := &repair.Repairer{Store: s.Store}
	r := deadlinekinds.Receivers{Canceller: s.Process, Flagger: s.Commands, Retrier: s.Commands,
		Redeliverer: parked.Redeliver{Store: s.Store, Redeliverer: repairer, NewID: ident.UUID, Known: eventfilter.Known}}
	if auto {
		r.Repairer = repairer
	}
	kinds, err := wiring.DeadlineKinds(getenv, r)
	if err != nil {
		return deadlines.Kinds{}, err
	}
	table, err := wiring.DeadlineTable(cfg, getenv, kinds)
	if err != nil {
		return deadlines.Kinds{}, err
	}
	repairer.Consumers = map[string]repair.Handler{
		eventfilter.Process:   s.Process.Handle,
		eventfilter.Projector: func(ctx context.Context, r eventstore.Record) error { return table.Apply(ctx, dynamo.RecordOf(r)) },
	}
	return kinds, nil
}

// Check validates, touching nothing, every setting SweepFunction reads: the
// sweep's (wiring.CheckSweep) and the payment provider's (paymentfn.Check).
func Check(getenv wiring.Getenv) error {
	if err := wiring.CheckSweep(getenv); err != nil {
		return err
	}
	return paymentfn.Check(getenv)
}

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
	sweep, err := New(cfg, getenv, logger, emf.NewWriter(stdout), pay.Option())
	if err != nil {
		return nil, err
	}
	return sweep.Handler(), nil
}
