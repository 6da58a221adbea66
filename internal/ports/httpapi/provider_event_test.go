package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// TestAWebhooksEventsNameTheProviderEventAsTheirCause: what a webhook records is
// caused by the provider's event, not by the HTTP request that carried it; the
// request's log line names both, so that one leads to the other.
func TestAWebhooksEventsNameTheProviderEventAsTheirCause(t *testing.T) {
	store := eventstore.NewMemory()
	h := newHarness(t, store, nil)
	ref := h.prepare(h.rentBike("cause1", "alice"))
	b, _ := json.Marshal(generic.Event{ID: "evt-cause-1", Type: generic.TypeSucceeded, PaymentReference: ref})
	r := h.expect(http.MethodPost, "/webhooks/payments", string(b), with(anonymous, signed(secret, string(b), h.now)), http.StatusOK)
	if r.str("status") != "confirmed" {
		t.Fatalf("the webhook: %s", r.raw)
	}
	recs, err := store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if last.Type != "PaymentConfirmed" || last.CausationID != "provider-event:generic:evt-cause-1" {
		t.Errorf("the webhook recorded %s caused by %q, want PaymentConfirmed caused by the provider's event", last.Type, last.CausationID)
	}
	requestID := r.headers["X-Request-Id"]
	found := false
	for line := range strings.SplitSeq(h.logs.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["msg"] != "request" || entry["requestId"] != requestID {
			continue
		}
		found = entry["providerEventId"] == "evt-cause-1" && entry["provider"] == generic.Name
	}
	if requestID == "" || !found {
		t.Errorf("no request line names request %q and the provider's event: %s", requestID, h.logs.String())
	}
}

// stripeHarness is the API with the real Stripe adapter against stripe-mock, and a
// payment prepared at it: its reference and PaymentIntent.
func stripeHarness(t *testing.T, store eventstore.Store, bike string) (*harness, string, string) {
	t.Helper()
	mock := stripemock.Start(t)
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: stripeSecret, APIURL: mock.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, store, nil, command.WithProvider(provider))
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Stripe: provider, Now: func() time.Time { return h.now }})
	ref := payment.ReferenceFor(h.rentBike(bike, "renter-"+bike))
	res, err := h.commands.Payment(context.Background(), payment.PreparePayment{Reference: ref, Amount: 1500, Currency: "EUR", PaymentID: "set-by-the-provider"}, command.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	return h, ref, res.State.PaymentID
}

