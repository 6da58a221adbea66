package deadline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// SweepOne gives up on one payment whose own deadline has come (precise deadlines:
// its one-time schedule fired); now is the clock. It reads the payment's row and
// sends CancelRentalPayment only if the payment is still outstanding: a schedule that
// fires after settlement, or twice, finds nothing. One that fires early (Scheduler
// keeps time to the minute) waits for the deadline if ctx leaves time for it, and
// otherwise fails with ErrNotYetDue so that Scheduler retries. rentalID must be the
// rental the reference belongs to.
func (s *Sweeper) SweepOne(ctx context.Context, rentalID, reference string, now time.Time) (Summary, error) {
	logger := s.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sum := Summary{Now: now.UTC(), Cutoff: s.Policy.Cutoff(now).UTC(), RentalID: rentalID}
	if owner, err := payment.RentalIDFor(reference); err != nil || owner != rentalID {
		return sum, fmt.Errorf("deadline: payment %q does not belong to rental %q", reference, rentalID)
	}
	row, ok, err := s.Index.Get(ctx, reference)
	sum.ItemsRead = 1
	if err != nil {
		s.report(ctx, logger, sum, err)
		return sum, err
	}
	if ok && !s.Policy.Overdue(row.PreparedAt, now) {
		// Early: Scheduler fires with a minute's precision, possibly before the
		// deadline. Wait for it if the invocation has the time, else fail, so that
		// Scheduler retries later (and the periodic sweep is there regardless).
		due := s.Policy.Deadline(row.PreparedAt).Add(time.Millisecond)
		if err := waitUntil(ctx, now, due, s.margin()); err != nil {
			s.report(ctx, logger, sum, err)
			return sum, err
		}
		now = due
		sum.Now, sum.Cutoff = now.UTC(), s.Policy.Cutoff(now).UTC()
	}
	if ok {
		sum.Found = 1
		sum.OldestOverdue = sum.Cutoff.Sub(row.PreparedAt)
		outcome, err := s.Canceller.CancelRentalPayment(ctx, rentalID, command.Meta{CausationID: "deadline:" + reference})
		switch {
		case err != nil:
			sum.Failed = 1
			s.report(ctx, logger, sum, err)
			return sum, fmt.Errorf("deadline: cancel rental %s: %w", rentalID, err)
		case outcome == process.OutcomeCancelled:
			sum.Cancelled = 1
		case outcome == process.OutcomeDeclined:
			sum.Declined = 1
		default:
			sum.NothingToDo = 1
		}
	}
	s.report(ctx, logger, sum, nil)
	return sum, nil
}

// ErrNotYetDue reports a payment's deadline that is further away than the invocation
// can wait.
var ErrNotYetDue = errors.New("deadline: payment not yet due")

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
		return fmt.Errorf("deadline: waiting for a payment's deadline: %w", context.Cause(ctx))
	}
}
