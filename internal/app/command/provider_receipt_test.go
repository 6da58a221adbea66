package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestASettlementCarriesItsReceipt applies a success and a failure, each settling
// its payment: the settling event carries the provider event's receipt and no
// receipt stream is written; every later delivery of the same event finds it in
// the payment's stream and changes nothing, and the same id with another body is
// refused. On both stores.
func TestASettlementCarriesItsReceipt(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		h := command.New(store, command.WithProvider(newIntents()))
		for _, c := range []struct {
			rental string
			ev     payment.ProviderEvent
			want   string
			other  payment.ProviderEvent // the same id, another body
		}{
			{"b1", payment.ProviderEvent{Kind: payment.ProviderSucceeded, Digest: "d-s"}, "PaymentConfirmed",
				payment.ProviderEvent{Kind: payment.ProviderFailed, Reason: "declined", Digest: "d-f"}},
			{"b2", payment.ProviderEvent{Kind: payment.ProviderFailed, Reason: "declined", Digest: "d-f"}, "PaymentRejected",
				payment.ProviderEvent{Kind: payment.ProviderSucceeded, Digest: "d-s"}},
			// another body of the same kind
			{"b3", payment.ProviderEvent{Kind: payment.ProviderSucceeded, Digest: "d-1"}, "PaymentConfirmed",
				payment.ProviderEvent{Kind: payment.ProviderSucceeded, Digest: "d-2"}},
		} {
			ref, ours := prepared(t, h, c.rental)
			ev := c.ev
			ev.Provider, ev.EventID, ev.Reference, ev.PaymentID, ev.Amount, ev.Currency = "stripe", "evt_"+c.rental, ref, ours, 1500, "EUR"
			first, err := h.ApplyProviderEvent(ctx, ev)
			if err != nil || first.Duplicate {
				t.Fatalf("%s: the first delivery: %+v, %v", c.want, first, err)
			}
			if got := streamTypes(t, store, command.ReceiptStreamID(ev.Provider, ev.EventID)); len(got) != 0 {
				t.Errorf("%s: a receipt stream %v beside the settlement", c.want, got)
			}
			_, records, err := h.LoadPayment(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			last := records[len(records)-1]
			e, err := payment.DecodeEvent(last.Type, last.Data)
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := payment.ReceiptOf(e); last.Type != c.want || !ok || r != (payment.ProviderReceipt{Provider: "stripe", EventID: ev.EventID, Kind: ev.Kind, Digest: ev.Digest}) {
				t.Errorf("%s: the payment's last event is %s %s, want it with the receipt", c.want, last.Type, last.Data)
			}
			for range 3 {
				again, err := h.ApplyProviderEvent(ctx, ev)
				if err != nil || !again.Duplicate || !reflect.DeepEqual(again.Payment, first.Payment) {
					t.Errorf("%s: a redelivery: %+v, %v; want the first answer %+v as a duplicate", c.want, again, err, first)
				}
			}
			other := c.other
			other.Provider, other.EventID, other.Reference, other.PaymentID, other.Amount, other.Currency = "stripe", ev.EventID, ref, ours, 1500, "EUR"
			if _, err := h.ApplyProviderEvent(ctx, other); !errors.Is(err, command.ErrProviderEventReused) {
				t.Errorf("%s: the id reused with another body: %v", c.want, err)
			}
			if _, after, _ := h.LoadPayment(ctx, ref); len(after) != len(records) {
				t.Errorf("%s: the redeliveries appended %d events to the payment", c.want, len(after)-len(records))
			}
			if got := streamTypes(t, store, command.ReceiptStreamID(ev.Provider, ev.EventID)); len(got) != 0 {
				t.Errorf("%s: the redeliveries wrote a receipt stream %v", c.want, got)
			}
			if receipts, err := command.FindReceipts(ctx, store, "stripe", ev.EventID, ref); err != nil || len(receipts) != 1 || receipts[0].Type != c.want {
				t.Errorf("%s: FindReceipts = %+v, %v", c.want, receipts, err)
			}
		}
	})
}

