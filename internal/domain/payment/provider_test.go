package payment_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// TestDisagreementsComparesEveryFactStated: a fact an event states is compared with
// what was recorded even when it is 0 or "", and only the facts it leaves unstated
// are not.
func TestDisagreementsComparesEveryFactStated(t *testing.T) {
	recorded := payment.Payment{Reference: "rp_1", PaymentID: "pay_1", Amount: 1500, Currency: "EUR", Status: payment.StatusPrepared}
	ours := payment.ProviderEvent{Kind: payment.ProviderSucceeded, Reference: "rp_1", PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}
	for _, c := range []struct {
		name   string
		change func(*payment.ProviderEvent)
		want   []string
	}{
		{"ours", func(*payment.ProviderEvent) {}, nil},
		{"nothing stated", func(e *payment.ProviderEvent) {
			e.PaymentID, e.Amount, e.Currency, e.Unstated = "", 0, "", payment.AllFacts
		}, nil},
		{"an amount of 0 stated", func(e *payment.ProviderEvent) { e.Amount = 0 }, []string{"amount"}},
		{"an empty payment id stated", func(e *payment.ProviderEvent) { e.PaymentID = "" }, []string{"paymentId"}},
		{"an empty currency stated", func(e *payment.ProviderEvent) { e.Currency = "" }, []string{"currency"}},
		{"all three empty, stated", func(e *payment.ProviderEvent) { e.PaymentID, e.Amount, e.Currency = "", 0, "" }, []string{"paymentId", "amount", "currency"}},
		{"a negative amount", func(e *payment.ProviderEvent) { e.Amount = -1500 }, []string{"amount"}},
		{"another amount", func(e *payment.ProviderEvent) { e.Amount = 1 }, []string{"amount"}},
		{"a currency in lower case", func(e *payment.ProviderEvent) { e.Currency = "eur" }, []string{"currency"}},
		{"another payment, the amount unstated", func(e *payment.ProviderEvent) {
			e.PaymentID, e.Amount, e.Unstated = "pay_2", 0, payment.FactAmount
		}, []string{"paymentId"}},
	} {
		ev := ours
		c.change(&ev)
		if got := payment.Disagreements(recorded, ev).Names(); !slices.Equal(got, c.want) {
			t.Errorf("%s: Disagreements = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAfterALateSuccessTheProviderIsComparedWithWhatItTook: once the provider's
// word that it took another amount or currency is recorded as a late success, what
// it says of its payment afterwards (a refund, its failure, the success again) is
// compared with what it took, not with what the payment was prepared for.
func TestAfterALateSuccessTheProviderIsComparedWithWhatItTook(t *testing.T) {
	s := payment.Fold([]payment.Event{
		payment.PaymentPrepared{PaymentID: "pi_1", Reference: "rp_1", Amount: 1250, Currency: "EUR"},
		payment.PaymentCancelled{Reference: "rp_1", PaymentID: "pi_1"},
		payment.PaymentSucceededAfterCancellation{Reference: "rp_1", PaymentID: "pi_1", Amount: 125000, Currency: "USD"},
	})
	for _, c := range []struct {
		amount   int64
		currency string
		want     []string
	}{{125000, "USD", nil}, {1250, "EUR", []string{"amount", "currency"}}, {125000, "EUR", []string{"currency"}}} {
		for _, kind := range []payment.ProviderEventKind{payment.ProviderRefunded, payment.ProviderRefundFailed, payment.ProviderSucceeded} {
			ev := payment.ProviderEvent{Kind: kind, Reference: "rp_1", PaymentID: "pi_1", Amount: c.amount, Currency: c.currency}
			if got := payment.Disagreements(s, ev).Names(); !slices.Equal(got, c.want) {
				t.Errorf("%s for %d %s: Disagreements = %v, want %v", kind, c.amount, c.currency, got, c.want)
			}
		}
	}
}

// TestTookIsWhatASuccessOnOurPaymentSaysItTook: a success stated on the payment
// recorded (or on no payment id) for another amount or currency says what the
// provider took, what it leaves unstated being what was recorded; a success on
// another payment, one that matches, one stating what no payment can be, and
// every other kind of event say nothing of it.
func TestTookIsWhatASuccessOnOurPaymentSaysItTook(t *testing.T) {
	recorded := payment.Payment{Reference: "rp_1", PaymentID: "pay_1", Amount: 1500, Currency: "EUR", Status: payment.StatusPrepared}
	ours := payment.ProviderEvent{Kind: payment.ProviderSucceeded, Reference: "rp_1", PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}
	for _, c := range []struct {
		name   string
		change func(*payment.ProviderEvent)
		want   payment.Money
		ok     bool
	}{
		{"one cent", func(e *payment.ProviderEvent) { e.Amount = 1 }, payment.Money{Amount: 1, Currency: "EUR"}, true},
		{"another currency", func(e *payment.ProviderEvent) { e.Currency = "USD" }, payment.Money{Amount: 1500, Currency: "USD"}, true},
		{"both", func(e *payment.ProviderEvent) { e.Amount, e.Currency = 125000, "JPY" }, payment.Money{Amount: 125000, Currency: "JPY"}, true},
		{"one cent, no payment id or currency stated", func(e *payment.ProviderEvent) {
			e.PaymentID, e.Amount, e.Currency, e.Unstated = "", 1, "", payment.FactPaymentID|payment.FactCurrency
		}, payment.Money{Amount: 1, Currency: "EUR"}, true},
		{"a currency, no amount stated", func(e *payment.ProviderEvent) {
			e.Amount, e.Currency, e.Unstated = 0, "USD", payment.FactAmount
		}, payment.Money{Amount: 1500, Currency: "USD"}, true},
		{"ours, matched", func(*payment.ProviderEvent) {}, payment.Money{}, false},
		{"another payment", func(e *payment.ProviderEvent) { e.PaymentID, e.Amount = "pay_2", 1 }, payment.Money{}, false},
		{"an amount of 0", func(e *payment.ProviderEvent) { e.Amount = 0 }, payment.Money{}, false},
		{"a currency in lower case", func(e *payment.ProviderEvent) { e.Currency = "eur" }, payment.Money{}, false},
		{"a failure for one cent", func(e *payment.ProviderEvent) { e.Kind, e.Amount = payment.ProviderFailed, 1 }, payment.Money{}, false},
		{"a refund for one cent", func(e *payment.ProviderEvent) { e.Kind, e.Amount = payment.ProviderRefunded, 1 }, payment.Money{}, false},
	} {
		ev := ours
		c.change(&ev)
		if got, ok := payment.Took(recorded, ev); got != c.want || ok != c.ok {
			t.Errorf("%s: Took = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestAnEffectDigestIsWhatDecidesTheEffect: the digest changes with every field that
// decides what an event does, has its own form, and a receipt of either form
// recognises the event it was stored for, and only that one.
func TestAnEffectDigestIsWhatDecidesTheEffect(t *testing.T) {
	ev := payment.ProviderEvent{Provider: "stripe", EventID: "evt_1", Kind: payment.ProviderSucceeded, Reference: "rp_1",
		PaymentID: "pi_1", Amount: 1500, Currency: "EUR", BodyDigest: "abc123"}
	obj := payment.ProviderObject{Type: "payment_intent.succeeded", Object: "payment_intent", ObjectID: "pi_1", Status: "succeeded"}
	first := payment.EffectDigest(ev, obj)
	if !strings.HasPrefix(first, payment.EffectDigestPrefix) || first != payment.EffectDigest(ev, obj) {
		t.Fatalf("EffectDigest = %q, want a stable digest of the effect form", first)
	}
	for name, change := range map[string]func(*payment.ProviderEvent, *payment.ProviderObject){
		"provider":  func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Provider = "generic" },
		"event id":  func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.EventID = "evt_2" },
		"kind":      func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Kind = payment.ProviderFailed },
		"reference": func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Reference = "rp_2" },
		"payment":   func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.PaymentID = "pi_2" },
		"amount":    func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Amount = 1501 },
		"currency":  func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Currency = "USD" },
		"unstated":  func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Unstated = payment.FactAmount },
		"reason":    func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.Reason = "declined" },
		"type":      func(_ *payment.ProviderEvent, o *payment.ProviderObject) { o.Type = "payment_intent.canceled" },
		"object":    func(_ *payment.ProviderEvent, o *payment.ProviderObject) { o.Object = "charge" },
		"object id": func(_ *payment.ProviderEvent, o *payment.ProviderObject) { o.ObjectID = "ch_1" },
		"status":    func(_ *payment.ProviderEvent, o *payment.ProviderObject) { o.Status = "processing" },
		// a field's text never runs into the next one's
		"a comma moved across fields": func(e *payment.ProviderEvent, _ *payment.ProviderObject) { e.EventID, e.Reference = `evt_1","rp_1`, "" },
	} {
		e, o := ev, obj
		change(&e, &o)
		if payment.EffectDigest(e, o) == first {
			t.Errorf("another %s has the same digest", name)
		}
	}
	ev.Digest = first
	for _, c := range []struct {
		stored string
		want   bool
	}{
		{first, true},     // a receipt of the effect form
		{"abc123", true},  // a receipt of the body form: the same bytes
		{"abc124", false}, // other bytes
		{"", false},       // no digest
		{payment.EffectDigestPrefix + "abc123", false},
	} {
		if got := ev.HasDigest(c.stored); got != c.want {
			t.Errorf("HasDigest(%q) = %v, want %v", c.stored, got, c.want)
		}
	}
	if (payment.ProviderEvent{Digest: first}).HasDigest("") {
		t.Error("an event without a body digest recognised an empty stored digest")
	}
}
