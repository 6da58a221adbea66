package payment

import (
	"errors"
	"fmt"
	"slices"
)

// Money taken under a payment's reference on another provider payment than the one
// recorded for it (an event the service records as a mismatch,
// docs/decisions/0012-provider-events-apply-only-to-what-was-recorded.md) goes back
// on the payment that took it. When the provider cannot refund it, or refused it
// for good, the refund is owed, for operators to pay back by hand: a refund owed
// of the payment's, one per provider payment that took money, beside the refund of
// its own late success, listed and settled each on its own
// (docs/decisions/0033-every-debt-is-listed-until-paid-back.md).

// UnexpectedRefundOwed records that the money the provider payment PaymentID, which
// is not the one recorded for the payment, took under its reference must be paid
// back by hand: the provider cannot refund it, or refused it for good for Reason
// (empty for a provider that cannot refund). Amount and Currency are what the
// provider said it took; 0 and "" where it did not say (the generic provider's
// event may leave them out). It opens a refund owed of its own, which
// UnexpectedRefundMadeByHand settles.
type UnexpectedRefundOwed struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	Amount    int64  `json:"amount,omitempty"`
	Currency  string `json:"currency,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// UnexpectedRefundMadeByHand records that the refund owed on the provider payment
// PaymentID (UnexpectedRefundOwed) was paid back by hand, for Amount minor units of
// Currency, under the operator's OperatorReference, as RecordedBy recorded it. It
// settles that refund owed, and no other.
type UnexpectedRefundMadeByHand struct {
	Reference         string `json:"reference"`
	PaymentID         string `json:"paymentId"`
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	OperatorReference string `json:"operatorReference"`
	RecordedBy        string `json:"recordedBy"`
}

// EventType returns "UnexpectedRefundOwed".
func (UnexpectedRefundOwed) EventType() string { return "UnexpectedRefundOwed" }

// EventType returns "UnexpectedRefundMadeByHand".
func (UnexpectedRefundMadeByHand) EventType() string { return "UnexpectedRefundMadeByHand" }

// UnexpectedRefund is where the refund owed on one provider payment that is not the
// one recorded stands (Payment.Unexpected).
type UnexpectedRefund struct {
	// PaymentID is the provider payment that took the money.
	PaymentID string
	// Amount and Currency are what it took, as the provider said (0 and "" where it
	// did not), and once the refund is made by hand, what was paid back.
	Amount   int64
	Currency string
	// Reason is why the provider did not refund it (its refusal; empty for a
	// provider that cannot refund).
	Reason string
	// Refund is RefundStatusOwed, or RefundStatusMadeByHand once recorded so.
	Refund RefundStatus
}

// OweUnexpectedRefund records that the money a provider payment that is not the one
// recorded (PaymentID) took under the payment's reference is owed back by hand
// (UnexpectedRefundOwed), with what the provider said it took (Amount and Currency,
// each optional) and why it did not refund it (Reason, checked as OweRefund's).
// Sent once the provider could not refund it (command.MismatchRefundOwed). It is
// recorded once per provider payment: sent again, or for a provider payment whose
// refund is owed or made already, it decides nothing, so a refund made by hand is
// never owed again.
type OweUnexpectedRefund struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	Amount    int64  `json:"amount,omitempty"`
	Currency  string `json:"currency,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

func (OweUnexpectedRefund) isCommand() {}

// UnexpectedRefund returns the refund owed on the provider payment paymentID, which
// is not the one recorded; ok is false when none was ever owed on it.
func (s Payment) UnexpectedRefund(paymentID string) (r UnexpectedRefund, ok bool) {
	i := slices.IndexFunc(s.Unexpected, func(r UnexpectedRefund) bool { return r.PaymentID == paymentID })
	if i < 0 {
		return UnexpectedRefund{}, false
	}
	return s.Unexpected[i], true
}

// evolveUnexpected is Evolve for the events of the refunds owed on other provider
// payments; the slice is copied, never changed in place, so that earlier states
// stay as they were.
func evolveUnexpected(s Payment, e Event) Payment {
	switch e := e.(type) {
	case UnexpectedRefundOwed:
		if _, ok := s.UnexpectedRefund(e.PaymentID); !ok {
			s.Unexpected = append(slices.Clip(s.Unexpected), UnexpectedRefund{PaymentID: e.PaymentID, Amount: e.Amount, Currency: e.Currency,
				Reason: e.Reason, Refund: RefundStatusOwed})
		}
	case UnexpectedRefundMadeByHand:
		i := slices.IndexFunc(s.Unexpected, func(r UnexpectedRefund) bool { return r.PaymentID == e.PaymentID })
		if i >= 0 && s.Unexpected[i].Refund == RefundStatusOwed {
			s.Unexpected = slices.Clone(s.Unexpected)
			s.Unexpected[i].Refund, s.Unexpected[i].Amount, s.Unexpected[i].Currency = RefundStatusMadeByHand, e.Amount, e.Currency
		}
	}
	return s
}

// decideOweUnexpected is what OweUnexpectedRefund decides on a payment that exists.
func decideOweUnexpected(s Payment, c OweUnexpectedRefund) ([]Event, error) {
	if c.PaymentID == s.PaymentID {
		return nil, fmt.Errorf("payment: %w: provider payment %s is the one recorded: its refund is the payment's own (OweRefund)", ErrInvalidCommand, c.PaymentID)
	}
	if _, ok := s.UnexpectedRefund(c.PaymentID); ok {
		return nil, nil // owed already, or made: once per provider payment
	}
	return []Event{UnexpectedRefundOwed{Reference: s.Reference, PaymentID: c.PaymentID, Amount: c.Amount, Currency: c.Currency, Reason: c.Reason}}, nil
}

