package payment

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
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
// refund the provider accepted owed, with the provider's reason, the failed
// refund's id and when the provider reported the failure, whether or not the
// provider had reported it made (it does when it creates the refund, before the
// bank may fail it); the provider's word, reported before the failure, that the
// payment is refunded is its word about the refund that failed and changes
// nothing, before or after an operator made the refund by hand; another refund's
// failure, or a failure once the refund is owed, changes nothing; and a failure
// without a refund id or a printable reason is refused.
func TestARefundThatFailedAfterItWasAcceptedIsOwed(t *testing.T) {
	failed := RecordRefundFailed{Reference: ref, RefundID: "re_1", Reason: "Stripe's refund re_1 failed (lost_or_stolen_card)", ProviderEventID: "evt_9", FailedAt: failedAt}
	want := RefundOwed{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", Reason: failed.Reason, FailedRefundID: "re_1", FailedAt: failedAt}
	// Accepted, accepted and reported made, and owed then refunded outside the
	// service (a refund whose id the payment does not know) that failed.
	for _, given := range [][]Event{{prepared, cancelled, late, asked}, {prepared, cancelled, late, asked, refundedAt1}, {prepared, cancelled, late, owed, refundedAt1}} {
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
		if late, err := Decide(after, ConfirmRefund{Reference: ref, ProviderEventID: "evt_late", ReportedAt: refundedAt}); late != nil || err != nil {
			t.Errorf("the provider's refunded, reported before the failure = %v, %v; want nothing", late, err)
		}
		made := Evolve(after, RefundMadeByHand{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"})
		if late, err := Decide(made, ConfirmRefund{Reference: ref, ProviderEventID: "evt_late", ReportedAt: refundedAt}); late != nil || err != nil || made.Refund != RefundStatusMadeByHand {
			t.Errorf("the provider's refunded, reported before the failure, after it was made by hand = %v, %v (%q); want nothing, and no refunded-twice", late, err, made.Refund)
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
	if got, err := Decide(Fold([]Event{prepared, cancelled, late, asked, refundedAt1}), other); got != nil || err != nil {
		t.Errorf("the failure of another refund than ours = %v, %v; want nothing", got, err)
	}
	s := Fold([]Event{prepared, cancelled, late, asked})
	for _, c := range []RecordRefundFailed{{Reference: ref, RefundID: "re_1"}, {Reference: ref, RefundID: "re_1", Reason: "line\nbreak"}, {Reference: ref, Reason: "no id"}} {
		if _, err := Decide(s, c); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("RecordRefundFailed %+v: %v; want ErrInvalidCommand", c, err)
		}
	}
}

// The provider's clock in the stories of a refund that failed: its first refund
// (re_1) reported made at refundedAt, reported failed at failedAt, and another
// refund of the payment (one someone made in the provider's dashboard) reported
// made at againAt.
var (
	refundedAt  = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	failedAt    = refundedAt.Add(5 * 24 * time.Hour)
	againAt     = failedAt.Add(2 * time.Hour)
	refundedAt1 = PaymentRefunded{Reference: ref, PaymentID: "p1", ProviderEventID: "evt_refunded_1", ReportedAt: refundedAt}
)

// TestAnotherRefundAfterTheOneThatFailedIsRecorded: after the provider's refund
// re_1 failed, the refund is owed; an operator may pay it back by hand, and
// someone may refund the payment again at the provider. The provider reports each
// refund once, with its time: in whatever order its reports (re_1 made, re_1
// failed, the second refund made) and the operator's record arrive, the second
// refund is recorded (refunded, or refunded-twice once it was made by hand as
// well: the renter was paid twice), the report of re_1 changes nothing, and a
// failure reported before a refund that stands changes nothing either. Reports
// recorded before their times were kept read as well as they can: a failure
// whose refund had been reported made is followed only by other refunds.
func TestAnotherRefundAfterTheOneThatFailedIsRecorded(t *testing.T) {
	made1 := ConfirmRefund{Reference: ref, ProviderEventID: "evt_refunded_1", ReportedAt: refundedAt}
	failed1 := RecordRefundFailed{Reference: ref, RefundID: "re_1", Reason: "Stripe's refund re_1 failed (expired_or_canceled_card)", ProviderEventID: "evt_failed_1", FailedAt: failedAt}
	made2 := ConfirmRefund{Reference: ref, ProviderEventID: "evt_refunded_2", ReportedAt: againAt}
	hand := RecordRefundMadeByHand{Reference: ref, Amount: 1250, OperatorReference: "bank-1", RecordedBy: "ann"}
	names := map[Command]string{made1: "re_1 made", failed1: "re_1 failed", made2: "another refund", hand: "by hand"}
	for _, c := range []struct {
		order []Command
		want  RefundStatus
		// recorded are the types recorded, in order.
		recorded []string
	}{
		{[]Command{made1, failed1, hand, made2}, RefundStatusTwice, []string{"PaymentRefunded", "RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{[]Command{failed1, made1, hand, made2}, RefundStatusTwice, []string{"RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{[]Command{failed1, hand, made1, made2}, RefundStatusTwice, []string{"RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{[]Command{failed1, hand, made1}, RefundStatusMadeByHand, []string{"RefundOwed", "RefundMadeByHand"}},
		{[]Command{made1, failed1, hand}, RefundStatusMadeByHand, []string{"PaymentRefunded", "RefundOwed", "RefundMadeByHand"}},
		{[]Command{made1, failed1, made2, hand}, RefundStatusDone, []string{"PaymentRefunded", "RefundOwed", "PaymentRefunded"}},
		{[]Command{failed1, made2, made1}, RefundStatusDone, []string{"RefundOwed", "PaymentRefunded"}},
		// The second refund reported before the failure of the first arrives.
		{[]Command{made1, made2, failed1, hand}, RefundStatusDone, []string{"PaymentRefunded", "PaymentRefunded"}},
		{[]Command{made2, made1, failed1}, RefundStatusDone, []string{"PaymentRefunded"}},
		{[]Command{made2, failed1, made1}, RefundStatusDone, []string{"PaymentRefunded"}},
	} {
		var steps []string
		for _, cmd := range c.order {
			steps = append(steps, names[cmd])
		}
		t.Run(strings.Join(steps, ", "), func(t *testing.T) {
			events := []Event{prepared, cancelled, late, asked}
			var recorded []string
			for _, cmd := range c.order {
				got, err := Decide(Fold(events), cmd)
				if err != nil && !errors.Is(err, ErrRefundAlreadyRecorded) {
					t.Fatalf("%s: %v", names[cmd], err)
				}
				for _, e := range got {
					recorded = append(recorded, e.EventType())
				}
				events = append(events, got...)
				// Every command again, once applied, changes nothing.
				if again, _ := Decide(Fold(events), cmd); again != nil {
					t.Fatalf("%s again = %v; want nothing", names[cmd], again)
				}
			}
			if got := Fold(events); got.Refund != c.want || !slices.Equal(recorded, c.recorded) {
				t.Errorf("the refund is %q after %v; want %q after %v", got.Refund, recorded, c.want, c.recorded)
			}
		})
	}

	t.Run("the second refund fails too", func(t *testing.T) {
		events := []Event{prepared, cancelled, late, asked, refundedAt1}
		for _, cmd := range []Command{failed1, made2} {
			got, err := Decide(Fold(events), cmd)
			if err != nil || len(got) != 1 {
				t.Fatalf("%s = %v, %v", names[cmd], got, err)
			}
			events = append(events, got...)
		}
		failed2 := RecordRefundFailed{Reference: ref, RefundID: "re_2", Reason: "Stripe's refund re_2 failed (lost_or_stolen_card)", FailedAt: againAt.Add(time.Hour)}
		got, err := Decide(Fold(events), failed2)
		if err != nil || len(got) != 1 || got[0].(RefundOwed).FailedRefundID != "re_2" || Evolve(Fold(events), got[0]).Refund != RefundStatusOwed {
			t.Fatalf("the failure of the refund made after the first failed = %v, %v; want the refund owed again", got, err)
		}
	})

	// The provider's clock counts seconds: re_1 made and failed in one second (a
	// refund that fails at once). In either order the failure stands and the
	// refund is owed; taking the report for another refund would settle it with
	// the money still at the merchant.
	sameSecond := refundedAt.Add(400 * time.Millisecond).Truncate(time.Second)
	madeNow := ConfirmRefund{Reference: ref, ProviderEventID: "evt_refunded_1", ReportedAt: sameSecond}
	failedNow := RecordRefundFailed{Reference: ref, RefundID: "re_1", Reason: "Stripe's refund re_1 failed (expired_or_canceled_card)", ProviderEventID: "evt_failed_1", FailedAt: sameSecond}
	for name, order := range map[string][]Command{"made, then failed": {madeNow, failedNow}, "failed, then made": {failedNow, madeNow}} {
		t.Run("in one second: "+name, func(t *testing.T) {
			events := []Event{prepared, cancelled, late, asked}
			for _, cmd := range order {
				got, err := Decide(Fold(events), cmd)
				if err != nil {
					t.Fatal(err)
				}
				events = append(events, got...)
			}
			if got := Fold(events); got.Refund != RefundStatusOwed {
				t.Errorf("the refund is %q; want owed: re_1 failed, and no other refund was made", got.Refund)
			}
		})
	}

	// Recorded before times were kept: neither the failure nor the provider's
	// word said when.
	oldFailure := RefundOwed{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", Reason: "failed", FailedRefundID: "re_1"}
	oldRefunded := PaymentRefunded{Reference: ref, PaymentID: "p1", ProviderEventID: "evt_refunded_1"}
	for _, c := range []struct {
		name  string
		given []Event
		news  bool
	}{
		{"a failure after the refund was reported made: another report is another refund", []Event{prepared, cancelled, late, asked, oldRefunded, oldFailure, byHand}, true},
		{"a failure before the refund was reported made: the report may be of the refund that failed", []Event{prepared, cancelled, late, asked, oldFailure, byHand}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decide(Fold(c.given), made2)
			if err != nil || (len(got) == 1) != c.news {
				t.Fatalf("the provider's refunded = %v, %v; want it recorded: %v", got, err, c.news)
			}
			if c.news && Evolve(Fold(c.given), got[0]).Refund != RefundStatusTwice {
				t.Errorf("after a refund made by hand, the provider's: %q; want refunded-twice", Evolve(Fold(c.given), got[0]).Refund)
			}
		})
	}
}

// TestWhatIsOwedIsWhatWasTaken: a late success for another amount or currency
// than the payment was prepared for (the provider's word, given up on) owes what
// was taken: its refund, its being owed and its being made by hand are for that
// amount and currency, and the amount the payment was prepared for is refused by
// hand, saying what is owed. A late success recorded before the amount taken was
// kept (the payment's own) reads as before.
func TestWhatIsOwedIsWhatWasTaken(t *testing.T) {
	for _, c := range []struct {
		name string
		late PaymentSucceededAfterCancellation
		owed Money
	}{
		{"more", tookMoreLate, Money{125000, "EUR"}},
		{"another currency", PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "USD"}, Money{1250, "USD"}},
		{"one cent", PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p1", Amount: 1, Currency: "JPY"}, Money{1, "JPY"}},
		{"recorded before", late, Money{1250, "EUR"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Fold([]Event{prepared, cancelled, c.late})
			if s.Charge() != c.owed || s.Prepared() != (Money{1250, "EUR"}) {
				t.Fatalf("the payment's charge %v, prepared %v; want %v, 1250 EUR", s.Charge(), s.Prepared(), c.owed)
			}
			owedEvents, err := Decide(s, OweRefund{Reference: ref, Reason: "charge_disputed"})
			if err != nil || len(owedEvents) != 1 {
				t.Fatal(owedEvents, err)
			}
			if o := owedEvents[0].(RefundOwed); o.Amount != c.owed.Amount || o.Currency != c.owed.Currency {
				t.Errorf("RefundOwed %+v; want %v", o, c.owed)
			}
			s = Evolve(s, owedEvents[0])
			if c.owed.Amount != 1250 {
				_, err := Decide(s, RecordRefundMadeByHand{Reference: ref, Amount: 1250, OperatorReference: "bank-1", RecordedBy: "ann"})
				if !errors.Is(err, ErrRefundAmountNotOwed) || !strings.Contains(err.Error(), c.owed.String()+" is owed") {
					t.Errorf("by hand for the amount prepared: %v; want refused, saying %v is owed", err, c.owed)
				}
			}
			got, err := Decide(s, RecordRefundMadeByHand{Reference: ref, Amount: c.owed.Amount, OperatorReference: "bank-1", RecordedBy: "ann"})
			if err != nil || len(got) != 1 {
				t.Fatal(got, err)
			}
			if m := got[0].(RefundMadeByHand); m.Amount != c.owed.Amount || m.Currency != c.owed.Currency {
				t.Errorf("RefundMadeByHand %+v; want %v", m, c.owed)
			}
		})
	}
}
