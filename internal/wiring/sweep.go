package wiring

import (
	"log/slog"

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
func Sweep(cfg aws.Config, getenv Getenv, logger *slog.Logger, metrics *emf.Writer, opts ...command.Option) (*sweep.Sweep, error) {
	check := checkSweeper
	if metrics != nil {
		check = CheckSweep
	}
	if err := check(getenv); err != nil {
		return nil, err
	}
	concurrency, err := intSetting(getenv, EnvSweepConcurrency, deadline.DefaultConcurrency)
	if err != nil {
		return nil, err
	}
	auto, err := stuckRepair(getenv)
	if err != nil {
		return nil, err
	}
	s, err := Core(cfg, getenv, logger, opts...)
	if err == nil && s.Projection == nil {
		err = ErrNoDeadlinesTable
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
	kinds, err := DeadlineKinds(getenv, receivers)
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
		service, err := MetricsService(getenv)
		if err != nil {
			return nil, err
		}
		sweeper.Reporter = sweepmetrics.NewWriter(metrics, service, func(err error) {
			logger.Error("sweep: metrics not written", "error", err)
		})
	}
	return sweeper, nil
}
