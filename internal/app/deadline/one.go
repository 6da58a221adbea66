package deadline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// SweepOne acts on one row whose own deadline has come (precise deadlines: its
// one-time schedule fired), named by its kind and its table key; now is the clock.
// It reads the row and sends its kind's command only if the row is still
// outstanding: a schedule that fires after settlement, or twice, finds nothing. One
// that fires early (Scheduler keeps time to the minute) waits for the due time if
// ctx leaves time for it, and otherwise fails with ErrNotYetDue so that Scheduler
// retries.
func (s *Sweeper) SweepOne(ctx context.Context, kind, key string, now time.Time) (Summary, error) {
	logger := s.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sum := Summary{Now: now.UTC()}
	k, ok := s.Kinds.ByName(kind)
	subject, valid := k.SubjectOf(key)
	if !ok || !valid || k.ByHand {
		return sum, fmt.Errorf("deadline: %q is no row of kind %q", key, kind)
	}
	sum.Cutoff, sum.RentalID = now.Add(-k.After).UTC(), subject
	row, ok, err := s.Index.Row(ctx, k, subject)
	sum.ItemsRead = 1
	if err != nil {
		s.report(ctx, logger, sum, err)
		return sum, err
	}
	if ok && !row.Due.Before(now) {
		// Early: Scheduler fires with a minute's precision, possibly before the
		// deadline. Wait for it if the invocation has the time, else fail, so that
		// Scheduler retries later (and the periodic sweep is there regardless).
		due := row.Due.Add(time.Millisecond)
		if err := waitUntil(ctx, now, due, s.margin()); err != nil {
			s.report(ctx, logger, sum, err)
			return sum, err
		}
		now = due
		sum.Now, sum.Cutoff = now.UTC(), now.Add(-k.After).UTC()
	}
	if ok {
		sum.Found = 1
		sum.OldestOverdue = now.Sub(row.Due)
		if k.Act == nil {
			s.report(ctx, logger, sum, nil)
			return sum, nil
		}
		outcome, _, err := k.Act(ctx, row, "deadline:"+key)
		switch {
		case err != nil:
			sum.Failed = 1
			s.report(ctx, logger, sum, err)
			return sum, fmt.Errorf("deadline: %s %s: %w", k.Name, subject, err)
		case outcome == Acted:
			sum.Cancelled = 1
		case outcome == Declined:
			sum.Declined = 1
		default:
			sum.NothingToDo = 1
		}
	}
	s.report(ctx, logger, sum, nil)
	return sum, nil
}

// ErrNotYetDue reports a row's due time that is further away than the invocation
// can wait.
var ErrNotYetDue = errors.New("deadline: not yet due")

// waitUntil waits from now until due, if ctx's deadline leaves margin after it.
func waitUntil(ctx context.Context, now, due time.Time, margin time.Duration) error {
	wait := due.Sub(now)
	if dl, ok := ctx.Deadline(); ok && now.Add(wait+margin).After(dl) {
		return fmt.Errorf("%w: due at %s, %s away, more than the invocation has left", ErrNotYetDue, due.UTC().Format(time.RFC3339Nano), wait.Round(time.Millisecond))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("deadline: waiting for a row's due time: %w", context.Cause(ctx))
	}
}
