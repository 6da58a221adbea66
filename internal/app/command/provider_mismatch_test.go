package command_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// intents is a provider that holds money as Stripe does, and records every call:
// each payment id is open until it is paid or cancelled; it refunds the recorded
// payment (RefundPayment) and others (RefundUnexpected), and cancelErr makes every
// cancellation go unanswered.
type intents struct {
	unsupported
	mu        sync.Mutex
	status    map[string]string // payment id: open, succeeded or canceled
	calls     []string          // "cancel pi_x", "refund pi_x", "refund-unexpected pi_x"
	cancelErr error
	// unexpectedErr, when set, is what every RefundUnexpected answers.
	unexpectedErr error
}

func newIntents() *intents { return &intents{status: map[string]string{}} }

func (p *intents) CreatePayment(_ context.Context, ref string, _ int64, _ string) (payment.Created, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := "pi_" + ref
	if _, ok := p.status[id]; !ok {
		p.status[id] = "open"
	}
	return payment.Created{PaymentID: id, ClientSecret: id + "_secret_x"}, nil
}

func (p *intents) CancelPayment(_ context.Context, id string) (payment.CancelOutcome, payment.Told, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "cancel "+id)
	if p.cancelErr != nil {
		return payment.ProviderCannotSay, payment.Told{}, p.cancelErr
	}
	if p.status[id] == "succeeded" {
		return payment.AlreadySucceeded, payment.Told{}, nil
	}
	p.status[id] = "canceled"
	return payment.CancelledAtProvider, payment.Told{}, nil
}

func (p *intents) RefundPayment(_ context.Context, id, _ string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "refund "+id)
	return "re_" + id, nil
}

func (p *intents) RefundUnexpected(_ context.Context, id, _ string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "refund-unexpected "+id)
	if p.unexpectedErr != nil {
		return "", p.unexpectedErr
	}
	return "re_unexpected_" + id, nil
}

func (p *intents) set(id, status string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status[id] = status
}

func (p *intents) called() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// prepared prepares a payment of 1500 EUR for a new rental and returns its
// reference and provider payment id.
func prepared(t *testing.T, h *command.Handler, rental string) (string, string) {
	t.Helper()
	ref := payment.ReferenceFor(rental + "_AAAAAAAAAAAAAAAAAAAAAA")
	res, err := h.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "set-by-the-provider", Amount: 1500, Currency: "EUR"}, command.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	return ref, res.State.PaymentID
}

// streamTypes returns the types of a stream's events, in order.
func streamTypes(t *testing.T, store eventstore.Store, stream string) []string {
	t.Helper()
	recs, err := store.Read(context.Background(), stream, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		types = append(types, r.Type)
	}
	return types
}

