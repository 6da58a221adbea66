package ctl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/wiring"
)

// resumeTimeout bounds restoring the sweep's trigger, which runs even after an
// interrupt, on a context of its own.
const resumeTimeout = 30 * time.Second

// SweepTrigger is what runs the sweep, which a rebuild pauses: the sweep's
// EventBridge Scheduler schedule, or its EventBridge rule (for stacks deployed with
// SweepTrigger=rule), or neither, which pauses nothing.
type SweepTrigger struct {
	ScheduleGroup, ScheduleName string
	RuleName                    string
}

// ErrTwoTriggers is a SweepTrigger that names both a schedule and a rule.
var ErrTwoTriggers = errors.New("give the sweep's schedule or its rule, not both")

// check refuses a trigger that names both a schedule and a rule.
func (t SweepTrigger) check() error {
	if t.ScheduleName != "" && t.RuleName != "" {
		return ErrTwoTriggers
	}
	return nil
}

// String names the trigger as a person reads it: "schedule GROUP/NAME", "rule
// NAME", or "" for none.
func (t SweepTrigger) String() string {
	switch {
	case t.ScheduleName != "":
		return "schedule " + t.ScheduleGroup + "/" + t.ScheduleName
	case t.RuleName != "":
		return "rule " + t.RuleName
	}
	return ""
}

// switchOn is the trigger's switch through cfg, or nil for none.
func (t SweepTrigger) switchOn(cfg aws.Config) rebuild.Switch {
	switch {
	case t.ScheduleName != "":
		return rebuild.Schedule(scheduler.NewFromConfig(cfg), t.ScheduleGroup, t.ScheduleName)
	case t.RuleName != "":
		return rebuild.Rule(eventbridge.NewFromConfig(cfg), t.RuleName)
	}
	return nil
}

// RebuildTrace is told what a rebuild does as it goes, for a person to follow.
type RebuildTrace interface {
	// Resharding: the table's shard count is not the settings' (mismatch), and the
	// rebuild changes it.
	Resharding(mismatch error)
	// Resharded: the table's shard count is the settings', and every outstanding
	// row is on its shard under it: moved of them were moved there.
	Resharded(moved int)
	// Unpaused: no sweep trigger was given, so nothing is paused.
	Unpaused()
	// Inherited: an interrupted rebuild left the sweep paused; this one resumes it.
	Inherited(sweep string)
	// Paused and Resumed: the sweep's trigger was disabled, and enabled again.
	Paused(sweep string)
	Resumed(sweep string)
	// Started: the replay begins.
	Started()
	// Progress: after each stream replayed, with how many were, never from two
	// goroutines at once.
	Progress(streams int)
	// Replayed: the replay ended, well or not, after so many streams; the sweep has
	// not been resumed yet.
	Replayed(streams int)
}

// RebuildRequest is how to rebuild: which trigger to pause, and whether the
// rebuild makes the table's shard count the settings' (Reshard), moving every
// outstanding row to its shard under it, before it replays.
type RebuildRequest struct {
	Sweep   SweepTrigger
	Reshard bool
	Trace   RebuildTrace
}

// RebuildResult is what a rebuild did.
type RebuildResult struct {
	EventsTable    string `json:"eventsTable"`
	DeadlinesTable string `json:"deadlinesTable"`
	Streams        int    `json:"streams"`
	Records        int    `json:"records"`
	// Moved is how many outstanding rows a rebuild with Reshard moved to their
	// shards under the settings' count (deadlines/dynamo's Table.Reshard), before
	// it replayed.
	Moved      int   `json:"moved"`
	DurationMs int64 `json:"durationMs"`
	// Elapsed is how long the replay took.
	Elapsed time.Duration `json:"-"`
}

// Rebuild replays every stream the Deadlines table is built from into it (the
// parking streams included), with the sweep's trigger paused, holding the rebuild
// lock in the Deadlines table; see rebuild.Lock. With req.Reshard it first makes
// the table's shard count the settings' and moves every outstanding row to its
// shard (deadlines/dynamo's Table.Reshard, safe to run again after an
// interruption); without it, a table whose count is another fails the rebuild
// before anything is touched. Settings are checked and both tables looked up before
// anything is touched. The trigger is resumed when the rebuild ends, fails or is
// interrupted (ctx cancelled), unless the rebuild lost its lock: it then leaves the
// sweep paused for the lock's holder to resume, and says so in its error.
func (s *Stack) Rebuild(ctx context.Context, req RebuildRequest) (RebuildResult, error) {
	store, err := s.store()
	if err != nil {
		return RebuildResult{}, err
	}
	// Settings are checked before anything is touched; the projection the rebuild
	// writes through is made once it holds the lock, which fences it.
	if table, err := wiring.DeadlineProjection(s.cfg, s.getenv); err != nil || table == nil {
		return RebuildResult{}, settings(cmp.Or(err, wiring.ErrNoDeadlinesTable))
	}
	if err := req.Sweep.check(); err != nil {
		return RebuildResult{}, settings(err)
	}
	// Fail before touching the schedule if either table is missing.
	db := dynamodb.NewFromConfig(s.cfg)
	for _, table := range []string{s.eventsTable(), s.deadlinesTable()} {
		if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
			return RebuildResult{}, fmt.Errorf("table %s: %w", table, err)
		}
	}
	// One rebuild at a time: a second one would find the sweep already paused, and
	// the first would resume it while the second still runs.
	lock, err := rebuild.Acquire(ctx, db, s.deadlinesTable(), lockOwner(), rebuild.DefaultLease, nil)
	if err != nil {
		return RebuildResult{}, err
	}
	return s.rebuildHolding(ctx, lock, store, req)
}

