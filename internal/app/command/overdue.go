package command

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// WithRentalPeriod sets how long an approved rental lasts before its return is
// overdue (rental.DefaultPeriod by default; a period that is not positive keeps
// it). It must be the period the return deadlines are opened with.
func WithRentalPeriod(d time.Duration) Option {
	return func(h *Handler) {
		if d > 0 {
			h.rentalPeriod = d
		}
	}
}

// WithClock sets the clock that says when a bike came back and when a return is
// flagged overdue (time.Now by default).
func WithClock(now func() time.Time) Option { return func(h *Handler) { h.now = now } }

func (h *Handler) clock() time.Time {
	if h.now == nil {
		return time.Now()
	}
	return h.now()
}

func (h *Handler) period() time.Duration {
	if h.rentalPeriod <= 0 {
		return rental.DefaultPeriod
	}
	return h.rentalPeriod
}

// OverdueOutcome is the answer to FlagOverdueReturn.
type OverdueOutcome string

// The outcomes of FlagOverdueReturn.
const (
	OverdueFlagged  OverdueOutcome = "flagged"  // ReturnOverdue was recorded
	OverdueDeclined OverdueOutcome = "declined" // nothing was recorded; Reason says why
)

// OverdueReason says why FlagOverdueReturn was declined.
type OverdueReason string

// The reasons FlagOverdueReturn is declined for.
const (
	OverdueReturned       OverdueReason = "returned"        // the bike came back meanwhile
	OverdueNotCurrent     OverdueReason = "not-current"     // the rental is not the bike's current, approved one
	OverdueAlreadyFlagged OverdueReason = "already-flagged" // ReturnOverdue was recorded before
	OverdueNotDue         OverdueReason = "not-due"         // the rental period has not run out yet
)

// OverdueFlag is what FlagOverdueReturn did.
type OverdueFlag struct {
	Outcome OverdueOutcome `json:"outcome"`
	Reason  OverdueReason  `json:"reason,omitempty"`
}

// FlagOverdueReturn asks rentalID's bike to record that the rental's return is
// overdue (rental.FlagOverdueReturn): due at its approval's recorded time plus the
// rental period (WithRentalPeriod), judged by the handler's clock, not the sender's.
// It is OverdueFlagged when ReturnOverdue was recorded, and OverdueDeclined with a
// reason when the bike was returned meanwhile, the rental is not the bike's current
// approved one, it was flagged before, or it is not due yet. Declining changes
// nothing, so it is safe to send twice, late, and from anywhere. A malformed rental
// id is an error wrapping rental.ErrInvalidCommand; a store that keeps conflicting,
// one matching eventstore.ErrRetriesExhausted.
func (h *Handler) FlagOverdueReturn(ctx context.Context, rentalID string, meta Meta) (OverdueFlag, error) {
	res, err := h.Bike(ctx, rental.FlagOverdueReturn{RentalID: rentalID}, meta)
	declined := func(r OverdueReason) (OverdueFlag, error) {
		return OverdueFlag{Outcome: OverdueDeclined, Reason: r}, nil
	}
	switch {
	case errors.Is(err, rental.ErrRentalReturned):
		return declined(OverdueReturned)
	case errors.Is(err, rental.ErrNotActiveRental), errors.Is(err, rental.ErrBikeNotRegistered):
		return declined(OverdueNotCurrent)
	case errors.Is(err, rental.ErrReturnNotDue):
		return declined(OverdueNotDue)
	case err != nil:
		return OverdueFlag{}, fmt.Errorf("command: flag the return of rental %s overdue: %w", rentalID, err)
	case len(res.Appended) == 0:
		return declined(OverdueAlreadyFlagged)
	}
	return OverdueFlag{Outcome: OverdueFlagged}, nil
}

// flagOverdue decides c on the bike's bounded history (bikestream.History), with
// the approval time of its RequestApproved record there, the handler's rental
// period and its clock in place of whatever the sender put in them.
func (h *Handler) flagOverdue(ctx context.Context, bikeID string, c rental.FlagOverdueReturn, meta Meta) (Result[rental.Bike], error) {
	history, err := h.bikeHistory(ctx, bikeID, c.RentalID)
	if err != nil {
		return Result[rental.Bike]{}, err
	}
	if c.ApprovedAt, err = approvedAt(history, c.RentalID); err != nil {
		return Result[rental.Bike]{}, err
	}
	c.Period, c.At = h.period(), h.clock()
	return runFrom(ctx, h, bikes, rental.StreamID(bikeID), history, rental.Command(c), meta)
}

// approvedAt returns when the approval of rentalID among records was recorded, zero
// when they hold none (the rental was not approved, or is not the bike's: the
// decider declines it then).
func approvedAt(records []eventstore.Record, rentalID string) (time.Time, error) {
	approved := rental.RequestApproved{}.EventType()
	for _, r := range slices.Backward(records) {
		if r.Type != approved {
			continue
		}
		e, err := rental.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: stream %q version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
		}
		if rental.RentalOf(e) == rentalID {
			return r.RecordedAt, nil
		}
	}
	return time.Time{}, nil
}