// TestAProviderEventAppliesOnlyToThePaymentRecorded: an authentic event that names
// our reference but another provider payment, or an amount or currency no payment
// can have, changes no payment, records a mismatch in the event's receipt stream,
// and sends money taken on another provider payment back on that one, never on
// ours; every redelivery changes nothing more.
func TestAProviderEventAppliesOnlyToThePaymentRecorded(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		kind       payment.ProviderEventKind
		paymentID  string // "" for the recorded one
		emptyID    bool   // the event states an empty payment id
		amount     int64
		currency   string
		cancelled  bool // the payment was given up on first
		wantFields []string
		wantCalls  []string // of the provider, on top of any cancel of the give-up
		wantRefund string   // the mismatch stream's last event
	}{
		{name: "a success on another PaymentIntent, for 1 cent in another currency", kind: payment.ProviderSucceeded, paymentID: "pi_other", amount: 1, currency: "USD",
			wantFields: []string{"paymentId", "amount", "currency"}, wantCalls: []string{"refund-unexpected pi_other"}, wantRefund: "MismatchRefundRequested"},
		{name: "a success on another PaymentIntent after the give-up", kind: payment.ProviderSucceeded, paymentID: "pi_other", amount: 1500, currency: "EUR", cancelled: true,
			wantFields: []string{"paymentId"}, wantCalls: []string{"refund-unexpected pi_other"}, wantRefund: "MismatchRefundRequested"},
		// A success on ours for another amount or currency gives the payment up
		// (TestASuccessOnOurPaymentForAnotherAmountGivesItUp); one stating what no
		// payment can have is not applied at all.
		{name: "a currency in lower case is another currency to the payment context", kind: payment.ProviderSucceeded, amount: 1500, currency: "eur",
			wantFields: []string{"currency"}},
		{name: "a failure on another PaymentIntent", kind: payment.ProviderFailed, paymentID: "pi_other", amount: 1500, currency: "EUR",
			wantFields: []string{"paymentId"}},
		{name: "a cancellation on another PaymentIntent", kind: payment.ProviderCancelled, paymentID: "pi_other", amount: 1500, currency: "EUR",
			wantFields: []string{"paymentId"}},
		// What an event states as 0 or "" is a fact like any other, never "not said".
		{name: "a success for 0 on no payment id", kind: payment.ProviderSucceeded, emptyID: true, amount: 0, currency: "EUR",
			wantFields: []string{"paymentId", "amount"}},
		{name: "a success for 0", kind: payment.ProviderSucceeded, amount: 0, currency: "EUR",
			wantFields: []string{"amount"}},
		{name: "a success on no payment id", kind: payment.ProviderSucceeded, emptyID: true, amount: 1500, currency: "EUR",
			wantFields: []string{"paymentId"}},
		{name: "a success in no currency", kind: payment.ProviderSucceeded, amount: 1500, currency: "",
			wantFields: []string{"currency"}},
		{name: "a success for more than any payment", kind: payment.ProviderSucceeded, amount: payment.MaxAmount + 1, currency: "EUR",
			wantFields: []string{"amount"}},
		{name: "a failure for 0", kind: payment.ProviderFailed, amount: 0, currency: "EUR",
			wantFields: []string{"amount"}},
		{name: "a refund of a charge of no PaymentIntent", kind: payment.ProviderRefunded, emptyID: true, amount: 1500, currency: "EUR", cancelled: true,
			wantFields: []string{"paymentId"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := eventstore.NewMemory()
			p := newIntents()
			h := command.New(store, command.WithProvider(p))
			ref, ours := prepared(t, h, "b1")
			if c.cancelled {
				if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
					t.Fatal(err)
				}
			}
			before, _, _ := h.LoadPayment(ctx, ref)
			paymentEvents := streamTypes(t, store, payment.StreamID(ref))
			callsBefore := len(p.called())
			id := c.paymentID
			if id == "" && !c.emptyID {
				id = ours
			}
			if id == "pi_other" {
				p.set(id, "succeeded")
			}
			ev := payment.ProviderEvent{Provider: "stripe", EventID: "evt_1", Kind: c.kind, Reference: ref, PaymentID: id, Amount: c.amount, Currency: c.currency, Digest: "d1"}
			for delivery := range 3 {
				res, err := h.ApplyProviderEvent(ctx, ev)
				if err != nil {
					t.Fatalf("delivery %d: %v", delivery, err)
				}
				if res.Mismatch == nil || !slices.Equal(res.Mismatch.Fields, c.wantFields) || res.Duplicate != (delivery > 0) {
					t.Fatalf("delivery %d: %+v, mismatch %+v; want the fields %v", delivery, res, res.Mismatch, c.wantFields)
				}
				if res.Mismatch.RecordedPaymentID != ours || res.Mismatch.PaymentID != id || res.Mismatch.EventID != "evt_1" {
					t.Errorf("the mismatch recorded %+v", res.Mismatch)
				}
				if !reflect.DeepEqual(res.Payment, before) {
					t.Errorf("delivery %d answers the payment %+v, before it was %+v", delivery, res.Payment, before)
				}
			}
			after, _, _ := h.LoadPayment(ctx, ref)
			if !reflect.DeepEqual(after, before) || !slices.Equal(streamTypes(t, store, payment.StreamID(ref)), paymentEvents) {
				t.Errorf("the payment changed: %+v, events %v", after, streamTypes(t, store, payment.StreamID(ref)))
			}
			if got := p.called()[callsBefore:]; !slices.Equal(got, c.wantCalls) {
				t.Errorf("the provider was asked %v, want %v", got, c.wantCalls)
			}
			want := []string{"ProviderEventMismatched"}
			if c.wantRefund != "" {
				want = append(want, c.wantRefund)
			}
			if got := streamTypes(t, store, command.ReceiptStreamID("stripe", "evt_1")); !slices.Equal(got, want) {
				t.Errorf("the event's stream holds %v, want %v", got, want)
			}
			// The same event id with another body is still refused.
			other := ev
			other.Digest = "d2"
			if _, err := h.ApplyProviderEvent(ctx, other); !errors.Is(err, command.ErrProviderEventReused) {
				t.Errorf("the id reused for another body: %v", err)
			}
		})
	}
}

