package command_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestASuccessOnOurPaymentForAnotherAmountGivesItUp: an authentic success of the
// configured provider that names our payment (its payment id, or none) for
// another amount or currency cannot pay for the rental. The mismatch is recorded
// for operators, and the payment is given up (cancelled if it was still prepared,
// which releases the bike) with a late success for what the provider says it
// took, refunded on our payment or, by a provider that cannot refund, owed for
// that amount and currency, which is what a refund made by hand must then be. A
// payment confirmed first, and another provider's word, change nothing beyond the
// mismatch. Every redelivery changes nothing more. On both stores.
func TestASuccessOnOurPaymentForAnotherAmountGivesItUp(t *testing.T) {
	ctx := context.Background()
	type given int
	const (
		whilePrepared given = iota
		afterTheDeadline
		afterTheConfirmation
	)
	for _, c := range []struct {
		name      string
		generic   bool // the generic provider (cannot refund), else one that refunds
		given     given
		event     func(ref, ours string) payment.ProviderEvent
		wantOwed  payment.Money // zero: nothing given up
		wantCalls []string      // of the refunding provider, "%s" for our payment id
	}{
		{name: "generic: one cent on our payment id", generic: true,
			event: func(ref, ours string) payment.ProviderEvent {
				return genericSuccess(ref, "e1", ours, 1, "")
			}, wantOwed: payment.Money{Amount: 1, Currency: "EUR"}},
		{name: "generic: one cent, naming no payment id", generic: true,
			event: func(ref, _ string) payment.ProviderEvent {
				return genericSuccess(ref, "e1", "", 1, "")
			}, wantOwed: payment.Money{Amount: 1, Currency: "EUR"}},
		{name: "generic: one cent after the deadline cancelled the payment", generic: true, given: afterTheDeadline,
			event: func(ref, ours string) payment.ProviderEvent {
				return genericSuccess(ref, "e1", ours, 1, "")
			}, wantOwed: payment.Money{Amount: 1, Currency: "EUR"}},
		{name: "generic: another currency", generic: true,
			event: func(ref, ours string) payment.ProviderEvent {
				return genericSuccess(ref, "e1", ours, 0, "USD")
			}, wantOwed: payment.Money{Amount: 1500, Currency: "USD"}},
		{name: "generic: one cent after the rental got its bike", generic: true, given: afterTheConfirmation,
			event: func(ref, ours string) payment.ProviderEvent {
				return genericSuccess(ref, "e1", ours, 1, "")
			}},
		{name: "generic: another provider's word", generic: true,
			event: func(ref, ours string) payment.ProviderEvent {
				return payment.ProviderEvent{Provider: "stripe", EventID: "evt_1", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: ours, Amount: 1, Currency: "EUR", Digest: "d"}
			}},
		{name: "a provider that refunds: 1499 on our payment",
			event: func(ref, ours string) payment.ProviderEvent {
				return payment.ProviderEvent{Provider: "stripe", EventID: "evt_1", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: ours, Amount: 1499, Currency: "EUR", Digest: "d"}
			}, wantOwed: payment.Money{Amount: 1499, Currency: "EUR"}, wantCalls: []string{"refund %s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			storesOf(t, func(t *testing.T, store eventstore.Store) {
				var p command.PaymentProvider = generic.Provider{}
				refunds := newIntents()
				if !c.generic {
					p = refunds
				}
				h := command.New(store, command.WithProvider(p))
				id := rentalFor(t, h, "own")
				ref := payment.ReferenceFor(id)
				before, _, err := h.LoadPayment(ctx, ref)
				if err != nil {
					t.Fatal(err)
				}
				ours := before.PaymentID
				switch c.given {
				case afterTheDeadline:
					if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
						t.Fatal(err)
					}
				case afterTheConfirmation:
					if _, err := h.ApplyProviderEvent(ctx, genericSuccess(ref, "e0", ours, 1500, "EUR")); err != nil {
						t.Fatal(err)
					}
				}
				paymentBefore := streamTypes(t, store, payment.StreamID(ref))
				callsBefore := len(refunds.called())
				ev := c.event(ref, ours)
				for delivery := range 3 {
					res, err := h.ApplyProviderEvent(ctx, ev)
					if err != nil || res.Mismatch == nil || res.Duplicate != (delivery > 0) {
						t.Fatalf("delivery %d: %+v, %v; want a mismatch", delivery, res, err)
					}
					if c.wantOwed == (payment.Money{}) {
						continue
					}
					if s := res.Payment; s.Status != payment.StatusCancelled || !s.LateSuccess || s.Charge() != c.wantOwed || s.RefundDue() {
						t.Fatalf("delivery %d answers the payment %+v; want it given up, %v taken and sent back", delivery, s, c.wantOwed)
					}
				}
				if got := streamTypes(t, store, command.ReceiptStreamID(ev.Provider, ev.EventID)); !slices.Equal(got, []string{"ProviderEventMismatched"}) {
					t.Errorf("the event's stream holds %v; want the mismatch alone", got)
				}
				got := streamTypes(t, store, payment.StreamID(ref))
				if c.wantOwed == (payment.Money{}) {
					if !slices.Equal(got, paymentBefore) || len(refunds.called()) != callsBefore {
						t.Fatalf("the payment holds %v (before %v), the provider was asked %v; want nothing changed", got, paymentBefore, refunds.called())
					}
					return
				}
				refund := "RefundOwed"
				if !c.generic {
					refund = "RefundRequested"
				}
				want := append(slices.Clone(paymentBefore), "PaymentSucceededAfterCancellation", refund)
				if c.given == whilePrepared {
					want = append(slices.Clone(paymentBefore), "PaymentCancelled", "PaymentSucceededAfterCancellation", refund)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("the payment holds %v; want %v", got, want)
				}
				late := lastOf[payment.PaymentSucceededAfterCancellation](t, store, ref)
				back := lastOf[payment.RefundRequested](t, store, ref)
				if c.generic {
					owed := lastOf[payment.RefundOwed](t, store, ref)
					back.Amount, back.Currency = owed.Amount, owed.Currency
				}
				if late.Amount != c.wantOwed.Amount || late.Currency != c.wantOwed.Currency || back.Amount != c.wantOwed.Amount || back.Currency != c.wantOwed.Currency {
					t.Errorf("the late success %+v and its refund %+v; want both for %v", late, back, c.wantOwed)
				}
				var calls []string
				for _, call := range c.wantCalls {
					calls = append(calls, strings.ReplaceAll(call, "%s", ours))
				}
				if got := refunds.called()[callsBefore:]; !slices.Equal(got, calls) {
					t.Errorf("the provider was asked %v; want %v", got, calls)
				}
				if !c.generic {
					return
				}
				// What is owed is what was taken.
				madeByHandForWhatWasTaken(t, h, store, id, c.wantOwed)
			})
		})
	}
}