// TestConcurrentDeliveriesOfASettlementRaceOnThePaymentsVersion delivers one
// success and, in another run, one failure, many times at once: one delivery
// appends, every other one loses the race on the payment's version, reloads, finds
// the receipt and answers as a duplicate. On both stores.
func TestConcurrentDeliveriesOfASettlementRaceOnThePaymentsVersion(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		provider := newIntents()
		h := command.New(store, command.WithProvider(provider))
		for _, kind := range []payment.ProviderEventKind{payment.ProviderSucceeded, payment.ProviderFailed} {
			ref, ours := prepared(t, h, "b-"+string(kind))
			ev := payment.ProviderEvent{Provider: "stripe", EventID: "evt_" + string(kind), Kind: kind, Reference: ref, PaymentID: ours, Amount: 1500, Currency: "EUR", Digest: "d"}
			const deliveries = 12
			var wg sync.WaitGroup
			results := make([]command.ProviderResult, deliveries)
			errs := make([]error, deliveries)
			for i := range deliveries {
				wg.Go(func() { results[i], errs[i] = h.ApplyProviderEvent(ctx, ev) })
			}
			wg.Wait()
			applied := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s: delivery %d: %v", kind, i, err)
				}
				if !results[i].Duplicate {
					applied++
				}
				if results[i].Payment.Status != results[0].Payment.Status {
					t.Errorf("%s: delivery %d answered %s, the first %s", kind, i, results[i].Payment.Status, results[0].Payment.Status)
				}
			}
			_, records, err := h.LoadPayment(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if applied != 1 || len(records) != 2 {
				t.Errorf("%s: %d deliveries applied, the payment holds %d events; want one, prepared and settled", kind, applied, len(records))
			}
			if receipts, err := command.FindReceipts(ctx, store, "stripe", ev.EventID, ref); err != nil || len(receipts) != 1 {
				t.Errorf("%s: %d receipts (%v), want one", kind, len(receipts), err)
			}
		}
	})
}

