package ctl

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
)

// RefundMadeByHandResult is what refund-made-by-hand recorded, as POST
// /rentals/{id}/refund-made-by-hand answers it.
type RefundMadeByHandResult struct {
	RentalID         string    `json:"rentalId"`
	PaymentReference string    `json:"paymentReference"`
	Amount           int64     `json:"amount"`
	Currency         string    `json:"currency"`
	Reference        string    `json:"reference"`
	RecordedBy       string    `json:"recordedBy"`
	RecordedAt       time.Time `json:"recordedAt"`
	Refund           string    `json:"refund"`
}

// RefundMadeByHand records that the rental's refund owed was paid back by hand, for
// amount (the amount owed), under the operator's reference, as recordedBy recorded
// it (command.Handler.RefundMadeByHand); the event names
// "rentalctl:refund-made-by-hand:<time>" as its cause. Its refusals
// (payment.ErrNoRefundOwed, payment.ErrRefundAlreadyRecorded,
// payment.ErrRefundAmountNotOwed, payment.ErrInvalidCommand, rentalview.ErrNotFound)
// change nothing and are returned wrapped. No payment provider is reached.
func (s *Stack) RefundMadeByHand(ctx context.Context, rentalID string, amount int64, reference, recordedBy string) (RefundMadeByHandResult, error) {
	store, err := s.store()
	if err != nil {
		return RefundMadeByHandResult{}, err
	}
	meta := command.Meta{CausationID: "rentalctl:refund-made-by-hand:" + time.Now().UTC().Format(time.RFC3339Nano)}
	res, err := command.New(store).RefundMadeByHand(ctx, rentalID, amount, reference, recordedBy, meta)
	if err != nil {
		return RefundMadeByHandResult{}, fmt.Errorf("refund made by hand of %s (Events table %s): %w", rentalID, s.eventsTable(), err)
	}
	out := RefundMadeByHandResult{RentalID: rentalID, PaymentReference: res.State.Reference, Amount: amount, Currency: res.State.Currency,
		Reference: reference, RecordedBy: recordedBy, Refund: string(res.State.Refund)}
	if len(res.Appended) > 0 {
		out.RecordedAt = res.Appended[0].RecordedAt.UTC()
	}
	return out, nil
}