// TestASuccessOnOurPaymentForAnotherAmountIsGivenUpOnceAtOnce: the same success
// delivered many times at once gives the payment up once and refunds it once, and
// a refund the provider fails on the first delivery is made by a redelivery. On
// both stores.
func TestASuccessOnOurPaymentForAnotherAmountIsGivenUpOnceAtOnce(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		p := &refundsDownFirst{intents: newIntents()}
		h := command.New(store, command.WithProvider(p))
		ref, ours := prepared(t, h, "many")
		ev := payment.ProviderEvent{Provider: "stripe", EventID: "evt_many", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: ours, Amount: 1, Currency: "EUR", Digest: "d"}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := h.ApplyProviderEvent(ctx, ev); err != nil {
					t.Errorf("a delivery: %v", err)
				}
			})
		}
		wg.Wait()
		want := []string{"PaymentPrepared", "PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}
		if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, want) {
			t.Fatalf("the payment holds %v; want %v", got, want)
		}

		// The refund fails on the first delivery of another such success: it stays
		// due, and the redelivery makes it.
		p.failures.Store(1)
		again, theirs := prepared(t, h, "down")
		ev = payment.ProviderEvent{Provider: "stripe", EventID: "evt_down", Kind: payment.ProviderSucceeded, Reference: again, PaymentID: theirs, Amount: 1, Currency: "EUR", Digest: "d"}
		if res, err := h.ApplyProviderEvent(ctx, ev); err == nil || !res.Payment.RefundDue() {
			t.Fatalf("the first delivery while refunds fail: %+v, %v; want an error, the refund due", res.Payment, err)
		}
		if res, err := h.ApplyProviderEvent(ctx, ev); err != nil || !res.Duplicate || res.Payment.Refund != payment.RefundStatusRequested {
			t.Fatalf("the redelivery: %+v, %v; want the refund made", res, err)
		}
		refunds := 0
		for _, call := range p.called() {
			if call == "refund "+theirs {
				refunds++
			}
		}
		if refunds != 1 {
			t.Errorf("the provider made %d refunds of %s; want 1", refunds, theirs)
		}
	})
}

// genericSuccess is the generic provider's payment.succeeded for ref under event
// id id, stating paymentID, amount and currency where they are not empty or 0.
func genericSuccess(ref, id, paymentID string, amount int64, currency string) payment.ProviderEvent {
	ev := payment.ProviderEvent{Provider: generic.Name, EventID: id, Kind: payment.ProviderSucceeded, Reference: ref,
		PaymentID: paymentID, Amount: amount, Currency: currency, Digest: "d-" + id}
	if paymentID == "" {
		ev.Unstated |= payment.FactPaymentID
	}
	if amount == 0 {
		ev.Unstated |= payment.FactAmount
	}
	if currency == "" {
		ev.Unstated |= payment.FactCurrency
	}
	return ev
}

// lastOf decodes the last event of type E in ref's payment stream, the zero E if
// there is none.
func lastOf[E payment.Event](t *testing.T, store eventstore.Store, ref string) E {
	t.Helper()
	var zero E
	recs, err := store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Type == zero.EventType() {
			e, err := eventstore.Decode[E](recs[i], payment.DecodeEvent)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
	}
	return zero
}

// rentalFor makes a rental of bike, its bike registered and requested, with its
// payment of 1500 EUR prepared at the handler's provider, and returns its id.
func rentalFor(t *testing.T, h *command.Handler, bike string) string {
	t.Helper()
	id := rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: bike}, rental.RequestBike{BikeID: bike, Renter: "alice", RentalID: id}} {
		if _, err := h.Bike(context.Background(), c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	prep := payment.PreparePayment{Reference: payment.ReferenceFor(id), PaymentID: "set-by-the-provider", Amount: 1500, Currency: "EUR"}
	if _, err := h.Payment(context.Background(), prep, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	return id
}
