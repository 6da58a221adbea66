package payment_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// TestARefusedRefundsReasonIsFitToRecord: whatever the provider says, the reason a
// RefundRefused carries is printable, trimmed and bounded, so that the RefundOwed
// it becomes is always recorded (OweRefund checks its reason as an operator's
// words are checked), and a refusal is never temporary.
func TestARefusedRefundsReasonIsFitToRecord(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "Stripe refused the refund (charge_disputed)", "Stripe refused the refund (charge_disputed)"},
		{"line breaks and a bidi override", " a\nb\u202ec\x00 ", "a b c"},
		{"invalid UTF-8", "bad \xff byte", "bad   byte"},
		{"empty", "\n\t", "refused by the provider"},
		{"too long", strings.Repeat("é", payment.MaxRefundRefusalLength+50), strings.Repeat("é", payment.MaxRefundRefusalLength)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := payment.RefusedRefund(c.in)
			if r.Reason != c.want {
				t.Errorf("reason %q, want %q", r.Reason, c.want)
			}
			if err := payment.CheckText("reason", r.Reason, payment.MaxRefundRefusalLength); err != nil {
				t.Errorf("the reason %q is not fit to record: %v", r.Reason, err)
			}
			if payment.Temporary(r) || payment.Temporary(errors.Join(errors.New("wrapped"), r)) {
				t.Error("a refusal for good reads as temporary")
			}
			if utf8.RuneCountInString(r.Reason) > payment.MaxRefundRefusalLength {
				t.Errorf("reason of %d characters", utf8.RuneCountInString(r.Reason))
			}
		})
	}
}

// TestAnOwedRefundCarriesItsReason: OweRefund records its reason in the RefundOwed,
// once; a reason that is not printable text is refused and changes nothing; the
// refund is owed all the same with no reason (a provider that cannot refund).
func TestAnOwedRefundCarriesItsReason(t *testing.T) {
	ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
	late := payment.Fold([]payment.Event{
		payment.PaymentPrepared{Reference: ref, PaymentID: "pi_1", Amount: 1500, Currency: "EUR"},
		payment.PaymentCancelled{Reference: ref, PaymentID: "pi_1"},
		payment.PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "pi_1", Amount: 1500, Currency: "EUR"},
	})
	got, err := payment.Decide(late, payment.OweRefund{Reference: ref, Reason: "Stripe refused the refund (charge_disputed)"})
	if err != nil || len(got) != 1 || got[0] != (payment.RefundOwed{Reference: ref, PaymentID: "pi_1", Amount: 1500, Currency: "EUR", Reason: "Stripe refused the refund (charge_disputed)"}) {
		t.Fatalf("OweRefund with a reason: %+v, %v", got, err)
	}
	if got, err := payment.Decide(late, payment.OweRefund{Reference: ref}); err != nil || len(got) != 1 || got[0].(payment.RefundOwed).Reason != "" {
		t.Fatalf("OweRefund without one: %+v, %v", got, err)
	}
	for _, bad := range []string{"line\nbreak", " padded", strings.Repeat("x", payment.MaxRefundRefusalLength+1)} {
		if got, err := payment.Decide(late, payment.OweRefund{Reference: ref, Reason: bad}); err == nil || len(got) != 0 {
			t.Errorf("OweRefund with the reason %q: %+v, %v; want it refused", bad, got, err)
		}
	}
	owed := payment.Evolve(late, got[0])
	if again, err := payment.Decide(owed, payment.OweRefund{Reference: ref, Reason: "another"}); err != nil || len(again) != 0 {
		t.Errorf("OweRefund once owed: %+v, %v; want nothing more", again, err)
	}
}