// TestReceiptsInTheirOwnStreamsStillAnswer: the events that settle nothing keep
// their receipt stream (a success after a cancellation, a failure after the
// success, a failure the provider answers as already succeeded), and a settlement
// recorded before receipts moved into settlements, with its receipt in a stream of
// its own, is still found: redeliveries are duplicates, the id with another body
// is refused, whichever form came first.
func TestReceiptsInTheirOwnStreamsStillAnswer(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		provider := newIntents()
		h := command.New(store, command.WithProvider(provider))
		apply := func(ev payment.ProviderEvent) (command.ProviderResult, error) {
			return h.ApplyProviderEvent(ctx, ev)
		}
		receiptTypes := func(ev payment.ProviderEvent) []string {
			return streamTypes(t, store, command.ReceiptStreamID(ev.Provider, ev.EventID))
		}

		// A success after the cancellation: the late success and its receipt stream.
		ref, ours := prepared(t, h, "c1")
		if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		provider.set(ours, "succeeded")
		late := payment.ProviderEvent{Provider: "stripe", EventID: "evt_late", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: ours, Amount: 1500, Currency: "EUR", Digest: "d"}
		if res, err := apply(late); err != nil || res.Duplicate || !res.Payment.LateSuccess {
			t.Fatalf("a late success: %+v, %v", res, err)
		}
		if got := receiptTypes(late); !slices.Equal(got, []string{"ProviderEventReceived"}) {
			t.Errorf("a late success's receipt stream: %v", got)
		}
		if res, err := apply(late); err != nil || !res.Duplicate {
			t.Errorf("a late success delivered again: %+v, %v", res, err)
		}

		// A failure after the success: nothing changes but its receipt stream.
		ref, ours = prepared(t, h, "c2")
		if _, err := apply(payment.ProviderEvent{Provider: "stripe", EventID: "evt_s2", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: ours, Amount: 1500, Currency: "EUR", Digest: "d"}); err != nil {
			t.Fatal(err)
		}
		after := payment.ProviderEvent{Provider: "stripe", EventID: "evt_f2", Kind: payment.ProviderFailed, Reason: "late", Reference: ref, PaymentID: ours, Amount: 1500, Currency: "EUR", Digest: "d"}
		if res, err := apply(after); err != nil || res.Duplicate || res.Payment.Status != payment.StatusConfirmed {
			t.Fatalf("a failure after the success: %+v, %v", res, err)
		}
		if got := receiptTypes(after); !slices.Equal(got, []string{"ProviderEventReceived"}) {
			t.Errorf("a failure after the success: receipt stream %v", got)
		}

		// A failure the provider answers as already succeeded: its receipt stream
		// only, the payment still prepared; the same id as a success (another body)
		// is refused, though it would settle the payment.
		ref, ours = prepared(t, h, "c3")
		provider.set(ours, "succeeded")
		failed := payment.ProviderEvent{Provider: "stripe", EventID: "evt_f3", Kind: payment.ProviderFailed, Reason: "declined", Reference: ref, PaymentID: ours, Amount: 1500, Currency: "EUR", Digest: "d-f"}
		if res, err := apply(failed); err != nil || res.Payment.Status != payment.StatusPrepared {
			t.Fatalf("a failure that succeeded at the provider: %+v, %v", res, err)
		}
		if got := receiptTypes(failed); !slices.Equal(got, []string{"ProviderEventReceived"}) {
			t.Errorf("a failure that succeeded at the provider: receipt stream %v", got)
		}
		reused := failed
		reused.Kind, reused.Reason, reused.Digest = payment.ProviderSucceeded, "", "d-s"
		if _, err := apply(reused); !errors.Is(err, command.ErrProviderEventReused) {
			t.Errorf("a success under the id of a failure's receipt stream: %v", err)
		}
		if s, _, _ := h.LoadPayment(ctx, ref); s.Status != payment.StatusPrepared {
			t.Errorf("the reused id settled the payment: %s", s.Status)
		}

		// A settlement recorded before receipts moved: PaymentConfirmed with the
		// event id only, its receipt in a stream of its own.
		ref, ours = prepared(t, h, "c4")
		old := payment.ProviderEvent{Provider: "stripe", EventID: "evt_old", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: ours, Amount: 1500, Currency: "EUR", Digest: "d-old"}
		_, records, err := h.LoadPayment(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		olderForm(t, store, old, records[len(records)-1].Version)
		if res, err := apply(old); err != nil || !res.Duplicate || res.Payment.Status != payment.StatusConfirmed {
			t.Errorf("an older settlement delivered again: %+v, %v", res, err)
		}
		other := old
		other.Kind, other.Reason, other.Digest = payment.ProviderFailed, "declined", "d-new"
		if _, err := apply(other); !errors.Is(err, command.ErrProviderEventReused) {
			t.Errorf("an older settlement's id with another body: %v", err)
		}
		if _, now, _ := h.LoadPayment(ctx, ref); len(now) != len(records)+1 {
			t.Errorf("the older settlement's redeliveries appended %d events", len(now)-len(records)-1)
		}
		if receipts, err := command.FindReceipts(ctx, store, "stripe", "evt_old", ref); err != nil || len(receipts) != 1 || receipts[0].Type != "ProviderEventReceived" {
			t.Errorf("FindReceipts of an older settlement: %+v, %v", receipts, err)
		}
	})
}

// olderForm records the settlement of ev as the webhook did before receipts moved
// into settlements: PaymentConfirmed naming the event id only, and the receipt
// alone in its own stream, in one write.
func olderForm(t *testing.T, store eventstore.Store, ev payment.ProviderEvent, version int64) {
	t.Helper()
	confirmed, err := json.Marshal(payment.PaymentConfirmed{Reference: ev.Reference, PaymentID: ev.PaymentID, ProviderEventID: ev.EventID})
	if err != nil {
		t.Fatal(err)
	}
	receipt, err := json.Marshal(command.ProviderEventReceived{Provider: ev.Provider, EventID: ev.EventID, Kind: ev.Kind, Reference: ev.Reference, Digest: ev.Digest})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.(eventstore.MultiStreamStore).AppendStreams(context.Background(),
		eventstore.StreamAppend{StreamID: command.ReceiptStreamID(ev.Provider, ev.EventID), Events: []eventstore.Event{{ID: "old-receipt-" + ev.EventID, Type: "ProviderEventReceived", Data: receipt}}},
		eventstore.StreamAppend{StreamID: payment.StreamID(ev.Reference), ExpectedVersion: version, Events: []eventstore.Event{{ID: "old-confirmed-" + ev.EventID, Type: "PaymentConfirmed", Data: confirmed}}},
	)
	if err != nil {
		t.Fatal(err)
	}
}