// withDelivery is a Stripe event body with members of the event itself (not of its
// object) set.
func withDelivery(t *testing.T, body string, members map[string]any) string {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	for k, v := range members {
		e[k] = v
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// TestAStripeRedeliveryIsRecognisedByWhatDecidesItsEffect: Stripe's redelivery of
// a confirmed payment's event, with pending_webhooks counted down and other
// members that describe the delivery changed, is a duplicate (200, nothing
// recorded); the same event id for another amount, currency or status is refused
// (422 webhook-event-reused) and changes nothing.
func TestAStripeRedeliveryIsRecognisedByWhatDecidesItsEffect(t *testing.T) {
	store := eventstore.NewMemory()
	h, ref, intent := stripeHarness(t, store, "redo1")
	first := withDelivery(t, stripeEvent(t, "payment_intent.succeeded", "evt_redo_1", ref, intent), map[string]any{"pending_webhooks": 1})
	if r := h.expect(http.MethodPost, "/webhooks/stripe", first, with(anonymous, stripeSigned(first, h.now)), http.StatusOK); r.str("status") != "confirmed" || r.body["duplicate"] != nil {
		t.Fatalf("the first delivery: %s", r.raw)
	}
	before := streamTypes(t, store, payment.StreamID(ref))
	for name, members := range map[string]map[string]any{
		"the same bytes, signed again":  {"pending_webhooks": 1},
		"pending_webhooks counted down": {"pending_webhooks": 0},
		"every delivery member changed": {"pending_webhooks": 3, "request": map[string]any{"id": nil, "idempotency_key": nil}, "created": 1780049999},
	} {
		again := withDelivery(t, first, members)
		h.now = h.now.Add(time.Second)
		r := h.expect(http.MethodPost, "/webhooks/stripe", again, with(anonymous, stripeSigned(again, h.now)), http.StatusOK)
		if r.body["duplicate"] != true || r.str("status") != "confirmed" {
			t.Errorf("%s: %s, want a duplicate", name, r.raw)
		}
	}
	for name, change := range map[string]func(map[string]any){
		"another amount":   func(o map[string]any) { o["amount"], o["amount_received"] = 1499, 1499 },
		"another currency": func(o map[string]any) { o["currency"] = "usd" },
		"another status":   func(o map[string]any) { o["status"] = "processing" },
	} {
		other := withDelivery(t, stripeEventWith(t, "payment_intent.succeeded", "evt_redo_1", ref, intent, change), map[string]any{"pending_webhooks": 0})
		r := h.do(http.MethodPost, "/webhooks/stripe", other, with(anonymous, stripeSigned(other, h.now)))
		if r.status != http.StatusUnprocessableEntity || !strings.HasSuffix(r.str("type"), "webhook-event-reused") {
			t.Errorf("%s under the same id: %d %s, want 422 webhook-event-reused", name, r.status, r.raw)
		}
	}
	if after := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(after, before) {
		t.Errorf("the redeliveries changed the payment: %v, before %v", after, before)
	}
}

// TestAReceiptOfTheBodyFormStillAnswersItsRedelivery: receipts recorded before
// digests covered the effect hold the SHA-256 of the body, in the settling event
// and in a receipt stream; a redelivery of those very bytes is still a duplicate,
// and another event under the same id still refused.
func TestAReceiptOfTheBodyFormStillAnswersItsRedelivery(t *testing.T) {
	store := eventstore.NewMemory()
	h, ref, intent := stripeHarness(t, store, "old1")
	ctx := context.Background()
	bodyDigest := func(body string) string {
		sum := sha256.Sum256([]byte(body))
		return hex.EncodeToString(sum[:])
	}
	paid := stripeEvent(t, "payment_intent.succeeded", "evt_old_1", ref, intent)
	again := stripeEvent(t, "payment_intent.succeeded", "evt_old_2", ref, intent)
	// As the webhook recorded them before: the settlement carrying the body's
	// digest, and a later success's receipt in a stream of its own.
	s, records, err := h.commands.LoadPayment(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		stream  string
		version int64
		e       interface{ EventType() string }
	}{
		{payment.StreamID(ref), records[len(records)-1].Version, payment.PaymentConfirmed{Reference: ref, PaymentID: s.PaymentID,
			ProviderEventID: "evt_old_1", Provider: stripe.Name, ProviderEventDigest: bodyDigest(paid)}},
		{command.ReceiptStreamID(stripe.Name, "evt_old_2"), 0, command.ProviderEventReceived{Provider: stripe.Name, EventID: "evt_old_2",
			Kind: payment.ProviderSucceeded, Reference: ref, Digest: bodyDigest(again)}},
	} {
		data, _ := json.Marshal(w.e)
		if _, err := store.Append(ctx, w.stream, w.version, eventstore.Event{ID: "old-" + w.e.EventType(), Type: w.e.EventType(), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	before := streamTypes(t, store, payment.StreamID(ref))
	for _, body := range []string{paid, again} {
		if r := h.expect(http.MethodPost, "/webhooks/stripe", body, with(anonymous, stripeSigned(body, h.now)), http.StatusOK); r.body["duplicate"] != true || r.str("status") != "confirmed" {
			t.Errorf("the same bytes again: %s, want a duplicate", r.raw)
		}
	}
	other := stripeEventWith(t, "payment_intent.succeeded", "evt_old_1", ref, intent, func(o map[string]any) { o["amount"], o["amount_received"] = 1499, 1499 })
	if r := h.do(http.MethodPost, "/webhooks/stripe", other, with(anonymous, stripeSigned(other, h.now))); r.status != http.StatusUnprocessableEntity {
		t.Errorf("another event under an old receipt's id: %d %s, want 422", r.status, r.raw)
	}
	if after := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(after, before) {
		t.Errorf("the redeliveries changed the payment: %v, before %v", after, before)
	}
}
