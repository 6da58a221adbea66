package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// RefundMadeByHand records, on the payment of rentalID, that an operator paid its
// refund owed back by hand (payment.RecordRefundMadeByHand, run through the
// payments' Runner as Payment runs it: load, decide, append at the version read,
// retry conflicts). No provider is called, so a Handler without one records it. The refusals are payment.Decide's, and change nothing; a rental with no
// payment prepared is told apart: one its bike does not know is
// rentalview.ErrNotFound, one whose payment was never prepared owes no refund
// (payment.ErrNoRefundOwed). Sending it twice is safe: the second is refused with
// payment.ErrRefundAlreadyRecorded.
func (h *Handler) RefundMadeByHand(ctx context.Context, rentalID string, amount int64, operatorReference, recordedBy string, meta Meta) (Result[payment.Payment], error) {
	bikeID, err := rental.BikeIDOf(rentalID)
	if err != nil {
		return Result[payment.Payment]{}, fmt.Errorf("%w: %s", rentalview.ErrNotFound, rentalID)
	}
	c := payment.RecordRefundMadeByHand{Reference: payment.ReferenceFor(rentalID), Amount: amount, OperatorReference: operatorReference, RecordedBy: recordedBy}
	if meta.CorrelationID == "" {
		meta.CorrelationID = rentalID
	}
	res, err := run(ctx, h, payments, payment.StreamID(c.Reference), payment.Command(c), meta) // no provider is asked: a handler without one records it too
	if !errors.Is(err, payment.ErrPaymentNotFound) {
		return res, err
	}
	bike, _, err := h.loadBike(ctx, bikeID, rentalID)
	if err != nil {
		return Result[payment.Payment]{}, err
	}
	if _, known := bike.Rentals[rentalID]; !known {
		return Result[payment.Payment]{}, fmt.Errorf("%w: %s", rentalview.ErrNotFound, rentalID)
	}
	return Result[payment.Payment]{}, fmt.Errorf("%w: rental %s has no payment", payment.ErrNoRefundOwed, rentalID)
}
