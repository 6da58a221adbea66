package payment

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestRefundMadeByHand: given a payment's events, when an operator records a
// refund made by hand, then the refund owed is settled by RefundMadeByHand, or the
// command is refused with its sentinel and nothing is decided.
func TestRefundMadeByHand(t *testing.T) {
	made := RecordRefundMadeByHand{Reference: ref, Amount: 1250, OperatorReference: "bank-transfer-123", RecordedBy: "op-1"}
	with := func(f func(*RecordRefundMadeByHand)) RecordRefundMadeByHand { c := made; f(&c); return c }
	owedCase := []Event{prepared, cancelled, late, owed}
	tests := []struct {
		name  string
		given []Event
		when  Command
		then  []Event
		err   error
	}{
		{"a refund owed is recorded made by hand", owedCase, made, []Event{byHand}, nil},
		{"after a rejection likewise", []Event{prepared, rejected, late, owed}, made, []Event{byHand}, nil},
		{"markup in the reference is data", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = `<script>alert(1)</script>` }),
			[]Event{RefundMadeByHand{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", OperatorReference: `<script>alert(1)</script>`, RecordedBy: "op-1"}}, nil},
		{"a second one is refused", append(slices.Clone(owedCase), byHand), made, nil, ErrRefundAlreadyRecorded},
		{"a second one with another reference is refused", append(slices.Clone(owedCase), byHand), with(func(c *RecordRefundMadeByHand) { c.OperatorReference = "other" }), nil, ErrRefundAlreadyRecorded},
		{"a second one with another amount is refused as recorded", append(slices.Clone(owedCase), byHand), with(func(c *RecordRefundMadeByHand) { c.Amount = 1 }), nil, ErrRefundAlreadyRecorded},
		{"one the provider refunded is recorded already", append(slices.Clone(owedCase), refunded), made, nil, ErrRefundAlreadyRecorded},
		{"another amount is refused", owedCase, with(func(c *RecordRefundMadeByHand) { c.Amount = 1249 }), nil, ErrRefundAmountNotOwed},
		{"more than owed is refused", owedCase, with(func(c *RecordRefundMadeByHand) { c.Amount = 1251 }), nil, ErrRefundAmountNotOwed},
		{"no late success, no refund owed", []Event{prepared, cancelled}, made, nil, ErrNoRefundOwed},
		{"a confirmed payment owes nothing", []Event{prepared, confirmed}, made, nil, ErrNoRefundOwed},
		{"a payment waiting for its renter owes nothing", []Event{prepared}, made, nil, ErrNoRefundOwed},
		{"a late success not yet owed is not made by hand", []Event{prepared, cancelled, late}, made, nil, ErrNoRefundOwed},
		{"a refund the provider is making is not made by hand", []Event{prepared, cancelled, late, asked}, made, nil, ErrNoRefundOwed},
		{"an unknown payment", nil, made, nil, ErrPaymentNotFound},
		{"a zero amount", owedCase, with(func(c *RecordRefundMadeByHand) { c.Amount = 0 }), nil, ErrInvalidCommand},
		{"a negative amount", owedCase, with(func(c *RecordRefundMadeByHand) { c.Amount = -1250 }), nil, ErrInvalidCommand},
		{"no operator reference", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = "" }), nil, ErrInvalidCommand},
		{"a reference too long", owedCase, with(func(c *RecordRefundMadeByHand) {
			c.OperatorReference = strings.Repeat("x", MaxOperatorReferenceLength+1)
		}), nil, ErrInvalidCommand},
		{"a reference with a line break", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = "bank\nforged log line" }), nil, ErrInvalidCommand},
		{"a reference with a control character", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = "bank\x1b[31m" }), nil, ErrInvalidCommand},
		{"a reference with a bidi override", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = "bank\u202eknab" }), nil, ErrInvalidCommand},
		{"a reference that is not UTF-8", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = "bank\xff" }), nil, ErrInvalidCommand},
		{"a reference padded with spaces", owedCase, with(func(c *RecordRefundMadeByHand) { c.OperatorReference = " bank " }), nil, ErrInvalidCommand},
		{"nobody recorded it", owedCase, with(func(c *RecordRefundMadeByHand) { c.RecordedBy = "" }), nil, ErrInvalidCommand},
		{"for another payment's stream", owedCase, with(func(c *RecordRefundMadeByHand) { c.Reference = ReferenceFor("r-2") }), nil, ErrInvalidCommand},
		{"a malformed reference", owedCase, with(func(c *RecordRefundMadeByHand) { c.Reference = "rp_<b>" }), nil, ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(Fold(tc.given), tc.when)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Decide error = %v, want %v", err, tc.err)
			}
			if !slices.Equal(got, tc.then) {
				t.Fatalf("Decide events = %#v, want %#v", got, tc.then)
			}
			if len(got) == 0 {
				return
			}
			after := Fold(append(slices.Clone(tc.given), got...))
			if after.Refund != RefundStatusMadeByHand || !after.Refunded() || after.RefundDue() {
				t.Fatalf("after %v the payment is %+v, want its refund made by hand", got, after)
			}
			// A second request, the very same one included, is refused and decides nothing.
			if again, err := Decide(after, tc.when); again != nil || !errors.Is(err, ErrRefundAlreadyRecorded) {
				t.Fatalf("repeated command = %#v, %v; want nil, ErrRefundAlreadyRecorded", again, err)
			}
		})
	}
}

