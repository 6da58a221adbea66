package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/ops/mismatch"
)

// TestMismatchesListsProviderEventsThatDidNotMatch: a provider event about one of
// our payments but another provider payment id is listed, with the money it
// reported taken owed (the generic provider cannot refund); one about another
// amount is listed with nothing to refund; a matching event is not listed.
func TestMismatchesListsProviderEventsThatDidNotMatch(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	if r := must(t, e, "mismatches"); !strings.HasSuffix(r.stdout, "\n0 mismatched provider events\n") {
		t.Errorf("mismatches of a world that has none:\n%q", r.stdout)
	}
	ctx := context.Background()
	first, second := payment.ReferenceFor(outstanding[0]), payment.ReferenceFor(outstanding[1])
	for _, ev := range []payment.ProviderEvent{
		{Provider: "generic", EventID: "other-payment", Kind: payment.ProviderSucceeded, Reference: first, PaymentID: "pay_someone_else", Amount: 1, Currency: "USD", Digest: "d1"},
		{Provider: "generic", EventID: "other-amount", Kind: payment.ProviderFailed, Reference: second, Amount: 1499, Unstated: payment.FactPaymentID | payment.FactCurrency, Digest: "d2"},
	} {
		res, err := w.Commands.ApplyProviderEvent(ctx, ev)
		if err != nil || res.Mismatch == nil {
			t.Fatalf("%s: %+v, %v", ev.EventID, res, err)
		}
	}
	r := must(t, e, "mismatches")
	if !strings.Contains(r.stdout, "other-payment") || !strings.Contains(r.stdout, "pay_someone_else 0.01 USD") || !strings.Contains(r.stdout, "owed") ||
		!strings.Contains(r.stdout, "other-amount") || !strings.HasSuffix(r.stdout, "\n2 mismatched provider events\n") {
		t.Errorf("mismatches:\n%s", r.stdout)
	}
	list := decode[ctl.MismatchList](t, must(t, e, "mismatches", "--json"))
	byID := map[string]mismatch.Mismatch{}
	for _, m := range list.Mismatches {
		byID[m.EventID] = m
	}
	if m := byID["other-payment"]; list.Count != 2 || m.PaymentReference != first || m.RentalID != outstanding[0] || m.Refund != mismatch.RefundOwed ||
		strings.Join(m.Fields, ",") != "paymentId,amount,currency" || m.RecordedAmount != 1500 || m.RecordedCurrency != "EUR" {
		t.Errorf("mismatches --json: %+v", list)
	}
	if m := byID["other-amount"]; m.Refund != mismatch.RefundNone || strings.Join(m.Fields, ",") != "amount" || m.Kind != payment.ProviderFailed {
		t.Errorf("the other amount: %+v", m)
	}
	for _, ref := range []string{first, second} {
		if s, _, _ := w.Commands.LoadPayment(ctx, ref); s.Status != payment.StatusPrepared {
			t.Errorf("%s became %+v", ref, s)
		}
	}
}
