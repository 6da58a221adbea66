package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// RefundByHand is what a refund made by hand recorded (Handler.RefundMadeByHand).
type RefundByHand struct {
	// Payment is the payment after it.
	Payment payment.Payment
	// PaymentID is the provider payment the refund was owed on: the recorded one
	// for the payment's own refund, another for a refund owed on it.
	PaymentID string
	// Amount and Currency are what was recorded paid back.
	Amount   int64
	Currency string
	// Refund is where that refund stands now: payment.RefundStatusMadeByHand.
	Refund payment.RefundStatus
	// Recorded is the event recorded.
	Recorded eventstore.Record
}

// RefundMadeByHand records, on the payment of rentalID, that an operator paid one
// of its refunds owed back by hand (payment.RecordRefundMadeByHand: c names the
// refund by its provider payment, PaymentID, empty for the payment's own; its
// Reference is the rental's payment's, set here), run through the payments'
// Runner as Payment runs it: load, decide, append at the version read, retry
// conflicts, so that of two records of one refund at once one is recorded and the
// other refused. No provider is called, so a Handler without one records it. The
// refusals are payment.Decide's, and change nothing; a rental with no payment
// prepared is told apart: one its bike does not know is rentalview.ErrNotFound,
// one whose payment was never prepared owes no refund (payment.ErrNoRefundOwed).
// Sending it twice is safe: the second is refused with
// payment.ErrRefundAlreadyRecorded.
func (h *Handler) RefundMadeByHand(ctx context.Context, rentalID string, c payment.RecordRefundMadeByHand, meta Meta) (RefundByHand, error) {
	bikeID, err := rental.BikeIDOf(rentalID)
	if err != nil {
		return RefundByHand{}, fmt.Errorf("%w: %s", rentalview.ErrNotFound, rentalID)
	}
	c.Reference = payment.ReferenceFor(rentalID)
	if meta.CorrelationID == "" {
		meta.CorrelationID = rentalID
	}
	res, err := run(ctx, h, payments, payment.StreamID(c.Reference), payment.Command(c), meta) // no provider is asked: a handler without one records it too
	if err == nil {
		return madeByHand(res)
	}
	if !errors.Is(err, payment.ErrPaymentNotFound) {
		return RefundByHand{}, err
	}
	bike, _, err := h.loadBike(ctx, bikeID, rentalID)
	if err != nil {
		return RefundByHand{}, err
	}
	if _, known := bike.Rentals[rentalID]; !known {
		return RefundByHand{}, fmt.Errorf("%w: %s", rentalview.ErrNotFound, rentalID)
	}
	return RefundByHand{}, fmt.Errorf("%w: rental %s has no payment", payment.ErrNoRefundOwed, rentalID)
}

// madeByHand reads what a refund made by hand recorded from its one event.
func madeByHand(res Result[payment.Payment]) (RefundByHand, error) {
	if len(res.Appended) != 1 {
		return RefundByHand{}, fmt.Errorf("command: a refund made by hand appended %d events", len(res.Appended))
	}
	r := res.Appended[0]
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return RefundByHand{}, err
	}
	out := RefundByHand{Payment: res.State, Recorded: r}
	switch e := e.(type) {
	case payment.RefundMadeByHand:
		out.PaymentID, out.Amount, out.Currency, out.Refund = e.PaymentID, e.Amount, e.Currency, res.State.Refund
	case payment.UnexpectedRefundMadeByHand:
		u, _ := res.State.UnexpectedRefund(e.PaymentID)
		out.PaymentID, out.Amount, out.Currency, out.Refund = e.PaymentID, e.Amount, e.Currency, u.Refund
	default:
		return RefundByHand{}, fmt.Errorf("command: a refund made by hand appended %s", r.Type)
	}
	return out, nil
}
