package awslambda

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// DefaultSweepMargin is how long before the invocation's deadline a sweep stops
// starting work by default.
const DefaultSweepMargin = 3 * time.Second

// Summary is what one invocation of the sweep did: the now it swept as of,
// whether it stopped early for its deadline (Incomplete), and what it did for each
// kind it covered, in their order. Subject names the row a one-row trigger was
// for (Sweeper.SweepOne), whose kind alone is in Kinds.
type Summary struct {
	Now        time.Time               `json:"now"`
	Incomplete bool                    `json:"incomplete"`
	Subject    string                  `json:"subject,omitempty"`
	Kinds      []deadlines.KindSummary `json:"kinds"`
}

// Kind returns the summary of the kind named name; ok is false when the sweep did
// not cover it.
func (s Summary) Kind(name string) (k deadlines.KindSummary, ok bool) {
	for _, k := range s.Kinds {
		if k.Kind == name {
			return k, true
		}
	}
	return deadlines.KindSummary{Kind: name}, false
}

// Sweep returns the Lambda handler of the sweep: its input is an EventBridge
// Scheduler schedule's ({"scheduledTime": "<aws.scheduler.scheduled-time>"}), an
// EventBridge rule's Scheduled Event, or a row's own one-time schedule's
// ({"kind", "key"}), read by deadlines.ParseTrigger. Input it cannot read is
// refused with an error, and nothing is sent.
//
// A one-row trigger runs s.SweepOne for that row as of the clock. Any other runs
// s.Sweep as of the trigger's scheduled time (Trigger.Now: never later than the
// clock, the clock if it names none), the cause of its commands being "sweep:"
// and that time; it stops starting work the Margin before the invocation's
// deadline, reports Incomplete, and leaves the rest to the next run. The handler
// returns what it did, logged as one line "sweep", and the error of the reads or
// the row that failed, so that the scheduler retries.
func Sweep(s *deadlines.Sweeper, opts ...SweepOption) func(context.Context, json.RawMessage) (Summary, error) {
	set := sweepSettings{}
	for _, o := range opts {
		o.sweep(&set)
	}
	if set.margin <= 0 {
		set.margin = DefaultSweepMargin
	}
	if set.logger == nil {
		set.logger = slog.Default()
	}
	if set.clock == nil {
		set.clock = time.Now
	}
	return func(ctx context.Context, input json.RawMessage) (Summary, error) {
		trigger, err := deadlines.ParseTrigger(input, s.Kinds())
		if err != nil {
			set.logger.LogAttrs(ctx, slog.LevelError, "sweep input refused", slog.String("error", err.Error()))
			return Summary{}, err
		}
		clock := set.clock()
		var sum Summary
		if trigger.OneRow() {
			sum, err = sweepOne(ctx, s, trigger, clock, set.margin)
		} else {
			sum, err = sweepAll(ctx, s, trigger, clock, set.margin)
		}
		report(ctx, set.logger, sum, err)
		if set.report != nil {
			set.report(sum)
		}
		return sum, err
	}
}

// sweepOne acts on the one row trigger names.
func sweepOne(ctx context.Context, s *deadlines.Sweeper, trigger deadlines.Trigger, clock time.Time, margin time.Duration) (Summary, error) {
	one, err := s.SweepOne(ctx, trigger.Kind, trigger.Key, clock, margin)
	sum := Summary{Now: one.Now, Subject: one.Subject, Kinds: []deadlines.KindSummary{}}
	if one.Kind.Kind != "" {
		sum.Kinds = append(sum.Kinds, one.Kind)
	}
	return sum, err
}

// sweepAll sweeps every swept kind as of trigger's time, stopping margin before
// ctx's deadline.
func sweepAll(ctx context.Context, s *deadlines.Sweeper, trigger deadlines.Trigger, clock time.Time, margin time.Duration) (Summary, error) {
	now, err := trigger.Now(clock)
	if err != nil {
		return Summary{Now: clock.UTC(), Kinds: []deadlines.KindSummary{}}, err
	}
	sum := Summary{Now: now.UTC()}
	work, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		work, cancel = context.WithDeadline(ctx, dl.Add(-margin))
	}
	defer cancel()
	cause := "sweep:" + sum.Now.Format(time.RFC3339Nano)
	sum.Kinds, err = s.Sweep(work, now, cause)
	sum.Incomplete = work.Err() != nil && ctx.Err() == nil
	return sum, err
}

// report logs the summary as one line: an error, a failure, a row left or an
// incomplete sweep is a warning or worse; a sweep that found nothing, the usual
// case once an interval, is for debugging.
func report(ctx context.Context, logger *slog.Logger, sum Summary, err error) {
	attrs := []slog.Attr{slog.Time("now", sum.Now), slog.Bool("incomplete", sum.Incomplete)}
	if sum.Subject != "" {
		attrs = append(attrs, slog.String("subject", sum.Subject))
	}
	found, failed, left := 0, 0, 0
	for _, k := range sum.Kinds {
		attrs = append(attrs, slog.Group(k.Kind, "found", k.Found, "waiting", k.Waiting, "acted", k.Acted, "declined", k.Declined,
			"nothingToDo", k.NothingToDo, "failed", k.Failed, "left", k.Left, "oldestOverdueMs", k.OldestOverdue.Milliseconds(),
			"itemsRead", k.ItemsRead))
		found, failed, left = found+k.Found, failed+k.Failed, left+k.Left
	}
	level := slog.LevelInfo
	switch {
	case err != nil:
		attrs = append(attrs, slog.String("error", err.Error()))
		level = slog.LevelError
	case failed > 0 || left > 0 || sum.Incomplete:
		level = slog.LevelWarn
	case found == 0:
		level = slog.LevelDebug
	}
	logger.LogAttrs(ctx, level, "sweep", attrs...)
}
