package deadlinekinds

import (
	"fmt"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// PaymentChange is what a record of the Events table means for a payment's deadline:
// the payment was prepared (Settled is empty), or it settled, and how ("confirmed",
// "rejected" or "cancelled").
type PaymentChange struct {
	Reference string
	Settled   string
}

// PaymentChangeOf decodes the record of a payment event that starts or ends a
// payment's wait; ok is false for every other record. A record of one of those types
// that does not decode is an error wrapping deadlines.ErrCorruptRecord.
func PaymentChangeOf(r deadlines.Record) (c PaymentChange, ok bool, err error) {
	if r.Type != (payment.PaymentPrepared{}).EventType() && !payment.Settles(r.Type) {
		return PaymentChange{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return PaymentChange{}, false, fmt.Errorf("%w: %s version %d: %w", deadlines.ErrCorruptRecord, r.Stream, r.Position, err)
	}
	switch e := e.(type) {
	case payment.PaymentPrepared:
		return PaymentChange{Reference: e.Reference}, true, nil
	case payment.PaymentConfirmed:
		return PaymentChange{Reference: e.Reference, Settled: string(payment.StatusConfirmed)}, true, nil
	case payment.PaymentRejected:
		return PaymentChange{Reference: e.Reference, Settled: string(payment.StatusRejected)}, true, nil
	case payment.PaymentCancelled:
		return PaymentChange{Reference: e.Reference, Settled: string(payment.StatusCancelled)}, true, nil
	}
	return PaymentChange{}, false, nil
}

// ProcessChange is what a record means for a rental's open process: it opened (the
// bike was requested) or it completed.
type ProcessChange struct {
	RentalID  string
	Completed bool
	// Approved marks a completion whose outcome is approved.
	Approved bool
}

// ProcessChangeOf decodes a record that opens or completes a rental's process; ok is
// false for every other record. A record of one of those types that does not decode,
// or names no valid rental, is an error wrapping deadlines.ErrCorruptRecord.
func ProcessChangeOf(r deadlines.Record) (c ProcessChange, ok bool, err error) {
	var id string
	switch r.Type {
	case rental.BikeRequested{}.EventType():
		var e rental.Event
		if e, err = rental.DecodeEvent(r.Type, r.Data); err == nil {
			id = e.(rental.BikeRequested).RentalID
		}
	case rentalpayment.TypeCompleted:
		var e rentalpayment.Event
		if e, err = rentalpayment.DecodeEvent(r.Type, r.Data); err == nil {
			done := e.(rentalpayment.RentalPaymentProcessCompleted)
			id, c.Completed, c.Approved = done.RentalID, true, done.Outcome == rentalpayment.CompletedApproved
		}
	default:
		return ProcessChange{}, false, nil
	}
	if err == nil && !ident.Valid(id) {
		err = fmt.Errorf("rental id %q", id)
	}
	if err != nil {
		return ProcessChange{}, false, fmt.Errorf("%w: %s version %d: %w", deadlines.ErrCorruptRecord, r.Stream, r.Position, err)
	}
	c.RentalID = id
	return c, true, nil
}
