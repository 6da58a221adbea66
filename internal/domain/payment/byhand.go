package payment

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// A refund made by hand: money a provider that cannot refund took for a rental that
// did not get its bike (RefundOwed) goes back by other means (a bank transfer,
// say), and an operator records it (docs/decisions/0027-a-refund-made-by-hand.md).

// Refusals of RecordRefundMadeByHand, besides ErrPaymentNotFound and
// ErrInvalidCommand. Each changes nothing.
var (
	// ErrNoRefundOwed: the payment owes no refund to be made by hand: no money was
	// taken after it was given up on, or the provider accepted a refund of it and
	// is making it.
	ErrNoRefundOwed = errors.New("no refund is owed to be made by hand for this payment")
	// ErrRefundAlreadyRecorded: the refund owed is recorded as made already, by
	// hand or by the provider.
	ErrRefundAlreadyRecorded = errors.New("the refund of this payment is recorded as made already")
	// ErrRefundAmountNotOwed: the amount is not the one owed, which is the amount
	// the provider reported taken (Payment.Charge). It is wrapped with both
	// amounts, the one owed with its currency.
	ErrRefundAmountNotOwed = errors.New("the amount is not the one owed")
)

// RefundStatusMadeByHand is the refund status once an operator recorded the refund
// owed as made by hand (RefundMadeByHand).
const RefundStatusMadeByHand RefundStatus = "refunded-by-hand"

// RefundStatusTwice is the refund status once the provider confirmed a refund
// (PaymentRefunded) of money an operator had already recorded as paid back by
// hand: the renter was paid back twice, and operators must ask for one of the two
// back. The auditor reports it too (refund-by-hand-unfounded).
const RefundStatusTwice RefundStatus = "refunded-twice"

// ForHands reports whether a refund at status r is for an operator to make by
// hand and record (RecordRefundMadeByHand can succeed): it is owed, and no
// provider is making it or has made it.
func (r RefundStatus) ForHands() bool { return r == RefundStatusOwed }

// RefundStatuses returns every refund status a payment can have, none first.
func RefundStatuses() []RefundStatus {
	return []RefundStatus{RefundStatusNone, RefundStatusRequested, RefundStatusOwed, RefundStatusDone, RefundStatusMadeByHand, RefundStatusTwice}
}

// Limits of what an operator records with a refund made by hand.
const (
	// MaxOperatorReferenceLength bounds OperatorReference, in characters.
	MaxOperatorReferenceLength = 100
	// MaxRecordedByLength bounds RecordedBy, in characters: an operator's identity
	// (a token's subject) is at most that.
	MaxRecordedByLength = 255
)

// RecordRefundMadeByHand records that an operator paid a refund owed back by hand:
// Amount, in minor units of the currency owed, must be the amount owed (what the
// provider reported taken, Payment.Charge, in its currency);
// OperatorReference is the operator's own reference of the refund (a bank
// transfer's id, say), and RecordedBy who recorded it (on the API, the token's
// subject, never the body). Refused, changing nothing, with ErrNoRefundOwed unless
// a refund is owed (RefundOwed), ErrRefundAlreadyRecorded once one is made (by
// hand or by the provider: a second request is refused, not replayed), and
// ErrRefundAmountNotOwed for another amount, or another Currency where one is
// named.
//
// PaymentID names the provider payment the refund is owed on: empty, or the one
// recorded, for the payment's own refund (RefundOwed); another one for the refund
// owed on it (UnexpectedRefundOwed), which it settles alone
// (decideUnexpectedRefundMadeByHand), with the same refusals.
type RecordRefundMadeByHand struct {
	Reference         string `json:"reference"`
	PaymentID         string `json:"paymentId,omitempty"`
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency,omitempty"`
	OperatorReference string `json:"operatorReference"`
	RecordedBy        string `json:"recordedBy"`
}

func (RecordRefundMadeByHand) isCommand() {}