// TestAMatchingEventStillApplies: what an event leaves unstated (Unstated) is not
// compared, and what it states right applies as before.
func TestAMatchingEventStillApplies(t *testing.T) {
	ctx := context.Background()
	for _, ev := range []payment.ProviderEvent{
		{Kind: payment.ProviderSucceeded, Amount: 1500, Currency: "EUR"},
		{Kind: payment.ProviderSucceeded, Unstated: payment.FactAmount | payment.FactCurrency},
	} {
		store := eventstore.NewMemory()
		h := command.New(store, command.WithProvider(newIntents()))
		ref, ours := prepared(t, h, "b1")
		ev.Provider, ev.EventID, ev.Reference, ev.PaymentID, ev.Digest = "stripe", "evt_1", ref, ours, "d"
		res, err := h.ApplyProviderEvent(ctx, ev)
		if err != nil || res.Mismatch != nil || res.Payment.Status != payment.StatusConfirmed {
			t.Errorf("%+v: %+v, %v", ev, res, err)
		}
		// Its receipt is the confirmation's.
		receipts, err := command.FindReceipts(ctx, store, "stripe", "evt_1", ref)
		if err != nil || len(receipts) != 1 || receipts[0].Type != "PaymentConfirmed" || receipts[0].Digest != "d" {
			t.Errorf("the receipt: %+v, %v", receipts, err)
		}
	}
}

// TestMoneyOnAnUnexpectedPaymentIsOwedWhereTheProviderCannotRefund: the generic
// provider cannot refund, so money it reports taken on another payment id is owed.
func TestMoneyOnAnUnexpectedPaymentIsOwedWhereTheProviderCannotRefund(t *testing.T) {
	ctx := context.Background()
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(generic.Provider{}))
	ref, _ := prepared(t, h, "b1")
	ev := payment.ProviderEvent{Provider: generic.Name, EventID: "e1", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: "pay_someone_else", Amount: 1500, Currency: "EUR", Digest: "d"}
	res, err := h.ApplyProviderEvent(ctx, ev)
	if err != nil || res.Mismatch == nil || !res.Mismatch.RefundDue || res.Payment.Status != payment.StatusPrepared {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := streamTypes(t, store, command.ReceiptStreamID(generic.Name, "e1")); !slices.Equal(got, []string{"ProviderEventMismatched", "MismatchRefundOwed"}) {
		t.Errorf("the event's stream: %v", got)
	}
}

// TestMoneyOnAnUnexpectedPaymentAlreadyRefundedIsNotAskedAgain: a provider that
// answers the refund of money taken on another of its payments with "refunded
// already" (payment.ErrAlreadyRefunded) closes the mismatch's refund: nothing is
// owed, the delivery is acknowledged, and a redelivery asks the provider nothing.
func TestMoneyOnAnUnexpectedPaymentAlreadyRefundedIsNotAskedAgain(t *testing.T) {
	ctx := context.Background()
	store := eventstore.NewMemory()
	p := newIntents()
	p.unexpectedErr = fmt.Errorf("stripe: refund payment: %w", payment.ErrAlreadyRefunded)
	h := command.New(store, command.WithProvider(p))
	ref, _ := prepared(t, h, "b1")
	ev := payment.ProviderEvent{Provider: "", EventID: "e1", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: "pi_someone_else", Amount: 1500, Currency: "EUR", Digest: "d"}
	res, err := h.ApplyProviderEvent(ctx, ev)
	if err != nil || res.Mismatch == nil || !res.Mismatch.RefundDue {
		t.Fatalf("%+v, %v; want the mismatch acknowledged", res, err)
	}
	if got := streamTypes(t, store, command.ReceiptStreamID("", "e1")); !slices.Equal(got, []string{"ProviderEventMismatched", "MismatchRefundRequested"}) {
		t.Errorf("the event's stream: %v, want the refund closed as made", got)
	}
	if _, err := h.ApplyProviderEvent(ctx, ev); err != nil {
		t.Fatalf("the redelivery: %v", err)
	}
	if got := p.called(); len(got) != 1 {
		t.Errorf("the provider was asked %v, want the one refund", got)
	}
}

