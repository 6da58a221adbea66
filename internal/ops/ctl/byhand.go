package ctl

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// RefundMadeByHandResult is what refund-made-by-hand recorded, as POST
// /rentals/{id}/refund-made-by-hand answers it.
type RefundMadeByHandResult = httpapi.RefundMadeByHandResult

// RefundMadeByHand records that one of the rental's refunds owed was paid back by
// hand (command.Handler.RefundMadeByHand): c names it by its provider payment
// (PaymentID; empty for the rental's own payment's), with the amount owed (and
// its currency, where named), the operator's reference and who recorded it; the
// event names "rentalctl:refund-made-by-hand:<time>" as its cause. Its refusals
// (payment.ErrNoRefundOwed, payment.ErrRefundAlreadyRecorded,
// payment.ErrRefundAmountNotOwed, payment.ErrInvalidCommand, rentalview.ErrNotFound)
// change nothing and are returned wrapped. No payment provider is reached.
func (s *Stack) RefundMadeByHand(ctx context.Context, rentalID string, c payment.RecordRefundMadeByHand) (RefundMadeByHandResult, error) {
	store, err := s.store()
	if err != nil {
		return RefundMadeByHandResult{}, err
	}
	meta := command.Meta{CausationID: "rentalctl:refund-made-by-hand:" + time.Now().UTC().Format(time.RFC3339Nano)}
	res, err := command.New(store).RefundMadeByHand(ctx, rentalID, c, meta)
	if err != nil {
		return RefundMadeByHandResult{}, fmt.Errorf("refund made by hand of %s (Events table %s): %w", rentalID, s.eventsTable(), err)
	}
	return RefundMadeByHandResult{RentalID: rentalID, PaymentReference: res.Payment.Reference, PaymentID: res.PaymentID,
		Amount: res.Amount, Currency: res.Currency, Reference: c.OperatorReference, RecordedBy: c.RecordedBy,
		RecordedAt: res.Recorded.RecordedAt.UTC(), Refund: string(res.Refund)}, nil
}