// RefundMadeByHand records that the refund owed of the payment was paid back by
// hand, for Amount minor units of Currency (what is owed: what the provider
// reported taken), under the operator's
// OperatorReference, as RecordedBy recorded it. It settles the refund owed.
type RefundMadeByHand struct {
	Reference         string `json:"reference"`
	PaymentID         string `json:"paymentId"`
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	OperatorReference string `json:"operatorReference"`
	RecordedBy        string `json:"recordedBy"`
}

// EventType returns "RefundMadeByHand".
func (RefundMadeByHand) EventType() string { return "RefundMadeByHand" }

// refundSettlements are the events that settle a refund owed: the provider's word
// that it refunded, or an operator's that it was paid back by hand.
var refundSettlements = []string{PaymentRefunded{}.EventType(), RefundMadeByHand{}.EventType()}

// SettlesRefund reports whether an event of eventType settles a refund owed (the
// provider refunded the payment, or an operator recorded the refund made by hand).
func SettlesRefund(eventType string) bool {
	for _, t := range refundSettlements {
		if t == eventType {
			return true
		}
	}
	return false
}

// RefundSettlementTypes returns the types of the events that settle a refund owed,
// in a new slice.
func RefundSettlementTypes() []string { return append([]string(nil), refundSettlements...) }

// Refunded reports whether the money of a late success is recorded as gone back:
// the provider confirmed its refund, or an operator recorded it made by hand, or
// both.
func (s Payment) Refunded() bool {
	return s.Refund == RefundStatusDone || s.Refund == RefundStatusMadeByHand || s.Refund == RefundStatusTwice
}

// decideRefundMadeByHand is what RecordRefundMadeByHand decides on a payment that
// exists.
func decideRefundMadeByHand(s Payment, c RecordRefundMadeByHand) ([]Event, error) {
	switch {
	case s.Refunded():
		return nil, ErrRefundAlreadyRecorded
	case !s.Refund.ForHands():
		return nil, ErrNoRefundOwed
	}
	owed := s.Charge() // what the provider took, whatever the payment was prepared for
	if c.Amount != owed.Amount || (c.Currency != "" && c.Currency != owed.Currency) {
		return nil, fmt.Errorf("%w: %s is owed, not %s", ErrRefundAmountNotOwed, owed, amountWords(c.Amount, c.Currency))
	}
	return []Event{RefundMadeByHand{Reference: s.Reference, PaymentID: s.PaymentID, Amount: owed.Amount, Currency: owed.Currency,
		OperatorReference: c.OperatorReference, RecordedBy: c.RecordedBy}}, nil
}

// validateRefundMadeByHand returns why c is malformed, or nil.
func validateRefundMadeByHand(c RecordRefundMadeByHand) error {
	if err := CheckAmount(c.Amount); err != nil {
		return err
	}
	if c.PaymentID != "" {
		if err := checkProviderPaymentID(c.PaymentID); err != nil {
			return err
		}
	}
	if err := checkStatedMoney(c.Amount, c.Currency); err != nil {
		return err
	}
	if err := CheckText("operatorReference", c.OperatorReference, MaxOperatorReferenceLength); err != nil {
		return err
	}
	return CheckText("recordedBy", c.RecordedBy, MaxRecordedByLength)
}

// CheckText returns why s cannot be the text a person records under name, or nil:
// it must be valid UTF-8, 1 to max characters, printable (no control or format
// characters, no line breaks), and neither begin nor end with a space. It is data:
// nothing reads markup in it.
func CheckText(name, s string, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return fmt.Errorf("%s is required (1 to %d characters)", name, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s must be valid UTF-8", name)
	case n > max:
		return fmt.Errorf("%s must be at most %d characters, not %d", name, max, n)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%s must be printable characters (%U is not)", name, r)
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return fmt.Errorf("%s must not begin or end with a space", name)
	}
	return nil
}