func TestTheAmountRefusedSaysWhatIsOwed(t *testing.T) {
	_, err := Decide(Fold([]Event{prepared, cancelled, late, owed}), RecordRefundMadeByHand{Reference: ref, Amount: 1000, OperatorReference: "x", RecordedBy: "op"})
	if !errors.Is(err, ErrRefundAmountNotOwed) || !strings.Contains(err.Error(), "1250 EUR is owed, not 1000") {
		t.Fatalf("error = %v", err)
	}
}

// TestARefundMadeByHandStaysMade: the provider's word that it refunded, after, is
// recorded, and the refund then reads refunded-twice (the renter was paid back
// twice), not refunded; nothing owes a refund again; a refund requested after
// changes nothing.
func TestARefundMadeByHandStaysMade(t *testing.T) {
	s := Fold([]Event{prepared, cancelled, late, owed, byHand, asked})
	if s.Refund != RefundStatusMadeByHand || s.RefundDue() {
		t.Fatalf("a refund requested after one made by hand: %+v", s)
	}
	if got, err := Decide(s, OweRefund{Reference: ref}); got != nil || err != nil {
		t.Fatalf("OweRefund after a refund made by hand = %v, %v", got, err)
	}
	twice := Fold([]Event{prepared, cancelled, late, owed, byHand, refunded})
	if twice.Refund != RefundStatusTwice || !twice.Refunded() || twice.RefundDue() {
		t.Fatalf("the provider's refund after one made by hand: %+v, want refund %q", twice, RefundStatusTwice)
	}
	if got, err := Decide(twice, ConfirmRefund{Reference: ref, ProviderEventID: "evt_again"}); got != nil || err != nil {
		t.Fatalf("ConfirmRefund again after the money went back twice = %v, %v", got, err)
	}
	if got := Fold([]Event{prepared, cancelled, late, owed, refunded, byHand}); got.Refund != RefundStatusDone {
		t.Fatalf("a refund made by hand after the provider's (refused by Decide, read as written) = %q", got.Refund)
	}
	if !SettlesRefund("RefundMadeByHand") || !SettlesRefund("PaymentRefunded") || SettlesRefund("RefundOwed") {
		t.Fatal("SettlesRefund")
	}
	if got := RefundSettlementTypes(); !slices.Equal(got, []string{"PaymentRefunded", "RefundMadeByHand"}) {
		t.Fatalf("RefundSettlementTypes() = %v", got)
	}
}

// TestForHandsIsWhereARefundMadeByHandIsRecorded: at each refund status a payment
// reaches, RefundStatus.ForHands (what the operator console offers the action by)
// holds exactly when RecordRefundMadeByHand for the amount owed is recorded, and
// RefundStatuses lists every status reached.
func TestForHandsIsWhereARefundMadeByHandIsRecorded(t *testing.T) {
	made := RecordRefundMadeByHand{Reference: ref, Amount: 1250, OperatorReference: "bank-transfer-123", RecordedBy: "op-1"}
	reached := map[RefundStatus]bool{}
	for _, given := range [][]Event{
		{prepared}, {prepared, confirmed}, {prepared, cancelled}, {prepared, cancelled, late}, {prepared, cancelled, late, asked},
		{prepared, cancelled, late, asked, refunded}, {prepared, cancelled, late, owed}, {prepared, rejected, late, owed},
		{prepared, cancelled, late, owed, byHand}, {prepared, cancelled, late, owed, refunded}, {prepared, cancelled, late, owed, byHand, refunded},
	} {
		s := Fold(given)
		reached[s.Refund] = true
		got, err := Decide(s, made)
		if recorded := err == nil && len(got) == 1; recorded != s.Refund.ForHands() {
			t.Errorf("refund %q after %v: ForHands %v, but Decide = %v, %v", s.Refund, given, s.Refund.ForHands(), got, err)
		}
	}
	all := RefundStatuses()
	for st := range reached {
		if !slices.Contains(all, st) {
			t.Errorf("refund status %q is reached but not in RefundStatuses() %v", st, all)
		}
	}
	if len(reached) != len(all) {
		t.Errorf("the cases reach %v, RefundStatuses() lists %v", reached, all)
	}
}

