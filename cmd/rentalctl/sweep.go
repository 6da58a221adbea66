package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/wiring"
)

const sweepUsage = `Usage: rentalctl sweep [flags]

Runs the sweep once, as the sweep function does on its schedule: it finds every
payment prepared more than PAYMENT_TIMEOUT before now (or before --at) through the
Deadlines index, sends CancelRentalPayment for each, and prints a summary of
the outcomes. Every command it sends is safe to send twice, so it may run while the
scheduled sweep runs. A payment leaves the Deadlines table when its
cancellation reaches the projector, not when the sweep ends.

In the same run, as the function does, it finds the stuck rentals (a process still
open more than PAYMENT_TIMEOUT plus STUCK_GRACE after the bike was requested)
through the same index and repairs those that need no operator, as rentalctl
repair does (with STUCK_REPAIR=off, or -stuck-repair off, it only counts them);
flags the returns overdue by RENTAL_PERIOD; asks the provider again for the
cancellations owed to it (rentalctl cancellations), backing off while the provider
leaves them unanswered (1 minute, doubling, up to an hour, counted in sweeps of
SWEEP_RATE); and delivers the parked stream records again (rentalctl parked).

--at sweeps as of an earlier time (RFC 3339, such as 2026-11-29T10:00:00Z); a time
in the future is refused, since it would give up on payments before their deadline.
--dry-run only lists the payments such a sweep would send CancelRentalPayment for,
and sends nothing.

Exits 1 if a query failed, any command failed (the next sweep tries those again),
a stuck rental was left unrepaired or a cancellation is still owed to the provider.
Needs dynamodb:Query on the Deadlines index and, unless --dry-run, what cancel
needs on the Events table.
`

func runSweep(ctx context.Context, c *cli, args []string) error {
	var (
		eventsTable, deadlinesTable, at string
		shards, concurrency, limit      int
		timeout, grace                  time.Duration
		stuckRepair                     string
		dryRun, asJSON                  bool
	)
	f := newFlags("sweep", sweepUsage, c.getenv)
	f.eventsTable(&eventsTable, "the process reads and appends to (not needed with --dry-run)")
	f.deadlinesTable(&deadlinesTable, "to read")
	f.intEnv(&shards, "shards", envShards, ctl.DefaultShards, "the index write shards of the Deadlines table")
	f.durationEnv(&timeout, "timeout", envTimeout, ctl.DefaultTimeout, "how long a payment may stay outstanding; must match the projector's")
	f.intEnv(&concurrency, "concurrency", envConcurrency, ctl.DefaultConcurrency, "how many cancellations to send at once")
	f.durationEnv(&grace, "stuck-grace", wiring.EnvStuckGrace, ctl.DefaultGrace, "how long past the timeout a rental's process may stay open before it is stuck")
	f.stringEnv(&stuckRepair, "stuck-repair", wiring.EnvStuckRepair, "auto (repair the stuck rentals that need no operator) or off (count them) (default auto)")
	f.fs.StringVar(&at, "at", "", "sweep as of this time, RFC 3339, not in the future (default now)")
	f.fs.BoolVar(&dryRun, "dry-run", false, "only list the payments the sweep would cancel")
	f.limit(&limit, "payments with --dry-run")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	now, err := sweepTime(f, c, at)
	if err != nil {
		return err
	}
	required := []string{"deadlines-table"}
	if !dryRun {
		required = append(required, "events-table")
	}
	if err := f.require(c, required...); err != nil {
		return err
	}
	if err := f.checkLimit(c, limit); err != nil {
		return err
	}
	stack, err := f.open(ctx, c)
	if err != nil {
		return err
	}
	if dryRun {
		return sweepDryRun(ctx, c, stack, now, limit, timeout, asJSON)
	}
	sum, err := stack.Sweep(ctx, now)
	if ctl.IsSettings(err) {
		return failed("sweep", err)
	}
	if asJSON {
		if err := c.printJSON(sum); err != nil {
			return err
		}
	} else {
		printSweep(c.stdout, sum, timeout, grace)
	}
	return sweepStatus(sum, err)
}

// sweepTime is the time to sweep as of: now, or --at, which must not be in the
// future.
func sweepTime(f *flags, c *cli, at string) (time.Time, error) {
	now := time.Now()
	if at == "" {
		return now, nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, f.fail(c, "-at %q: want an RFC 3339 time such as 2026-11-29T10:00:00Z", at)
	}
	if t.After(now) {
		return time.Time{}, f.fail(c, "-at %s is in the future (the clock says %s): sweeping ahead of time would give up on payments before their deadline", at, timestamp(now))
	}
	return t, nil
}