// TestMoneyOnAnUnexpectedPaymentWhoseRefundFailedIsOwed: the refund of money taken
// on another provider payment may fail at the bank afterwards (refund.failed, naming
// that payment). The money is back with the provider, so it is refunded there again,
// and, when the provider refuses (Stripe answers the same failed Refund under the
// same key), owed by hand, in the failure's own stream; a redelivery asks nothing
// more.
func TestMoneyOnAnUnexpectedPaymentWhoseRefundFailedIsOwed(t *testing.T) {
	ctx := context.Background()
	store := eventstore.NewMemory()
	p := newIntents()
	h := command.New(store, command.WithProvider(p))
	ref, _ := prepared(t, h, "b1")
	took := payment.ProviderEvent{EventID: "e1", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: "pi_someone_else", Amount: 1500, Currency: "EUR", Digest: "d1"}
	if res, err := h.ApplyProviderEvent(ctx, took); err != nil || res.Mismatch == nil || !res.Mismatch.RefundDue {
		t.Fatalf("the success on another payment: %+v, %v", res, err)
	}
	p.unexpectedErr = payment.RefusedRefund("Stripe's refund re_x is failed (expired_or_canceled_card)")
	failed := payment.ProviderEvent{EventID: "e2", Kind: payment.ProviderRefundFailed, Reference: ref, PaymentID: "pi_someone_else", Amount: 1500, Currency: "EUR",
		RefundID: "re_x", Reason: "Stripe's refund re_x failed (expired_or_canceled_card)", Digest: "d2"}
	res, err := h.ApplyProviderEvent(ctx, failed)
	if err != nil || res.Mismatch == nil || !res.Mismatch.RefundDue || res.Payment.Status != payment.StatusPrepared {
		t.Fatalf("the failed refund of the money on another payment: %+v, %v; want a mismatch whose money is due back", res, err)
	}
	if got := streamTypes(t, store, command.ReceiptStreamID("", "e2")); !slices.Equal(got, []string{"ProviderEventMismatched", "MismatchRefundOwed"}) {
		t.Errorf("the failure's stream: %v, want the money owed", got)
	}
	if _, err := h.ApplyProviderEvent(ctx, failed); err != nil {
		t.Fatalf("the redelivery: %v", err)
	}
	if got := p.called(); !slices.Equal(got, []string{"refund-unexpected pi_someone_else", "refund-unexpected pi_someone_else"}) {
		t.Errorf("the provider was asked %v, want the refund, then once again after it failed", got)
	}
}

// TestAFailureCancelsAtTheProviderBeforeItRejects: a failed card leaves the payment
// payable at a provider such as Stripe, so a failure is a rejection only once the
// provider cancelled the payment; a provider that says it already succeeded wins
// (the success confirms it); one that does not answer gets an error back, nothing
// is recorded, and the redelivery rejects.
func TestAFailureCancelsAtTheProviderBeforeItRejects(t *testing.T) {
	ctx := context.Background()
	failed := func(ref, id, eventID string) payment.ProviderEvent {
		return payment.ProviderEvent{Provider: "stripe", EventID: eventID, Kind: payment.ProviderFailed, Reference: ref, PaymentID: id,
			Amount: 1500, Currency: "EUR", Reason: "Your card was declined.", Digest: "d-" + eventID}
	}

	t.Run("cancelled at the provider, then rejected", func(t *testing.T) {
		store := eventstore.NewMemory()
		p := newIntents()
		h := command.New(store, command.WithProvider(p))
		ref, id := prepared(t, h, "b1")
		res, err := h.ApplyProviderEvent(ctx, failed(ref, id, "evt_f"))
		if err != nil || res.Payment.Status != payment.StatusRejected {
			t.Fatalf("%+v, %v", res, err)
		}
		if got := p.called(); !slices.Equal(got, []string{"cancel " + id}) {
			t.Errorf("the provider was asked %v", got)
		}
		if _, err := h.ApplyProviderEvent(ctx, failed(ref, id, "evt_f")); err != nil || len(p.called()) != 1 {
			t.Errorf("a redelivery: %v, the provider asked %v", err, p.called())
		}
	})

	t.Run("already succeeded at the provider: no rejection", func(t *testing.T) {
		store := eventstore.NewMemory()
		p := newIntents()
		h := command.New(store, command.WithProvider(p))
		ref, id := prepared(t, h, "b1")
		p.set(id, "succeeded") // the renter paid with another card meanwhile
		res, err := h.ApplyProviderEvent(ctx, failed(ref, id, "evt_f"))
		if err != nil || res.Payment.Status != payment.StatusPrepared {
			t.Fatalf("%+v, %v", res, err)
		}
		if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, []string{"PaymentPrepared"}) {
			t.Errorf("the payment's events: %v", got)
		}
		paid := payment.ProviderEvent{Provider: "stripe", EventID: "evt_s", Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: id, Amount: 1500, Currency: "EUR", Digest: "d-s"}
		if res, err := h.ApplyProviderEvent(ctx, paid); err != nil || res.Payment.Status != payment.StatusConfirmed || res.Payment.LateSuccess {
			t.Errorf("the success: %+v, %v", res, err)
		}
	})

	t.Run("the provider does not answer: an error, nothing recorded", func(t *testing.T) {
		store := eventstore.NewMemory()
		p := newIntents()
		h := command.New(store, command.WithProvider(p))
		ref, id := prepared(t, h, "b1")
		p.cancelErr = context.DeadlineExceeded
		if _, err := h.ApplyProviderEvent(ctx, failed(ref, id, "evt_f")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want the provider's error, got %v", err)
		}
		if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, []string{"PaymentPrepared"}) {
			t.Errorf("the payment's events: %v", got)
		}
		if got := streamTypes(t, store, command.ReceiptStreamID("stripe", "evt_f")); len(got) != 0 {
			t.Errorf("a receipt was written: %v", got)
		}
		p.cancelErr = nil // the provider redelivers once it answers
		if res, err := h.ApplyProviderEvent(ctx, failed(ref, id, "evt_f")); err != nil || res.Payment.Status != payment.StatusRejected || res.Duplicate {
			t.Errorf("the redelivery: %+v, %v", res, err)
		}
	})

	t.Run("a provider that cannot cancel: rejected at once", func(t *testing.T) {
		h := command.New(eventstore.NewMemory(), command.WithProvider(generic.Provider{}))
		ref, _ := prepared(t, h, "b1")
		ev := payment.ProviderEvent{Provider: generic.Name, EventID: "f1", Kind: payment.ProviderFailed, Reference: ref, Reason: "declined", Unstated: payment.AllFacts, Digest: "d"}
		if res, err := h.ApplyProviderEvent(ctx, ev); err != nil || res.Payment.Status != payment.StatusRejected {
			t.Errorf("%+v, %v", res, err)
		}
	})
}