// TestARefundThatFailedAfterItWasAcceptedIsOwed: RecordRefundFailed makes the
// refund the provider accepted owed, with the provider's reason and the failed
// refund's id, whether or not the provider had reported it made (it does when it
// creates the refund, before the bank may fail it); the provider's word that the
// payment is refunded changes nothing after that, before or after an operator made
// the refund by hand; another refund's failure, or a failure once the refund is
// owed, changes nothing; and a failure without a refund id or a printable reason
// is refused.
func TestARefundThatFailedAfterItWasAcceptedIsOwed(t *testing.T) {
	failed := RecordRefundFailed{Reference: ref, RefundID: "re_1", Reason: "Stripe's refund re_1 failed (lost_or_stolen_card)", ProviderEventID: "evt_9"}
	want := RefundOwed{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", Reason: failed.Reason, FailedRefundID: "re_1"}
	// Accepted, accepted and reported made, and owed then refunded outside the
	// service (a refund whose id the payment does not know) that failed.
	for _, given := range [][]Event{{prepared, cancelled, late, asked}, {prepared, cancelled, late, asked, refunded}, {prepared, cancelled, late, owed, refunded}} {
		s := Fold(given)
		got, err := Decide(s, failed)
		if err != nil || len(got) != 1 || got[0] != want {
			t.Fatalf("RecordRefundFailed after %v = %v, %v; want %v", given, got, err, want)
		}
		after := Evolve(s, got[0])
		if after.Refund != RefundStatusOwed || !after.Refund.ForHands() || !after.RefundFailed {
			t.Fatalf("after the failure the refund is %+v; want owed, for hands", after)
		}
		if again, err := Decide(after, failed); again != nil || err != nil {
			t.Errorf("the failure again = %v, %v; want nothing", again, err)
		}
		if late, err := Decide(after, ConfirmRefund{Reference: ref, ProviderEventID: "evt_late"}); late != nil || err != nil {
			t.Errorf("the provider's refunded after the failure = %v, %v; want nothing", late, err)
		}
		made := Evolve(after, RefundMadeByHand{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"})
		if late, err := Decide(made, ConfirmRefund{Reference: ref, ProviderEventID: "evt_late"}); late != nil || err != nil || made.Refund != RefundStatusMadeByHand {
			t.Errorf("the provider's refunded after the failure was made by hand = %v, %v (%q); want nothing, and no refunded-twice", late, err, made.Refund)
		}
	}
	for _, given := range [][]Event{
		{prepared}, {prepared, cancelled, late}, {prepared, cancelled, late, owed}, {prepared, cancelled, late, owed, byHand},
	} {
		if got, err := Decide(Fold(given), failed); got != nil || err != nil {
			t.Errorf("RecordRefundFailed after %v = %v, %v; want nothing", given, got, err)
		}
	}
	other := failed
	other.RefundID = "re_other"
	if got, err := Decide(Fold([]Event{prepared, cancelled, late, asked, refunded}), other); got != nil || err != nil {
		t.Errorf("the failure of another refund than ours = %v, %v; want nothing", got, err)
	}
	s := Fold([]Event{prepared, cancelled, late, asked})
	for _, c := range []RecordRefundFailed{{Reference: ref, RefundID: "re_1"}, {Reference: ref, RefundID: "re_1", Reason: "line\nbreak"}, {Reference: ref, Reason: "no id"}} {
		if _, err := Decide(s, c); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("RecordRefundFailed %+v: %v; want ErrInvalidCommand", c, err)
		}
	}
}
