package payment

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var (
	oweOther    = OweUnexpectedRefund{Reference: ref, PaymentID: "pi_other", Amount: 1500, Currency: "EUR", Reason: "refused for good"}
	owedOther   = UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_other", Amount: 1500, Currency: "EUR", Reason: "refused for good"}
	madeOther   = RecordRefundMadeByHand{Reference: ref, PaymentID: "pi_other", Amount: 1500, OperatorReference: "bank-2", RecordedBy: "op-2"}
	otherByHand = UnexpectedRefundMadeByHand{Reference: ref, PaymentID: "pi_other", Amount: 1500, Currency: "EUR", OperatorReference: "bank-2", RecordedBy: "op-2"}
)

// TestARefundOwedOnAnotherPaymentIsOwedOncePerPayment: given a payment's events,
// when the money another provider payment took under its reference is owed back,
// then UnexpectedRefundOwed is decided once per provider payment, whatever the
// payment's own state, and never again once owed or made by hand; the recorded
// payment's own id, or malformed facts, are refused.
func TestARefundOwedOnAnotherPaymentIsOwedOncePerPayment(t *testing.T) {
	with := func(f func(*OweUnexpectedRefund)) OweUnexpectedRefund { c := oweOther; f(&c); return c }
	tests := []struct {
		name  string
		given []Event
		when  Command
		then  []Event
		err   error
	}{
		{"on a payment awaiting its renter", []Event{prepared}, oweOther, []Event{owedOther}, nil},
		{"on a confirmed payment", []Event{prepared, confirmed}, oweOther, []Event{owedOther}, nil},
		{"beside the payment's own refund owed", []Event{prepared, cancelled, late, owed}, oweOther, []Event{owedOther}, nil},
		{"without the amount and currency the provider left unsaid", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.Amount, c.Currency, c.Reason = 0, "", "" }),
			[]Event{UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_other"}}, nil},
		{"a second provider payment owes a second refund", []Event{prepared, owedOther}, with(func(c *OweUnexpectedRefund) { c.PaymentID = "pi_third" }),
			[]Event{UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_third", Amount: 1500, Currency: "EUR", Reason: "refused for good"}}, nil},
		{"owed already: once", []Event{prepared, owedOther}, oweOther, nil, nil},
		{"owed already, reported again for another amount: once", []Event{prepared, owedOther}, with(func(c *OweUnexpectedRefund) { c.Amount = 9 }), nil, nil},
		{"made by hand: never owed again", []Event{prepared, owedOther, otherByHand}, oweOther, nil, nil},
		{"the recorded payment's own", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.PaymentID = "p1" }), nil, ErrInvalidCommand},
		{"an unknown payment", nil, oweOther, nil, ErrPaymentNotFound},
		{"no provider payment", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.PaymentID = "" }), nil, ErrInvalidCommand},
		{"a provider payment id with a line break", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.PaymentID = "pi\nforged" }), nil, ErrInvalidCommand},
		{"a provider payment id too long", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.PaymentID = strings.Repeat("p", MaxEventIDLength+1) }), nil, ErrInvalidCommand},
		{"a negative amount", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.Amount = -1 }), nil, ErrInvalidCommand},
		{"a lower-case currency", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.Currency = "eur" }), nil, ErrInvalidCommand},
		{"a reason with a control character", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.Reason = "no\x1b[31m" }), nil, ErrInvalidCommand},
		{"for another payment's stream", []Event{prepared}, with(func(c *OweUnexpectedRefund) { c.Reference = ReferenceFor("r-2") }), nil, ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := Fold(tc.given)
			got, err := Decide(before, tc.when)
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.then) {
				t.Fatalf("Decide = %#v, %v; want %#v, %v", got, err, tc.then, tc.err)
			}
			if len(got) == 0 {
				return
			}
			after := Fold(append(slices.Clone(tc.given), got...))
			e := got[0].(UnexpectedRefundOwed)
			if r, ok := after.UnexpectedRefund(e.PaymentID); !ok || r.Refund != RefundStatusOwed || r.Amount != e.Amount || r.Currency != e.Currency || r.Reason != e.Reason {
				t.Fatalf("after %v: %+v", got, after)
			}
			if after.Refund != before.Refund || after.Status != before.Status || after.Amount != before.Amount {
				t.Fatalf("the payment's own state changed: %+v, before %+v", after, before)
			}
			if again, err := Decide(after, tc.when); again != nil || err != nil {
				t.Fatalf("sent twice: %#v, %v", again, err)
			}
		})
	}
	// Evolve never changes an earlier state's refunds in place.
	first := Fold([]Event{prepared, owedOther})
	kept := slices.Clone(first.Unexpected)
	_ = Evolve(first, otherByHand)
	_ = Evolve(first, UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_third"})
	if !reflect.DeepEqual(first.Unexpected, kept) {
		t.Fatalf("an earlier state changed: %+v, was %+v", first.Unexpected, kept)
	}
}

