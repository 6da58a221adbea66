package command_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestCancelAfterTheProviderTookTheMoneyIsDeclined: the renter has paid at the
// provider, but its webhook has not arrived yet. A cancellation must ask the
// provider first and be declined (the rental keeps its bike and the money), not
// recorded and then undone by a refund.
func TestCancelAfterTheProviderTookTheMoneyIsDeclined(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		p := newHolder(false)
		h := command.New(store, command.WithProvider(p))
		ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
		if _, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "ignored", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		if !p.pay("pi_" + ref) { // paid at the provider; the webhook is still on its way
			t.Fatal("the renter could not pay")
		}
		if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); !errors.Is(err, payment.ErrPaymentAlreadyConfirmed) {
			t.Fatalf("cancel after the provider took the money: %v, want ErrPaymentAlreadyConfirmed", err)
		}
		if recs, _ := store.Read(ctx, payment.StreamID(ref), 0); len(recs) != 1 {
			t.Fatalf("a declined cancellation recorded %d events", len(recs)-1)
		}
		if _, err := h.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "test", EventID: "evt-1",
			Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: "pi_" + ref, Amount: 1500, Currency: "EUR", Digest: "d"}); err != nil {
			t.Fatal(err)
		}
		s, _, err := h.LoadPayment(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		refunds := p.refunds[ref]
		p.mu.Unlock()
		if s.Status != payment.StatusConfirmed || s.LateSuccess || refunds != 0 {
			t.Fatalf("payment %+v with %d refunds; want confirmed, no refund", s, refunds)
		}
	})
}
