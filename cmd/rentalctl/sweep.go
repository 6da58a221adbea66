package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/pendingtable"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/wiring"
)

const sweepUsage = `Usage: rentalctl sweep [flags]

Runs the sweep once, as the sweep function does on its schedule: it finds every
payment prepared more than PAYMENT_TIMEOUT before now (or before --at) through the
PendingPayments index, sends CancelRentalPayment for each, and prints a summary of
the outcomes. Every command it sends is safe to send twice, so it may run while the
scheduled sweep runs. A payment leaves the PendingPayments table when its
cancellation reaches the projector, not when the sweep ends.

Then, as the function does, it finds the stuck rentals (a process still open more
than PAYMENT_TIMEOUT plus STUCK_GRACE after the bike was requested) through the same
index and repairs those that need no operator, as rentalctl repair does; with
STUCK_REPAIR=off, or -stuck-repair off, it only counts them.

--at sweeps as of an earlier time (RFC 3339, such as 2026-11-29T10:00:00Z); a time
in the future is refused, since it would give up on payments before their deadline.
--dry-run only lists the payments such a sweep would send CancelRentalPayment for,
and sends nothing.

Exits 1 if a query failed, any cancellation failed (the next sweep tries those
again) or a stuck rental was left unrepaired. Needs dynamodb:Query on the PendingPayments index and, unless --dry-run,
what cancel needs on the Events table.
`

// dryRunResult is what sweep --dry-run --json prints.
type dryRunResult struct {
	DryRun    bool         `json:"dryRun"`
	Now       time.Time    `json:"now"`
	Cutoff    time.Time    `json:"cutoff"`
	TimeoutMs int64        `json:"timeoutMs"`
	Payments  []pendingRow `json:"payments"`
	Count     int          `json:"count"`
	Limit     int          `json:"limit"`
	More      bool         `json:"more"`
}

