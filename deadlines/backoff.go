package deadlines

import (
	"errors"
	"time"
)

// Backoff spaces the sends of an overdue row whose receiver records nothing: the
// sweep sends the row when it falls due, again First later, and then after waits
// that double, up to Max, for as long as the row stays overdue. Nothing about it is
// stored: the sweep computes it from the row's own due time and the now it is
// given (Sends), so the row keeps its due time, and the listings show it overdue
// since then.
type Backoff struct {
	// First is the wait after the first send: positive, or zero for no backoff (the
	// row is sent at every sweep).
	First time.Duration
	// Max is the longest wait between two sends: at least First. Zero: First.
	Max time.Duration
}

// IsZero reports whether b spaces nothing.
func (b Backoff) IsZero() bool { return b.First == 0 && b.Max == 0 }

func (b Backoff) check() error {
	switch {
	case b.IsZero():
		return nil
	case b.First <= 0:
		return errors.New("want a positive First wait")
	case b.Max != 0 && b.Max < b.First:
		return errors.New("want a Max wait of at least First")
	}
	return nil
}

// maxWait is the longest wait: Max, or First.
func (b Backoff) maxWait() time.Duration {
	if b.Max == 0 {
		return b.First
	}
	return b.Max
}

// Sends reports whether the sweep at now, which runs every interval after the one
// before it, sends a row due at due: whether one of the row's send times (due, due
// plus First, and so on) falls in the interval before now, [now-every, now). Sweeps
// run at their scheduled times (the trigger's time) tile the time, so each send
// time is met by exactly one of them; one that did not run leaves its send to the
// next send time. Without a backoff every sweep sends.
func (b Backoff) Sends(due, now time.Time, every time.Duration) bool {
	if b.IsZero() || every <= 0 {
		return true
	}
	last, ok := b.lastBefore(due, now)
	return ok && now.Sub(last) <= every
}

// lastBefore returns the latest send time of a row due at due that is before now;
// ok is false when due is not before now.
func (b Backoff) lastBefore(due, now time.Time) (time.Time, bool) {
	if !due.Before(now) {
		return time.Time{}, false
	}
	at, wait := due, b.First
	for wait < b.maxWait() {
		if !at.Add(wait).Before(now) {
			return at, true
		}
		at, wait = at.Add(wait), wait*2
	}
	// From here on the waits are all Max: step over the whole ones at once.
	steps := (now.Sub(at) - 1) / b.maxWait()
	return at.Add(steps * b.maxWait()), true
}