// TestEachRefundOwedIsMadeByHandOnItsOwn: given a payment that owes its own refund
// and one on another provider payment, when an operator records a refund made by
// hand naming a provider payment (or none), then that refund alone is settled, for
// the amount and currency owed on it, once; anything else is refused with its
// sentinel and decides nothing.
func TestEachRefundOwedIsMadeByHandOnItsOwn(t *testing.T) {
	both := []Event{prepared, cancelled, late, owed, owedOther}
	with := func(f func(*RecordRefundMadeByHand)) RecordRefundMadeByHand { c := madeOther; f(&c); return c }
	own := RecordRefundMadeByHand{Reference: ref, Amount: 1250, OperatorReference: "bank-transfer-123", RecordedBy: "op-1"}
	withOwn := func(f func(*RecordRefundMadeByHand)) RecordRefundMadeByHand { c := own; f(&c); return c }
	unsaid := []Event{prepared, UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_other"}}
	tests := []struct {
		name  string
		given []Event
		when  RecordRefundMadeByHand
		then  []Event
		err   error
	}{
		{"the other payment's", both, madeOther, []Event{otherByHand}, nil},
		{"the other payment's, its currency named", both, with(func(c *RecordRefundMadeByHand) { c.Currency = "EUR" }), []Event{otherByHand}, nil},
		{"the own one, naming no provider payment", both, own, []Event{byHand}, nil},
		{"the own one, naming the recorded provider payment", both, withOwn(func(c *RecordRefundMadeByHand) { c.PaymentID = "p1" }), []Event{byHand}, nil},
		{"the own one, its currency named", both, withOwn(func(c *RecordRefundMadeByHand) { c.Currency = "EUR" }), []Event{byHand}, nil},
		{"the other payment's after the own one", append(slices.Clone(both), byHand), madeOther, []Event{otherByHand}, nil},
		{"the own one after the other payment's", append(slices.Clone(both), otherByHand), own, []Event{byHand}, nil},
		{"an amount the provider left unsaid: the operator's, with the currency named", unsaid, with(func(c *RecordRefundMadeByHand) { c.Amount, c.Currency = 700, "USD" }),
			[]Event{UnexpectedRefundMadeByHand{Reference: ref, PaymentID: "pi_other", Amount: 700, Currency: "USD", OperatorReference: "bank-2", RecordedBy: "op-2"}}, nil},
		{"an amount the provider left unsaid, without a currency", unsaid, madeOther, nil, ErrRefundAmountNotOwed},
		{"another amount", both, with(func(c *RecordRefundMadeByHand) { c.Amount = 1250 }), nil, ErrRefundAmountNotOwed},
		{"another currency", both, with(func(c *RecordRefundMadeByHand) { c.Currency = "USD" }), nil, ErrRefundAmountNotOwed},
		{"the own one in another currency", both, withOwn(func(c *RecordRefundMadeByHand) { c.Currency = "USD" }), nil, ErrRefundAmountNotOwed},
		{"the own one for the other payment's amount", both, withOwn(func(c *RecordRefundMadeByHand) { c.Amount = 1500 }), nil, ErrRefundAmountNotOwed},
		{"a second one", append(slices.Clone(both), otherByHand), madeOther, nil, ErrRefundAlreadyRecorded},
		{"a provider payment that owes nothing", both, with(func(c *RecordRefundMadeByHand) { c.PaymentID = "pi_unknown" }), nil, ErrNoRefundOwed},
		{"before it is owed", []Event{prepared, cancelled, late, owed}, madeOther, nil, ErrNoRefundOwed},
		{"a provider payment id with markup is only compared", both, with(func(c *RecordRefundMadeByHand) { c.PaymentID = "<img src=x>" }), nil, ErrNoRefundOwed},
		{"a provider payment id with a line break", both, with(func(c *RecordRefundMadeByHand) { c.PaymentID = "pi\nx" }), nil, ErrInvalidCommand},
		{"a lower-case currency", both, with(func(c *RecordRefundMadeByHand) { c.Currency = "eur" }), nil, ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := Fold(tc.given)
			got, err := Decide(before, tc.when)
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.then) {
				t.Fatalf("Decide = %#v, %v; want %#v, %v", got, err, tc.then, tc.err)
			}
			if len(got) == 0 {
				return
			}
			after := Fold(append(slices.Clone(tc.given), got...))
			if e, other := got[0].(UnexpectedRefundMadeByHand); other {
				r, _ := after.UnexpectedRefund(e.PaymentID)
				if r.Refund != RefundStatusMadeByHand || r.Amount != e.Amount || r.Currency != e.Currency || after.Refund != before.Refund {
					t.Fatalf("after %v: %+v; want that refund alone made by hand", got, after)
				}
			} else if !reflect.DeepEqual(after.Unexpected, before.Unexpected) || after.Refund != RefundStatusMadeByHand {
				t.Fatalf("after %v: %+v; want the own refund alone made by hand", got, after)
			}
			if again, err := Decide(after, tc.when); again != nil || !errors.Is(err, ErrRefundAlreadyRecorded) {
				t.Fatalf("a second request = %#v, %v; want nil, ErrRefundAlreadyRecorded", again, err)
			}
		})
	}
	_, err := Decide(Fold(both), with(func(c *RecordRefundMadeByHand) { c.Amount = 15 }))
	if !strings.Contains(err.Error(), "1500 EUR is owed on provider payment pi_other, not 15") {
		t.Errorf("the refusal says %q", err)
	}
}

