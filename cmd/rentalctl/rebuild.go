package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/adapters/pendingtable"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/wiring"
)

const (
	// progressEvery is how many streams pass between two progress lines.
	progressEvery = 500
	// resumeTimeout bounds restoring the schedule, which runs even after an
	// interrupt, on a context of its own.
	resumeTimeout = 30 * time.Second
)

const rebuildUsage = `Usage: rentalctl rebuild [flags]
       rentalctl rebuild-pending [flags]

Replays every stream the PendingPayments table is built from into it: the payment
streams (the outstanding payments) and the bike and rental-payment process streams
(the open processes, by which the sweep notices a stuck rental), listed in one scan
of the Events table. Run it once after upgrading to a version that keeps open
processes, so that rentals already in flight have theirs. It creates nothing: both tables must exist. Rows already there are kept or brought
up to date, never duplicated, so it is safe to run over a live projection and to run
again after an interruption. Keep the projector running meanwhile: it projects what
is appended during the rebuild.

A rebuilt row carries the time its payment was prepared (or its bike requested),
so old payments look overdue, and old rentals stuck, until their settling events
are replayed: the sweep's EventBridge Scheduler
schedule (or its EventBridge rule, for stacks deployed with SweepTrigger=rule) is
disabled while the rebuild runs and enabled again when it ends, fails or is
interrupted (one that was already disabled stays disabled).

One rebuild runs at a time: it holds a lock in the PendingPayments table, renewed
while it runs. A rebuild that loses its lock (another took it over, or its lease ran
out without a renewal) stops at once, fails, and leaves the sweep paused for the
rebuild that holds the lock, or the next one, to resume.

Progress goes to stderr: a line when it starts, one every 500 streams, and one at
the end; the result goes to stdout. SETTLED_MARKER_TTL (72h) sets how long the
markers of settled payments are kept.
`

// rebuildResult is what rebuild --json prints.
type rebuildResult struct {
	EventsTable  string `json:"eventsTable"`
	PendingTable string `json:"pendingTable"`
	Streams      int    `json:"streams"`
	Records      int    `json:"records"`
	DurationMs   int64  `json:"durationMs"`
}