// printSweep prints what a sweep did for people: timeout is PAYMENT_TIMEOUT, grace
// STUCK_GRACE. The payment due, the process stuck and the cancellations owed to the
// provider have lines of their own; every other kind the sweep covers has one
// after them when it found some of its rows overdue, the parked records last.
func printSweep(out io.Writer, sum ctl.Summary, timeout, grace time.Duration) {
	pay, _ := sum.Kind(ctl.KindPayment)
	stuck, _ := sum.Kind(ctl.KindStuck)
	owed, _ := sum.Kind(ctl.KindCancellation)
	parked, _ := sum.Kind(ctl.KindRedelivery)
	fmt.Fprintf(out, "swept as of %s: payments prepared before %s are overdue (timeout %s)\n",
		timestamp(sum.Now), timestamp(sum.Now.Add(-timeout)), timeout)
	fmt.Fprintf(out, "found %s: %d cancelled, %d declined, %d nothing to do, %d failed\n",
		count(pay.Found, "overdue payment"), pay.Acted, pay.Declined, pay.NothingToDo, pay.Failed)
	fmt.Fprintf(out, "read %s", count(pay.ItemsRead, "index item"))
	if pay.Found > 0 {
		fmt.Fprintf(out, "; the oldest payment was overdue by %s", seconds(pay.OldestOverdue))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "found %s (open since before %s): %d repaired, %d left for an operator\n",
		count(stuck.Found, "stuck rental"), timestamp(sum.Now.Add(-timeout-grace)), stuck.Acted, stuck.Found-stuck.Acted)
	// Every owed cancellation is overdue from the moment it is owed: those the
	// backoff holds back wait for their next retry.
	fmt.Fprintf(out, "found %s owed to the provider: %d made, %d still owed",
		count(owed.Found, "cancellation"), owed.Acted, owed.Found-owed.Acted)
	if owed.Waiting > 0 {
		fmt.Fprintf(out, " (%d put off until their next retry)", owed.Waiting)
	}
	fmt.Fprintln(out)
	for _, k := range sum.Kinds {
		if !slices.Contains([]string{ctl.KindPayment, ctl.KindStuck, ctl.KindCancellation, ctl.KindRedelivery}, k.Kind) && k.Found > 0 {
			fmt.Fprintf(out, "found %s: %d acted, %d declined, %d nothing to do, %d failed, %d left\n",
				count(k.Found, "overdue "+k.Kind+" row"), k.Acted, k.Declined, k.NothingToDo, k.Failed, k.Left)
		}
	}
	if parked.Found > 0 {
		// A parked record delivered again with an earlier one of its stream is
		// nothing to do by the time its own row is sent.
		redelivered := parked.Acted + parked.NothingToDo
		fmt.Fprintf(out, "found %s: %d redelivered, %d still parked\n",
			count(parked.Found, "parked stream record"), redelivered, parked.Found-redelivered)
	}
	if sum.Incomplete {
		fmt.Fprintln(out, "stopped early for its deadline: the next sweep does the rest")
	}
}

// sweepStatus is what sweep returns after its summary: the sweep's error, or a
// failure for what it left undone, which the next sweep tries again. A parked
// record still parked is no failure of the sweep: the next one delivers it again.
func sweepStatus(sum ctl.Summary, sweepErr error) error {
	pay, _ := sum.Kind(ctl.KindPayment)
	stuck, _ := sum.Kind(ctl.KindStuck)
	owed, _ := sum.Kind(ctl.KindCancellation)
	failed := 0
	for _, k := range sum.Kinds {
		if k.Kind != ctl.KindCancellation && k.Kind != ctl.KindRedelivery {
			failed += k.Failed
		}
	}
	switch {
	case sweepErr != nil:
		return fmt.Errorf("sweep: %w", sweepErr)
	case pay.Failed > 0:
		return fmt.Errorf("sweep: %s failed (logged above); the next sweep tries again", count(pay.Failed, "cancellation"))
	case failed > 0:
		return fmt.Errorf("sweep: %s failed (logged above); the next sweep tries again", count(failed, "command"))
	case stuck.Found > stuck.Acted:
		return fmt.Errorf("sweep: %s not repaired (logged above, with their cases): see rentalctl repair -h", count(stuck.Found-stuck.Acted, "stuck rental"))
	case owed.Found > owed.Acted:
		return fmt.Errorf("sweep: %s still owed to the provider (logged above); the next sweep tries again: see rentalctl cancellations", count(owed.Found-owed.Acted, "cancellation"))
	}
	return nil
}

// sweepDryRun lists what a sweep as of now would send CancelRentalPayment for:
// timeout is PAYMENT_TIMEOUT.
func sweepDryRun(ctx context.Context, c *cli, stack *ctl.Stack, now time.Time, limit int, timeout time.Duration, asJSON bool) error {
	res, err := stack.SweepDryRun(ctx, now, limit)
	if err != nil {
		return failed("sweep", err)
	}
	if asJSON {
		return c.printJSON(res)
	}
	fmt.Fprintf(c.stdout, "dry run, nothing sent: a sweep as of %s gives up on payments prepared before %s (timeout %s)\n",
		timestamp(now), timestamp(res.Cutoff), timeout)
	if res.Count == 0 {
		fmt.Fprintln(c.stdout, "it would find no overdue payments")
		return nil
	}
	printRows(c.stdout, res.Payments, now)
	if res.More {
		fmt.Fprintf(c.stdout, "it would send CancelRentalPayment for more than %s; only the oldest are listed (raise -limit to see them)\n", count(limit, "payment"))
		return nil
	}
	fmt.Fprintf(c.stdout, "it would send CancelRentalPayment for %s\n", count(res.Count, "payment"))
	return nil
}
