package ctl

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
)

// View is a rental's status and audit trail, as GET /rentals/{id} answers it.
type View = rentalview.View

// Entry is one event of a View's audit trail.
type Entry = rentalview.Entry

// History returns the rental's view, without the client secret, which is the
// renter's alone. A rental that was never requested is rentalview.ErrNotFound.
func (s *Stack) History(ctx context.Context, rentalID string) (View, error) {
	store, err := s.store()
	if err != nil {
		return View{}, err
	}
	view, err := rentalview.Load(ctx, store, rentalID)
	if err != nil {
		return View{}, fmt.Errorf("history (Events table %s): %w", s.eventsTable(), err)
	}
	return view.WithoutSecrets(), nil
}

// Outcome is what CancelRentalPayment answered.
type Outcome = process.Outcome

// The outcomes of CancelRentalPayment: answers, not failures.
const (
	OutcomeCancelled   = process.OutcomeCancelled
	OutcomeDeclined    = process.OutcomeDeclined
	OutcomeNothingToDo = process.OutcomeNothingToDo
)

// CancelResult is what cancel answers, as POST /rentals/{id}/cancel-payment does.
type CancelResult struct {
	RentalID string  `json:"rentalId"`
	Outcome  Outcome `json:"outcome"`
}

// Cancel sends CancelRentalPayment for the rental, as the sweep and the API do;
// the events it causes name "rentalctl:cancel:<time>" as their cause. Sending it
// twice is safe.
func (s *Stack) Cancel(ctx context.Context, rentalID string) (CancelResult, error) {
	store, err := s.store()
	if err != nil {
		return CancelResult{}, err
	}
	process, err := s.process(ctx, store)
	if err != nil {
		return CancelResult{}, err
	}
	meta := command.Meta{CausationID: "rentalctl:cancel:" + time.Now().UTC().Format(time.RFC3339Nano)}
	outcome, err := process.CancelRentalPayment(ctx, rentalID, meta)
	if err != nil {
		return CancelResult{}, fmt.Errorf("cancel %s (Events table %s): %w", rentalID, s.eventsTable(), err)
	}
	return CancelResult{RentalID: rentalID, Outcome: outcome}, nil
}
