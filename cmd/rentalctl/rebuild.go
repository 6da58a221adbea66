package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// progressEvery is how many streams pass between two progress lines.
const progressEvery = 500

const rebuildUsage = `Usage: rentalctl rebuild [flags]

Replays every stream the Deadlines table is built from into it: the payment
streams (the outstanding payments, the refunds and cancellations owed), the bike
and rental-payment process streams (the open processes, by which the sweep
notices a stuck rental, and the returns due) and the parking streams (the stream
records parked for the sweep to deliver again), listed in one scan of the Events
table. Run it when the Deadlines table is new or was replaced (the
stack does not keep it: the events rebuild it). It creates nothing: both tables
must exist. Rows already there are kept or brought up to date, never duplicated,
so it is safe to run over a live projection and to run again after an
interruption. Keep the projector running meanwhile: it projects what is appended
during the rebuild.

A rebuilt row is due when its events say (the time its payment was prepared, or
its bike requested, plus PAYMENT_TIMEOUT and STUCK_GRACE), so old payments look
overdue, and old rentals stuck, until their settling events are replayed: the
sweep's EventBridge Scheduler
schedule (or its EventBridge rule, for stacks deployed with SweepTrigger=rule) is
disabled while the rebuild runs and enabled again when it ends, fails or is
interrupted (one that was already disabled stays disabled).

One rebuild runs at a time: it holds a lock in the Deadlines table, renewed
while it runs. A rebuild that loses its lock (another took it over, or its lease ran
out without a renewal) stops at once, fails, and leaves the sweep paused for the
rebuild that holds the lock, or the next one, to resume.

-shards must be the count the table records, or the rebuild refuses to start;
with -reshard the rebuild first makes it the table's count, moving every
outstanding row to its shard under it (run the projector, the sweep and every
other writer with the new count only once it is done; one interrupted is safe to
run again, and finishes the move), and then replays.

Progress goes to stderr: a line when it starts, one every 500 streams, and one at
the end; the result goes to stdout. SETTLED_MARKER_TTL (72h) sets how long the
markers of settled rows are kept.
`

func runRebuild(ctx context.Context, c *cli, args []string) error {
	var (
		eventsTable, deadlinesTable string
		shards                      int
		req                         ctl.RebuildRequest
		asJSON                      bool
	)
	f := newFlags("rebuild", rebuildUsage, c.getenv)
	f.eventsTable(&eventsTable, "to read")
	f.deadlinesTable(&deadlinesTable, "to write")
	f.intEnv(&shards, "shards", envShards, ctl.DefaultShards, "the index write shards of the Deadlines table; must match the projector's")
	f.stringEnv(&req.Sweep.ScheduleName, "schedule-name", envScheduleName, "the sweep's EventBridge schedule; empty pauses nothing")
	group := c.getenv(envScheduleGroup)
	if group == "" {
		group = "default"
	}
	f.fs.StringVar(&req.Sweep.ScheduleGroup, "schedule-group", group, "the schedule's group ["+envScheduleGroup+"]")
	f.stringEnv(&req.Sweep.RuleName, "rule-name", envRuleName, "the sweep's EventBridge rule, for a stack deployed with SweepTrigger=rule; pauses the rule instead of a schedule")
	f.fs.BoolVar(&req.Reshard, "reshard", false, "change the table's shard count to -shards, moving every outstanding row to its new shard, before the replay")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	if err := f.require(c, "events-table", "deadlines-table"); err != nil {
		return err
	}
	stack, err := f.open(ctx, c)
	if err != nil {
		return err
	}
	req.Trace = &rebuildLog{w: c.stderr, eventsTable: eventsTable, deadlinesTable: deadlinesTable, reported: -1}
	res, err := stack.Rebuild(ctx, req)
	switch {
	case errors.Is(err, ctl.ErrTwoTriggers):
		return fmt.Errorf("%w: %w", errUsage, ctl.ErrTwoTriggers)
	case err != nil:
		return failed("rebuild", err)
	}
	if asJSON {
		return c.printJSON(res)
	}
	fmt.Fprintf(c.stdout, "rebuilt %s from %s: %d streams, %d records in %s\n",
		deadlinesTable, eventsTable, res.Streams, res.Records, res.Elapsed.Round(time.Millisecond))
	return nil
}

// rebuildLog prints a rebuild's progress on stderr: a line when it starts, one every
// progressEvery streams, one at the end, and what it does to the sweep.
type rebuildLog struct {
	w                           io.Writer
	eventsTable, deadlinesTable string
	start                       time.Time
	reported                    int // the streams the last progress line counted
}

func (l *rebuildLog) Resharding(mismatch error) { fmt.Fprintf(l.w, "resharding: %v\n", mismatch) }

func (l *rebuildLog) Resharded(moved int) {
	fmt.Fprintf(l.w, "resharded: %s moved to their shards\n", count(moved, "row"))
}

func (l *rebuildLog) Unpaused() {
	fmt.Fprintf(l.w, "warning: no sweep schedule or rule given (-schedule-name or %s, -rule-name or %s): nothing is paused, and a sweep that runs during the rebuild may cancel payments that only look overdue\n", envScheduleName, envRuleName)
}

func (l *rebuildLog) Inherited(sweep string) {
	fmt.Fprintf(l.w, "an interrupted rebuild left the %s paused; this rebuild resumes it when it ends\n", sweep)
}

func (l *rebuildLog) Paused(sweep string)  { fmt.Fprintf(l.w, "paused %s\n", sweep) }
func (l *rebuildLog) Resumed(sweep string) { fmt.Fprintf(l.w, "resumed %s\n", sweep) }

func (l *rebuildLog) Started() {
	l.start = time.Now()
	fmt.Fprintf(l.w, "rebuilding %s from the payment, bike, process and parking streams of %s\n", l.deadlinesTable, l.eventsTable)
}

func (l *rebuildLog) Progress(done int) {
	if done%progressEvery == 0 {
		l.progress(done)
	}
}

func (l *rebuildLog) Replayed(streams int) {
	if streams != l.reported {
		l.progress(streams)
	}
}

func (l *rebuildLog) progress(done int) {
	l.reported = done
	fmt.Fprintf(l.w, "%d streams replayed (%s)\n", done, seconds(time.Since(l.start)))
}
