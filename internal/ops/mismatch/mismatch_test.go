package mismatch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ops/mismatch"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// refunder is the generic provider with refunds of unexpected payments, which fail
// while down is set.
type refunder struct {
	generic.Provider
	down bool
}

func (r *refunder) RefundUnexpected(_ context.Context, paymentID, _ string) (string, error) {
	if r.down {
		return "", errors.New("provider down")
	}
	return "re_" + paymentID, nil
}

// TestListsEachMismatchWithWhereItsRefundStands writes mismatches through the
// command handler to a table in the emulator: one refunded on the payment that took
// the money, one whose refund failed (due, until a redelivery refunds it), one with
// nothing to refund as a mismatch (a success on the payment's own id for another
// amount: its money goes back in the payment's stream); a matching event is not
// listed.
func TestListsEachMismatchWithWhereItsRefundStands(t *testing.T) {
	ctx := context.Background()
	client, table := emulatortest.EventsTable(t)
	p := &refunder{}
	h := command.New(dynamo.New(client, table), command.WithProvider(p))
	prepare := func(rental string) (string, string) {
		ref := payment.ReferenceFor(rental + "_AAAAAAAAAAAAAAAAAAAAAA")
		res, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		return ref, res.State.PaymentID
	}
	a, _ := prepare("b1")
	b, _ := prepare("b2")
	c, ours := prepare("b3")
	d, theirs := prepare("b4")
	apply := func(ev payment.ProviderEvent) error {
		ev.Provider, ev.Digest = generic.Name, "d-"+ev.EventID
		_, err := h.ApplyProviderEvent(ctx, ev)
		return err
	}
	if err := apply(payment.ProviderEvent{EventID: "refunded", Kind: payment.ProviderSucceeded, Reference: a, PaymentID: "pay_other_a", Unstated: payment.FactAmount | payment.FactCurrency}); err != nil {
		t.Fatal(err)
	}
	p.down = true
	due := payment.ProviderEvent{EventID: "due", Kind: payment.ProviderSucceeded, Reference: b, PaymentID: "pay_other_b", Unstated: payment.FactAmount | payment.FactCurrency}
	if err := apply(due); err == nil {
		t.Fatal("a refund that failed answered nil")
	}
	if err := apply(payment.ProviderEvent{EventID: "amount", Kind: payment.ProviderSucceeded, Reference: c, PaymentID: ours, Amount: 1, Unstated: payment.FactCurrency}); err != nil {
		t.Fatal(err)
	}
	if err := apply(payment.ProviderEvent{EventID: "matches", Kind: payment.ProviderSucceeded, Reference: d, PaymentID: theirs, Amount: 1500, Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	list := func() map[string]mismatch.Mismatch {
		t.Helper()
		got, err := mismatch.List(ctx, client, table)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]mismatch.Mismatch{}
		for _, m := range got {
			out[m.EventID] = m
		}
		return out
	}
	got := list()
	if len(got) != 3 || got["refunded"].Refund != mismatch.RefundRequested || got["refunded"].RefundID != "re_pay_other_a" ||
		got["due"].Refund != mismatch.RefundDue || got["amount"].Refund != mismatch.RefundNone || got["amount"].RecordedPaymentID != ours {
		t.Fatalf("mismatches %+v", got)
	}
	p.down = false // the provider delivers the event again
	if err := apply(due); err != nil {
		t.Fatal(err)
	}
	if m := list()["due"]; m.Refund != mismatch.RefundRequested || m.RefundID != "re_pay_other_b" || m.RentalID != "b2_AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("after the redelivery: %+v", m)
	}
}