// TestRefundOwedChangeOfReadsEveryRefundOwed: every event of RefundOwedTypes says
// which refund owed it opens or settles, an opening one what it owes, and no other
// event says anything.
func TestRefundOwedChangeOfReadsEveryRefundOwed(t *testing.T) {
	want := map[string]RefundOwedChange{
		"RefundOwed":                 {Reference: ref, Owed: Owed{PaymentID: "p1", Amount: 1250, Currency: "EUR"}},
		"PaymentRefunded":            {Reference: ref, Settled: true},
		"RefundMadeByHand":           {Reference: ref, Settled: true},
		"UnexpectedRefundOwed":       {Reference: ref, PaymentID: "pi_other", Owed: Owed{PaymentID: "pi_other", Amount: 1500, Currency: "EUR", Reason: "refused for good"}},
		"UnexpectedRefundMadeByHand": {Reference: ref, PaymentID: "pi_other", Settled: true},
	}
	for _, e := range allEvents {
		got, ok := RefundOwedChangeOf(e)
		w, reads := want[e.EventType()]
		if ok != reads || got != w || reads != slices.Contains(RefundOwedTypes(), e.EventType()) {
			t.Errorf("RefundOwedChangeOf(%s) = %+v, %v; want %+v, %v", e.EventType(), got, ok, w, reads)
		}
	}
	if n := len(RefundOwedTypes()); n != len(want) {
		t.Errorf("RefundOwedTypes() = %v", RefundOwedTypes())
	}
}