func runSweep(ctx context.Context, c *cli, args []string) error {
	var (
		eventsTable, pendingTable, at string
		shards, concurrency, limit    int
		timeout, grace                time.Duration
		stuckRepair                   string
		dryRun, asJSON                bool
	)
	f := newFlags("sweep", sweepUsage, c.getenv)
	f.eventsTable(&eventsTable, "the process reads and appends to (not needed with --dry-run)")
	f.pendingTable(&pendingTable, "to read")
	f.intEnv(&shards, "shards", envShards, pendingtable.DefaultShards, "the index write shards of the PendingPayments table")
	f.durationEnv(&timeout, "timeout", envTimeout, deadline.DefaultTimeout, "how long a payment may stay outstanding")
	f.intEnv(&concurrency, "concurrency", envConcurrency, deadline.DefaultConcurrency, "how many cancellations to send at once")
	f.durationEnv(&grace, "stuck-grace", wiring.EnvStuckGrace, deadline.DefaultGrace, "how long past the timeout a rental's process may stay open before it is stuck")
	f.stringEnv(&stuckRepair, "stuck-repair", wiring.EnvStuckRepair, "auto (repair the stuck rentals that need no operator) or off (count them) (default auto)")
	f.fs.StringVar(&at, "at", "", "sweep as of this time, RFC 3339, not in the future (default now)")
	f.fs.BoolVar(&dryRun, "dry-run", false, "only list the payments the sweep would cancel")
	f.limit(&limit, "payments with --dry-run")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	now := time.Now()
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return f.fail(c, "-at %q: want an RFC 3339 time such as 2026-11-29T10:00:00Z", at)
		}
		if t.After(now) {
			return f.fail(c, "-at %s is in the future (the clock says %s): sweeping ahead of time would give up on payments before their deadline", at, timestamp(now))
		}
		now = t
	}
	required := []string{"pending-table"}
	if !dryRun {
		required = append(required, "events-table")
	}
	if err := f.require(c, required...); err != nil {
		return err
	}
	if err := f.checkLimit(c, limit); err != nil {
		return err
	}
	cfg, err := awsConfig(ctx, c.getenv)
	if err != nil {
		return err
	}
	if dryRun {
		projection, err := wiring.PendingReader(cfg, f.lookup)
		if err != nil {
			return configError("sweep", err)
		}
		policy, err := wiring.DeadlinePolicy(f.lookup)
		if err != nil {
			return configError("sweep", err)
		}
		return sweepDryRun(ctx, c, projection, now, policy, limit, asJSON)
	}

	logger := c.logger()
	provider, err := paymentProvider(ctx, cfg, f.lookup)
	if err != nil {
		return configError("sweep", err)
	}
	s, err := wiring.Core(cfg, f.lookup, logger, command.WithProvider(provider))
	if err != nil {
		return configError("sweep", err)
	}
	sweeper, err := wiring.Sweeper(s.Projection, s.Process, f.lookup, logger, nil)
	if err != nil {
		return configError("sweep", err)
	}
	repairs, err := wiring.StuckRepairs(s, cfg, f.lookup)
	if err != nil {
		return configError("sweep", err)
	}
	receivers := deadlinekinds.Receivers{Canceller: s.Process, Flagger: s.Commands}
	if repairs != nil {
		receivers.Repairer = repairs
	}
	if err := wiring.Receiving(sweeper, receivers, f.lookup); err != nil {
		return configError("sweep", err)
	}
	sweeper.Retrier = deadlinekinds.Retrier(s.Commands)
	redelivery, parked, err := wiring.Redelivery(s, cfg, f.lookup)
	if err != nil {
		return configError("sweep", err)
	}
	sweeper.Redeliverer, sweeper.Parked = redelivery, parked
	sum, sweepErr := sweeper.Sweep(ctx, now)
	if asJSON {
		if err := c.printJSON(sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.stdout, "swept as of %s: payments prepared before %s are overdue (timeout %s)\n",
			timestamp(sum.Now), timestamp(sum.Cutoff), timeout)
		fmt.Fprintf(c.stdout, "found %s: %d cancelled, %d declined, %d nothing to do, %d failed\n",
			count(sum.Found, "overdue payment"), sum.Cancelled, sum.Declined, sum.NothingToDo, sum.Failed)
		fmt.Fprintf(c.stdout, "read %s", count(sum.ItemsRead, "index item"))
		if sum.Found > 0 {
			fmt.Fprintf(c.stdout, "; the oldest payment was overdue by %s", seconds(sum.OldestOverdue))
		}
		fmt.Fprintln(c.stdout)
		fmt.Fprintf(c.stdout, "found %s (open since before %s): %d repaired, %d left for an operator\n",
			count(sum.Stuck, "stuck rental"), timestamp(sum.StuckCutoff), sum.StuckRepaired, sum.StuckLeft)
		fmt.Fprintf(c.stdout, "found %s owed to the provider: %d made, %d still owed\n",
			count(sum.CancellationsOwed, "cancellation"), sum.CancellationsMade, sum.CancellationsLeft)
		if sum.Parked > 0 {
			fmt.Fprintf(c.stdout, "found %s: %d redelivered, %d still parked\n",
				count(sum.Parked, "parked stream record"), sum.Redelivered, sum.RedeliveriesLeft)
		}
		if sum.Incomplete {
			fmt.Fprintln(c.stdout, "stopped early for its deadline: the next sweep does the rest")
		}
	}
	switch {
	case sweepErr != nil:
		return fmt.Errorf("sweep: %w", sweepErr)
	case sum.Failed > 0:
		return fmt.Errorf("sweep: %s failed (logged above); the next sweep tries again", count(sum.Failed, "cancellation"))
	case sum.StuckLeft > 0:
		return fmt.Errorf("sweep: %s not repaired (logged above, with their cases): see rentalctl repair -h", count(sum.StuckLeft, "stuck rental"))
	case sum.CancellationsLeft > 0:
		return fmt.Errorf("sweep: %s still owed to the provider (logged above); the next sweep tries again: see rentalctl cancellations", count(sum.CancellationsLeft, "cancellation"))
	}
	return nil
}

// sweepDryRun lists what a sweep as of now would send CancelRentalPayment for.
func sweepDryRun(ctx context.Context, c *cli, projection *pendingtable.Projection, now time.Time, policy deadline.Policy, limit int, asJSON bool) error {
	timeout, cutoff := policy.PaymentTimeout(), policy.Cutoff(now)
	rows, err := projection.Overdue(ctx, cutoff, limit+1)
	if err != nil {
		return fmt.Errorf("sweep --dry-run: %w", err)
	}
	rows, more := limited(rows, limit)
	res := dryRunResult{DryRun: true, Now: now.UTC(), Cutoff: cutoff.UTC(), TimeoutMs: timeout.Milliseconds(),
		Payments: rowsOf(rows, now, policy), Count: len(rows), Limit: limit, More: more}
	if asJSON {
		return c.printJSON(res)
	}
	fmt.Fprintf(c.stdout, "dry run, nothing sent: a sweep as of %s gives up on payments prepared before %s (timeout %s)\n",
		timestamp(now), timestamp(cutoff), timeout)
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "it would find no overdue payments")
		return nil
	}
	printRows(c.stdout, res.Payments, now)
	if more {
		fmt.Fprintf(c.stdout, "it would send CancelRentalPayment for more than %s; only the oldest are listed (raise -limit to see them)\n", count(limit, "payment"))
		return nil
	}
	fmt.Fprintf(c.stdout, "it would send CancelRentalPayment for %s\n", count(len(rows), "payment"))
	return nil
}
