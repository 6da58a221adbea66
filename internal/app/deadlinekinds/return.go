package deadlinekinds

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// Return is the return-due kind's name.
const Return = "return"

// ReturnPrefix starts the key of a return-due row; the rest is the rental id. It is
// the process stuck's: the return due takes the rental's row over when the bike is
// approved (deadlines.Kind.Takes), in the payments' lane, so that one write ends the
// one deadline and opens the other (docs/decisions/0020-deadline-kinds.md).
var ReturnPrefix = StuckPrefix

// Flagger sends FlagOverdueReturn to a rental's bike; *command.Handler is one.
type Flagger interface {
	FlagOverdueReturn(ctx context.Context, rentalID string, meta command.Meta) (command.OverdueFlag, error)
}

// ReturnKind is the return due: RequestApproved opens an approved rental's row, due
// back the rental period after the approval was recorded; the bike's return
// (BikeReturned) settles it, and its being flagged overdue (ReturnOverdue) hands it
// over to the operators (OverdueKind); overdue, FlagOverdueReturn asks the bike to record ReturnOverdue, which it
// declines when the bike came back meanwhile, the rental is not the bike's current
// one, or it is not due by the bike's own clock. Its row is the rental's
// process-stuck row, taken over by the approval and moved into the payments' lane,
// stamped with its due time less the lane's offset.
func ReturnKind(p Policy, period time.Duration, f Flagger) deadlines.Kind {
	if period <= 0 {
		period = rental.DefaultPeriod
	}
	k := deadlines.Kind{Name: Return, Prefix: ReturnPrefix, After: period, Changes: ReturnChanges{}, Work: deadlines.Send{}, Valid: ident.Valid, Takes: Stuck}
	if f != nil {
		k.Work = deadlines.Send{Command: FlagOverdueReturn{Flagger: f}}
	}
	return k
}

// FlagOverdueReturn is the return due's command: FlagOverdueReturn, which the bike
// records (Acted) or declines, with its reason as the detail.
type FlagOverdueReturn struct {
	Flagger Flagger
}

// Send implements deadlines.Command.
func (c FlagOverdueReturn) Send(ctx context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
	flag, err := c.Flagger.FlagOverdueReturn(ctx, row.Subject, command.Meta{CausationID: cause})
	switch {
	case err != nil:
		return "", err
	case flag.Outcome == command.OverdueFlagged:
		return deadlines.Acted, nil
	}
	slog.LogAttrs(ctx, slog.LevelInfo, "sweep: overdue return not flagged", slog.String("rentalId", row.Subject), slog.String("reason", string(flag.Reason)))
	return deadlines.Declined, nil
}

// How a return-due row settles.
const SettledReturned = "returned"

// ReturnChanges reads the return due's records: RequestApproved opens,
// BikeReturned settles. ReturnOverdue ends the return due as well, by the overdue
// return's taking its row over (OverdueKind).
type ReturnChanges struct{}

// Change implements deadlines.Changes.
func (ReturnChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	return rentalChange(r, rental.RequestApproved{}.EventType())
}

// rentalChange reads the rental events of the return due and the overdue return:
// opening, which opens a row (RequestApproved, ReturnOverdue), and BikeReturned,
// which settles either.
func rentalChange(r deadlines.Record, opening string) (deadlines.Change, bool, error) {
	if r.Type != opening && r.Type != (rental.BikeReturned{}).EventType() {
		return deadlines.Change{}, false, nil
	}
	e, err := rental.DecodeEvent(r.Type, r.Data)
	var c deadlines.Change
	if err == nil {
		switch e := e.(type) {
		case rental.RequestApproved:
			c.Subject = e.RentalID
		case rental.ReturnOverdue:
			c = deadlines.Change{Subject: e.RentalID, Due: e.DueAt}
			if e.DueAt.IsZero() {
				err = fmt.Errorf("no due time")
			}
		case rental.BikeReturned:
			c = deadlines.Change{Subject: e.RentalID, Settled: true, How: SettledReturned}
		}
		if err == nil && !ident.Valid(c.Subject) {
			err = fmt.Errorf("rental id %q", c.Subject)
		}
	}
	if err != nil {
		return deadlines.Change{}, false, fmt.Errorf("%w: %s version %d: %w", deadlines.ErrCorruptRecord, r.Stream, r.Position, err)
	}
	return c, true, nil
}

// Overdue is the overdue return's name, in the auditor's findings; operators list
// its rows as returns (deadlines.ByHand.ListedAs).
const Overdue = "overdue"

// OverdueKind is the return flagged overdue: ReturnOverdue (the sweep's
// FlagOverdueReturn, recorded by the bike) takes the rental's return-due row over
// (deadlines.Kind.Takes) into a lane of its own, due when the bike was due back (the
// event's DueAt) and so open since the rental period before, as the return due
// was, and the bike's return (BikeReturned) settles it. The bike is late
// and the renter has to be followed up by hand: the kind has no command and no
// sweep reads its lane (deadlines.ByHand), so the flag is sent once, and the row
// is listed as a return (GET /deadlines?kind=return&overdue=true, rentalctl pending
// --kind return --overdue, the console's to-do list) until the bike comes back. A
// replayed approval does not move it back into the swept lane (the return due takes
// only a stuck row over), and a late flag does not bring back a row its return
// settled.
func OverdueKind(period time.Duration) deadlines.Kind {
	if period <= 0 {
		period = rental.DefaultPeriod
	}
	return deadlines.Kind{
		Name: Overdue, Prefix: ReturnPrefix, After: period, Changes: OverdueChanges{}, Valid: ident.Valid,
		Work: deadlines.ByHand{ListedAs: Return}, Takes: Return,
	}
}

// OverdueChanges reads the overdue return's records: ReturnOverdue opens, due at
// its DueAt; BikeReturned settles.
type OverdueChanges struct{}

// Change implements deadlines.Changes.
func (OverdueChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	return rentalChange(r, rental.ReturnOverdue{}.EventType())
}
