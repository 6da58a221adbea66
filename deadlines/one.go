package deadlines

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// One is what a row's own deadline did (SweepOne): the now it acted at (later than
// asked if it waited for the due time), the row's subject, and its kind's summary.
type One struct {
	Now     time.Time   `json:"now"`
	Subject string      `json:"subject"`
	Kind    KindSummary `json:"kind"`
}

// SweepOne acts on one row whose own deadline has come (a precise one-time
// schedule fired), named by its kind and its key; now is the clock and margin how
// long before ctx's deadline it stops waiting. It reads the row and sends its
// kind's command only if the row is still outstanding: a schedule that fires after
// settlement, or twice, finds nothing. One that fires early (EventBridge Scheduler
// keeps time to the minute) waits for the due time if ctx leaves time for it, and
// otherwise fails with ErrNotYetDue, so that the scheduler retries.
func (s *Sweeper) SweepOne(ctx context.Context, kind, key string, now time.Time, margin time.Duration) (One, error) {
	k, ok := s.cfg.Kinds.ByName(kind)
	subject, valid := k.SubjectOf(key)
	if !ok || !valid || !k.Swept() {
		return One{Now: now.UTC()}, fmt.Errorf("deadlines: %q is no row of swept kind %q", key, kind)
	}
	one := One{Now: now.UTC(), Subject: subject, Kind: KindSummary{Kind: k.Name, ItemsRead: 1}}
	row, ok, err := s.cfg.Index.Row(ctx, k, subject)
	if err != nil || !ok {
		return one, err
	}
	if !row.Overdue(now) {
		due := row.Due.Add(time.Millisecond)
		if err := waitUntil(ctx, now, due, margin); err != nil {
			return one, err
		}
		now = due
		one.Now = now.UTC()
	}
	one.Kind.Found, one.Kind.OldestOverdue = 1, now.Sub(row.Due)
	cmd, ok := k.Command()
	if !ok {
		one.Kind.Left = 1
		return one, nil
	}
	cause := "deadline:" + key // the row's own schedule
	outcome, err := sendOne(ctx, cmd, row, cause)
	one.Kind.count(outcome, err)
	if err != nil {
		return one, fmt.Errorf("deadlines: %s %s: %w", k.Name, subject, err)
	}
	return one, nil
}

// ErrNotYetDue reports a row's due time that is further away than the invocation
// can wait.
var ErrNotYetDue = errors.New("deadlines: not yet due")

// waitUntil waits from now until due, if ctx's deadline leaves margin after it.
// The deadline is measured against the time left on the system's clock, not
// against now, which may be another clock's.
func waitUntil(ctx context.Context, now, due time.Time, margin time.Duration) error {
	wait := due.Sub(now)
	if dl, ok := ctx.Deadline(); ok && wait+margin > time.Until(dl) {
		return fmt.Errorf("%w: due at %s, %s away, more than the invocation has left", ErrNotYetDue, due.UTC().Format(time.RFC3339Nano), wait.Round(time.Millisecond))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("deadlines: waiting for a row's due time: %w", context.Cause(ctx))
	}
}