// TestLongProviderEventIDs: every event id of up to payment.MaxEventIDLength bytes
// gets a receipt, found again on redelivery; a longer one is refused. Receipts of
// ids whose plain key fits keep that key, where every receipt stored before lives.
func TestLongProviderEventIDs(t *testing.T) {
	ctx := context.Background()
	plain := "providerevent-stripe-"
	fits := eventstore.MaxStreamIDBytes - len(plain)
	for _, n := range []int{fits, fits + 1} {
		id := "evt_" + strings.Repeat("a", n-4)
		got := command.ReceiptStreamID("stripe", id)
		if n == fits && got != plain+id {
			t.Errorf("an id of %d bytes: receipt key %q, want the plain key", n, got)
		}
		if n > fits && (strings.HasPrefix(got, plain) || len(got) > eventstore.MaxStreamIDBytes) {
			t.Errorf("an id of %d bytes: receipt key %q", n, got)
		}
	}
	if command.ReceiptStreamID("stripe", "evt_"+strings.Repeat("a", 300)) == command.ReceiptStreamID("stripe", "evt_"+strings.Repeat("a", 301)) {
		t.Error("two long ids share a receipt")
	}
	for _, n := range []int{payment.MaxEventIDLength, payment.MaxEventIDLength + 1} {
		store := eventstore.NewMemory()
		h := command.New(store, command.WithProvider(newIntents()))
		ref, id := prepared(t, h, "b1")
		ev := payment.ProviderEvent{Provider: "stripe", EventID: "evt_" + strings.Repeat("Z", n-4), Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: id, Amount: 1500, Currency: "EUR", Digest: "d"}
		res, err := h.ApplyProviderEvent(ctx, ev)
		if n > payment.MaxEventIDLength {
			if !errors.Is(err, payment.ErrWebhookMalformed) || len(streamTypes(t, store, payment.StreamID(ref))) != 1 {
				t.Errorf("an id of %d bytes: %+v, %v", n, res, err)
			}
			continue
		}
		if err != nil || res.Payment.Status != payment.StatusConfirmed {
			t.Fatalf("an id of %d bytes: %+v, %v", n, res, err)
		}
		if res, err := h.ApplyProviderEvent(ctx, ev); err != nil || !res.Duplicate {
			t.Errorf("its redelivery: %+v, %v", res, err)
		}
	}
}