// rebuildHolding is the rebuild once it holds lock. A rebuild that loses its lock
// stops: its context is cancelled, its projection and sweep clients refuse every
// call, and it leaves the sweep paused for the holder to resume.
func (s *Stack) rebuildHolding(ctx context.Context, lock *rebuild.Lock, store *dynamo.Store, req RebuildRequest) (res RebuildResult, err error) {
	ctx, stop := lock.Hold(ctx)
	fenced := lock.Fenced(s.cfg)
	var sweep rebuild.Switch
	defer func() {
		// Runs after an interrupt too: ctx may be cancelled by then.
		stop()
		err = s.letGo(context.WithoutCancel(ctx), lock, sweep, req, err)
	}()
	projection, err := wiring.DeadlineProjection(fenced, s.getenv)
	if err != nil {
		return RebuildResult{}, settings(err)
	}
	if err := checkShards(ctx, projection, req); err != nil {
		return RebuildResult{}, err
	}
	if req.Sweep.String() == "" {
		req.Trace.Unpaused()
	} else {
		if lock.Inherited {
			req.Trace.Inherited(req.Sweep.String())
		}
		// The sweep is resumed only by the rebuild that holds the lock: the one that
		// paused it, or that inherited its pause.
		sweep = req.Sweep.switchOn(fenced)
		if err := lock.PauseSweep(ctx, sweep); err != nil {
			return RebuildResult{}, err
		}
		req.Trace.Paused(req.Sweep.String())
	}
	moved := 0
	if req.Reshard {
		if moved, err = projection.Reshard(ctx); err != nil {
			return RebuildResult{Moved: moved}, fmt.Errorf("rebuild: reshard (run it again to finish): %w", err)
		}
		req.Trace.Resharded(moved)
	}
	res, err = s.replay(ctx, store, projection, req.Trace)
	res.Moved = moved
	return res, err
}

// checkShards checks, without req.Reshard, that the table's shard count is the
// settings' (recording it in a table that records none yet), and says so in its
// error if not. With req.Reshard it only tells the trace that the count changes:
// the rebuild reshards once the sweep is paused.
func checkShards(ctx context.Context, table *deadlinetable.Table, req RebuildRequest) error {
	switch err := table.CheckShards(ctx); {
	case errors.Is(err, deadlinetable.ErrShardMismatch) && req.Reshard:
		req.Trace.Resharding(err)
	case errors.Is(err, deadlinetable.ErrShardMismatch):
		return fmt.Errorf("%w; without -reshard nothing was changed", err)
	case err != nil:
		return err
	}
	return nil
}

// replay replays the streams into projector, telling trace.
func (s *Stack) replay(ctx context.Context, store *dynamo.Store, projector rebuild.Projector, trace RebuildTrace) (RebuildResult, error) {
	start := time.Now()
	trace.Started()
	res, err := rebuild.Deadlines(ctx, store, projector, trace.Progress)
	trace.Replayed(res.Streams)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return RebuildResult{}, fmt.Errorf("rebuild: after %d streams and %d records: %w", res.Streams, res.Records, err)
	}
	elapsed := time.Since(start)
	return RebuildResult{EventsTable: s.eventsTable(), DeadlinesTable: s.deadlinesTable(),
		Streams: res.Streams, Records: res.Records, DurationMs: elapsed.Milliseconds(), Elapsed: elapsed}, nil
}

// letGo resumes the sweep (if this rebuild paused it, or inherited its pause) and
// releases the lock, on a context of its own, and returns err with what went wrong
// doing so.
func (s *Stack) letGo(ctx context.Context, lock *rebuild.Lock, sweep rebuild.Switch, req RebuildRequest, err error) error {
	ctx, done := context.WithTimeout(ctx, resumeTimeout)
	defer done()
	what := req.Sweep.String()
	if sweep != nil {
		switch rerr := lock.ResumeSweep(ctx, sweep); {
		case errors.Is(rerr, rebuild.ErrLost):
			err = errors.Join(err, fmt.Errorf("the %s is left paused for the rebuild that holds the lock now, or the next one, to resume: %w", what, rerr))
		case rerr != nil:
			err = errors.Join(err, fmt.Errorf("the %s may still be disabled: %w", what, rerr))
		default:
			req.Trace.Resumed(what)
		}
	}
	switch rerr := lock.Release(ctx); {
	case rerr == nil, errors.Is(rerr, rebuild.ErrLost) && errors.Is(err, rebuild.ErrLost):
	case errors.Is(rerr, rebuild.ErrLost), errors.Is(rerr, rebuild.ErrStillPaused):
		err = errors.Join(err, rerr)
	default:
		err = errors.Join(err, fmt.Errorf("release the rebuild lock (it expires by itself): %w", rerr))
	}
	return err
}

// lockOwner names this rebuild in the lock, for whoever finds it held.
func lockOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("rentalctl rebuild on %s, pid %d, %s", host, os.Getpid(), ident.Random(6))
}