func runRebuild(ctx context.Context, c *cli, args []string) (err error) {
	var (
		eventsTable, pendingTable   string
		shards                      int
		scheduleName, scheduleGroup string
		ruleName                    string
		asJSON, reshard             bool
	)
	f := newFlags("rebuild", rebuildUsage, c.getenv)
	f.eventsTable(&eventsTable, "to read")
	f.pendingTable(&pendingTable, "to write")
	f.intEnv(&shards, "shards", envShards, pendingtable.DefaultShards, "the index write shards of the PendingPayments table; must match the projector's")
	f.stringEnv(&scheduleName, "schedule-name", envScheduleName, "the sweep's EventBridge schedule; empty pauses nothing")
	group := c.getenv(envScheduleGroup)
	if group == "" {
		group = "default"
	}
	f.fs.StringVar(&scheduleGroup, "schedule-group", group, "the schedule's group ["+envScheduleGroup+"]")
	f.stringEnv(&ruleName, "rule-name", envRuleName, "the sweep's EventBridge rule, for a stack deployed with SweepTrigger=rule; pauses the rule instead of a schedule")
	f.fs.BoolVar(&reshard, "reshard", false, "change the table's shard count to -shards, moving every outstanding row to its new shard")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	cfg, store, err := f.bothTables(ctx, c, "rebuild")
	if err != nil {
		return err
	}
	// Settings are checked before anything is touched; the projection the rebuild
	// writes through is made once it holds the lock, which fences it.
	if _, err := wiring.Projection(cfg, f.lookup); err != nil {
		return configError("rebuild", err)
	}
	var what string
	var sweepSwitch func(aws.Config) rebuild.Switch
	switch {
	case scheduleName != "" && ruleName != "":
		return fmt.Errorf("%w: give the sweep's schedule or its rule, not both", errUsage)
	case scheduleName != "":
		what = "schedule " + scheduleGroup + "/" + scheduleName
		sweepSwitch = func(cfg aws.Config) rebuild.Switch {
			return rebuild.Schedule(scheduler.NewFromConfig(cfg), scheduleGroup, scheduleName)
		}
	case ruleName != "":
		what = "rule " + ruleName
		sweepSwitch = func(cfg aws.Config) rebuild.Switch { return rebuild.Rule(eventbridge.NewFromConfig(cfg), ruleName) }
	}
	// Fail before touching the schedule if either table is missing.
	db := dynamodb.NewFromConfig(cfg)
	for _, table := range []string{eventsTable, pendingTable} {
		if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
			return fmt.Errorf("table %s: %w", table, err)
		}
	}

	// One rebuild at a time: a second one would find the sweep already paused, and
	// the first would resume it while the second still runs. A rebuild that loses
	// its lock stops: its context is cancelled, its projection and sweep clients
	// refuse every call, and it leaves the sweep paused for the holder to resume.
	lock, err := rebuild.Acquire(ctx, db, pendingTable, lockOwner(), rebuild.DefaultLease, nil)
	if err != nil {
		return err
	}
	ctx, stop := lock.Hold(ctx)
	fenced := lock.Fenced(cfg)
	var sweep rebuild.Switch
	defer func() {
		// Runs after an interrupt too: ctx may be cancelled by then.
		stop()
		rctx, done := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
		defer done()
		if sweep != nil {
			switch rerr := lock.ResumeSweep(rctx, sweep); {
			case errors.Is(rerr, rebuild.ErrLost):
				err = errors.Join(err, fmt.Errorf("the %s is left paused for the rebuild that holds the lock now, or the next one, to resume: %w", what, rerr))
			case rerr != nil:
				err = errors.Join(err, fmt.Errorf("the %s may still be disabled: %w", what, rerr))
			default:
				fmt.Fprintf(c.stderr, "resumed %s\n", what)
			}
		}
		switch rerr := lock.Release(rctx); {
		case rerr == nil, errors.Is(rerr, rebuild.ErrLost) && errors.Is(err, rebuild.ErrLost):
		case errors.Is(rerr, rebuild.ErrLost), errors.Is(rerr, rebuild.ErrStillPaused):
			err = errors.Join(err, rerr)
		default:
			err = errors.Join(err, fmt.Errorf("release the rebuild lock (it expires by itself): %w", rerr))
		}
	}()
	projection, err := wiring.DeadlineProjection(fenced, f.lookup)
	if err != nil {
		return configError("rebuild", err)
	}

	// The table's shard count must be this rebuild's, or the rebuild must be the one
	// that changes it.
	var projector rebuild.Projector = projection
	switch err := projection.CheckShards(ctx); {
	case errors.Is(err, pendingtable.ErrShardMismatch) && reshard:
		fmt.Fprintf(c.stderr, "resharding: %v\n", err)
		if err := projection.SetShards(ctx); err != nil {
			return err
		}
		projector = rebuild.Resharding(projection)
	case errors.Is(err, pendingtable.ErrShardMismatch):
		return fmt.Errorf("%w; without -reshard nothing was changed", err)
	case err != nil:
		return err
	}

	if sweepSwitch == nil {
		fmt.Fprintf(c.stderr, "warning: no sweep schedule or rule given (-schedule-name or %s, -rule-name or %s): nothing is paused, and a sweep that runs during the rebuild may cancel payments that only look overdue\n", envScheduleName, envRuleName)
	} else {
		if lock.Inherited {
			fmt.Fprintf(c.stderr, "an interrupted rebuild left the %s paused; this rebuild resumes it when it ends\n", what)
		}
		// The sweep is resumed only by the rebuild that holds the lock: the one that
		// paused it, or that inherited its pause.
		sweep = sweepSwitch(fenced)
		if err := lock.PauseSweep(ctx, sweep); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "paused %s\n", what)
	}

	start := time.Now()
	fmt.Fprintf(c.stderr, "rebuilding %s from the payment, bike and process streams of %s\n", pendingTable, eventsTable)
	reported := -1
	progress := func(done int) {
		reported = done
		fmt.Fprintf(c.stderr, "%d streams replayed (%s)\n", done, seconds(time.Since(start)))
	}
	res, err := rebuild.PendingPayments(ctx, store, projector, func(done int) {
		if done%progressEvery == 0 {
			progress(done)
		}
	})
	if res.Streams != reported {
		progress(res.Streams)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return fmt.Errorf("rebuild: after %d streams and %d records: %w", res.Streams, res.Records, err)
	}
	elapsed := time.Since(start)
	if asJSON {
		return c.printJSON(rebuildResult{EventsTable: eventsTable, PendingTable: pendingTable,
			Streams: res.Streams, Records: res.Records, DurationMs: elapsed.Milliseconds()})
	}
	fmt.Fprintf(c.stdout, "rebuilt %s from %s: %d streams, %d records in %s\n",
		pendingTable, eventsTable, res.Streams, res.Records, elapsed.Round(time.Millisecond))
	return nil
}

// lockOwner names this rebuild in the lock, for whoever finds it held.
func lockOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("rentalctl rebuild on %s, pid %d, %s", host, os.Getpid(), ident.Random(6))
}
