package deadlinekinds

import (
	"fmt"
	"time"
)

// Policy is the one rule of when a payment is overdue, and of when a rental is
// stuck: the sweep, a payment's own one-time schedule, the pending list and the CLI
// all ask it, and it is configured once, from PAYMENT_TIMEOUT and STUCK_GRACE
// (wiring.DeadlinePolicy).
type Policy struct {
	// Timeout is how long a payment may stay outstanding (DefaultTimeout if zero).
	Timeout time.Duration
	// Grace is how long past the timeout a rental's process may stay open before it
	// is stuck (DefaultGrace if zero).
	Grace time.Duration
}

// NewPolicy returns the policy with timeout and grace, which must be positive.
func NewPolicy(timeout, grace time.Duration) (Policy, error) {
	if timeout <= 0 || grace <= 0 {
		return Policy{}, fmt.Errorf("deadlinekinds: timeout %s and grace %s: want positive durations", timeout, grace)
	}
	return Policy{Timeout: timeout, Grace: grace}, nil
}

// PaymentTimeout returns how long a payment may stay outstanding.
func (p Policy) PaymentTimeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultTimeout
	}
	return p.Timeout
}

// StuckGrace returns how long past the timeout a process may stay open.
func (p Policy) StuckGrace() time.Duration {
	if p.Grace <= 0 {
		return DefaultGrace
	}
	return p.Grace
}

// Deadline returns when a payment prepared at preparedAt falls due.
func (p Policy) Deadline(preparedAt time.Time) time.Time { return preparedAt.Add(p.PaymentTimeout()) }

// Cutoff returns the time before which a payment prepared is overdue at now.
func (p Policy) Cutoff(now time.Time) time.Time { return now.Add(-p.PaymentTimeout()) }

// Overdue reports whether a payment prepared at preparedAt is overdue at now: it was
// prepared before the cutoff, so at its deadline exactly it is not yet.
func (p Policy) Overdue(preparedAt, now time.Time) bool { return preparedAt.Before(p.Cutoff(now)) }

// StuckCutoff returns the time before which a rental whose process is still open
// at now is stuck.
func (p Policy) StuckCutoff(now time.Time) time.Time { return p.Cutoff(now).Add(-p.StuckGrace()) }

// Defaults of the policy.
const (
	// DefaultTimeout is how long a payment may stay outstanding.
	DefaultTimeout = 15 * time.Minute
	// DefaultGrace is how long past the payment timeout a rental's process may stay
	// open before it counts as stuck: more than a sweep interval and the process's
	// reaction to the cancellation, with room to spare.
	DefaultGrace = 10 * time.Minute
)