// decideUnexpectedRefundMadeByHand is what RecordRefundMadeByHand decides for a
// provider payment that is not the one recorded. The amount and currency must be
// those the provider said it took; where it did not say, the operator's are
// recorded, and the currency must then be named.
func decideUnexpectedRefundMadeByHand(s Payment, c RecordRefundMadeByHand) ([]Event, error) {
	r, ok := s.UnexpectedRefund(c.PaymentID)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: nothing is owed on provider payment %s", ErrNoRefundOwed, c.PaymentID)
	case r.Refund != RefundStatusOwed:
		return nil, fmt.Errorf("%w: the refund owed on provider payment %s", ErrRefundAlreadyRecorded, c.PaymentID)
	}
	amount, currency := r.Amount, r.Currency
	if amount == 0 {
		amount = c.Amount // the provider did not say: the operator's word is recorded
	}
	if currency == "" {
		currency = c.Currency
	}
	switch {
	case c.Amount != amount || (c.Currency != "" && c.Currency != currency):
		return nil, fmt.Errorf("%w: %s is owed on provider payment %s, not %s", ErrRefundAmountNotOwed, owedWords(r), c.PaymentID, amountWords(c.Amount, c.Currency))
	case currency == "":
		return nil, fmt.Errorf("%w: provider payment %s took %d in a currency it did not name: name the currency paid back", ErrRefundAmountNotOwed, c.PaymentID, amount)
	}
	return []Event{UnexpectedRefundMadeByHand{Reference: s.Reference, PaymentID: c.PaymentID, Amount: amount, Currency: currency,
		OperatorReference: c.OperatorReference, RecordedBy: c.RecordedBy}}, nil
}

// owedWords says what r owes, as a refusal says it.
func owedWords(r UnexpectedRefund) string {
	if r.Amount == 0 {
		return "an amount the provider did not name"
	}
	return amountWords(r.Amount, r.Currency)
}

// amountWords writes an amount and its currency, if named.
func amountWords(amount int64, currency string) string {
	if currency == "" {
		return fmt.Sprint(amount)
	}
	return fmt.Sprintf("%d %s", amount, currency)
}

// validateOweUnexpected returns why c is malformed, or nil.
func validateOweUnexpected(c OweUnexpectedRefund) error {
	if err := checkProviderPaymentID(c.PaymentID); err != nil {
		return err
	}
	if err := checkStatedMoney(c.Amount, c.Currency); err != nil {
		return err
	}
	if c.Reason != "" {
		return CheckText("reason", c.Reason, MaxRefundRefusalLength)
	}
	return nil
}

// checkProviderPaymentID returns why id cannot be a provider's payment id, or nil:
// 1 to MaxEventIDLength printable characters (CheckText), as every provider's are.
func checkProviderPaymentID(id string) error {
	if id == "" {
		return errors.New("paymentId is required")
	}
	return CheckText("paymentId", id, MaxEventIDLength)
}

// RefundOwedChange is what an event of a payment's stream says of one of its
// refunds owed: it opens it, or settles it (Settled). PaymentID names which: empty
// for the refund of the payment's own late success (RefundOwed), the provider
// payment's id for the refund owed on another provider payment
// (UnexpectedRefundOwed). A change that opens one says what it owes (Owed).
type RefundOwedChange struct {
	Reference string
	PaymentID string
	Settled   bool
	Owed      Owed
}

// Owed is what a refund owed is for, as the event that opened it says: the
// provider payment the money was taken on (the one recorded, for the payment's own
// refund), what the provider said it took (0 and "" where it did not say), and why
// no provider refunded it (its refusal; empty for a provider that cannot refund).
type Owed struct {
	PaymentID string
	Amount    int64
	Currency  string
	Reason    string
}

// RefundOwedChangeOf returns what e says of a refund owed of its payment, and
// whether it says anything: RefundOwed opens the payment's own, and the events
// that settle a refund (SettlesRefund: the provider's PaymentRefunded, an
// operator's RefundMadeByHand) settle it; UnexpectedRefundOwed opens the one on
// its provider payment, and UnexpectedRefundMadeByHand settles that one. It is
// the one home of what opens and settles a refund owed: the refund kind of the
// to-do list, the projector's stream filter (RefundOwedTypes), the auditor and
// rentalctl refunds read it.
func RefundOwedChangeOf(e Event) (RefundOwedChange, bool) {
	switch e := e.(type) {
	case RefundOwed:
		return RefundOwedChange{Reference: e.Reference, Owed: Owed{PaymentID: e.PaymentID, Amount: e.Amount, Currency: e.Currency, Reason: e.Reason}}, true
	case UnexpectedRefundOwed:
		return RefundOwedChange{Reference: e.Reference, PaymentID: e.PaymentID,
			Owed: Owed{PaymentID: e.PaymentID, Amount: e.Amount, Currency: e.Currency, Reason: e.Reason}}, true
	case UnexpectedRefundMadeByHand:
		return RefundOwedChange{Reference: e.Reference, PaymentID: e.PaymentID, Settled: true}, true
	}
	if SettlesRefund(e.EventType()) {
		return RefundOwedChange{Reference: ReferenceOf(e), Settled: true}, true
	}
	return RefundOwedChange{}, false
}

// RefundOwedTypes returns the types of the events RefundOwedChangeOf reads, in a
// new slice.
func RefundOwedTypes() []string {
	return append([]string{RefundOwed{}.EventType(), UnexpectedRefundOwed{}.EventType(), UnexpectedRefundMadeByHand{}.EventType()},
		refundSettlements...)
}
