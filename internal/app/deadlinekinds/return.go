package deadlinekinds

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Return is the return-due kind's name.
const Return = "return"

// ReturnPrefix starts the key of a return-due row; the rest is the rental id. It is
// the process stuck's: the return due takes the rental's row over when the bike is
// approved (deadline.Kind.Takes), in the payments' lane, so that one write ends the
// one deadline and opens the other (docs/decisions/0020-deadline-kinds.md).
var ReturnPrefix = StuckPrefix

// Flagger sends FlagOverdueReturn to a rental's bike; *command.Handler is one.
type Flagger interface {
	FlagOverdueReturn(ctx context.Context, rentalID string, meta command.Meta) (command.OverdueFlag, error)
}

// ReturnKind is the return due: RequestApproved opens an approved rental's row, due
// back the rental period after the approval was recorded; the bike's return
// (BikeReturned) or the return's being flagged overdue (ReturnOverdue) settles it;
// overdue, FlagOverdueReturn asks the bike to record ReturnOverdue, which it
// declines when the bike came back meanwhile, the rental is not the bike's current
// one, or it is not due by the bike's own clock. Its row is the rental's
// process-stuck row, taken over by the approval and moved into the payments' lane,
// stamped with its due time less the lane's offset.
func ReturnKind(p deadline.Policy, period time.Duration, f Flagger) deadline.Kind {
	if period <= 0 {
		period = rental.DefaultPeriod
	}
	k := deadline.Kind{Name: Return, Prefix: ReturnPrefix, Lane: PaymentLane(p), After: period, Change: returnChange, Valid: ident.Valid, Takes: Stuck}
	if f != nil {
		k.Act = func(ctx context.Context, row deadline.Row, cause string) (deadline.Outcome, string, error) {
			flag, err := f.FlagOverdueReturn(ctx, row.Subject, command.Meta{CausationID: cause})
			switch {
			case err != nil:
				return "", "", err
			case flag.Outcome == command.OverdueFlagged:
				return deadline.Acted, string(flag.Outcome), nil
			}
			return deadline.Declined, string(flag.Reason), nil
		}
	}
	return k
}

// How a return-due row settles.
const (
	SettledReturned = "returned"
	SettledFlagged  = "flagged"
)

// returnChange is the return due's Change: RequestApproved opens, BikeReturned and
// ReturnOverdue settle.
func returnChange(r eventstore.Record) (deadline.Change, bool, error) {
	approved, returned, flagged := rental.RequestApproved{}.EventType(), rental.BikeReturned{}.EventType(), rental.ReturnOverdue{}.EventType()
	if r.Type != approved && r.Type != returned && r.Type != flagged {
		return deadline.Change{}, false, nil
	}
	e, err := rental.DecodeEvent(r.Type, r.Data)
	var c deadline.Change
	if err == nil {
		switch e := e.(type) {
		case rental.RequestApproved:
			c.Subject = e.RentalID
		case rental.BikeReturned:
			c = deadline.Change{Subject: e.RentalID, Settled: true, How: SettledReturned}
		case rental.ReturnOverdue:
			c = deadline.Change{Subject: e.RentalID, Settled: true, How: SettledFlagged}
		}
		if !ident.Valid(c.Subject) {
			err = fmt.Errorf("rental id %q", c.Subject)
		}
	}
	if err != nil {
		return deadline.Change{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	return c, true, nil
}
