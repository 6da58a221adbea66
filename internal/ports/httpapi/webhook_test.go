package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// event returns the body of a generic provider's webhook.
func event(id, typ, ref, reason string) string {
	b, _ := json.Marshal(generic.Event{ID: id, Type: typ, PaymentReference: ref, Reason: reason})
	return string(b)
}

// notify sends the generic provider's webhook, signed with the harness's secret now,
// and expects status.
func (h *harness) notify(id, typ, ref, reason string, status int) reply {
	h.t.Helper()
	body := event(id, typ, ref, reason)
	return h.expect(http.MethodPost, "/webhooks/payments", body, with(anonymous, signed(secret, body, h.now)), status)
}

// paid plays the provider reporting the payment's success.
func (h *harness) paid(ref, eventID string) reply {
	h.t.Helper()
	return h.notify(eventID, generic.TypeSucceeded, ref, "", http.StatusOK)
}

// TestAWebhookSignatureBindsWhatItAsserts replays the attack that a signature over
// an empty body allowed: one captured header confirming payment A, then B, and
// rejecting C. Each signature covers the event, the payment and the outcome.
func TestAWebhookSignatureBindsWhatItAsserts(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		a, b := h.prepare(h.rentBike("b1", "alice")), h.prepare(h.rentBike("b2", "bob"))
		captured := event("evt-a", generic.TypeSucceeded, a, "")
		header := signed(secret, captured, h.now)
		for name, body := range map[string]string{
			"the reference altered": event("evt-a", generic.TypeSucceeded, b, ""),
			"the type altered":      event("evt-a", generic.TypeFailed, a, "card declined"),
			"another event":         event("evt-c", generic.TypeFailed, b, ""),
			"white space added":     captured + " ",
		} {
			r := h.expect(http.MethodPost, "/webhooks/payments", body, with(anonymous, header), http.StatusUnauthorized)
			if !strings.HasSuffix(r.str("type"), "#problem-unauthorized") {
				t.Errorf("%s: %s", name, r.raw)
			}
		}
		for name, hdr := range map[string]map[string]string{
			"no signature":       {},
			"another secret":     signed([]byte("another-secret-0123456789"), captured, h.now),
			"a stale timestamp":  signed(secret, captured, h.now.Add(-6*time.Minute)),
			"a future timestamp": signed(secret, captured, h.now.Add(6*time.Minute)),
			"a malformed header": {webhook.Header: "v1=abc"},
		} {
			if r := h.expect(http.MethodPost, "/webhooks/payments", captured, with(anonymous, hdr), http.StatusUnauthorized); strings.Contains(r.raw, string(secret)) {
				t.Errorf("%s: the answer reveals the secret", name)
			}
		}
		for _, ref := range []string{a, b} {
			if n := h.streamLen(payment.StreamID(ref)); n != 1 {
				t.Errorf("refused webhooks wrote to %s: %d events", ref, n)
			}
		}
		h.expect(http.MethodPost, "/webhooks/payments", captured, with(anonymous, header), http.StatusOK)
		if n := h.streamLen(payment.StreamID(b)); n != 1 {
			t.Errorf("A's signature changed B")
		}
	})
}

// TestBadWebhookBodiesChangeNothing sends authentic signatures over bodies the
// provider never sends.
func TestBadWebhookBodiesChangeNothing(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	ref := h.prepare(h.rentBike("b1", "alice"))
	unknown := payment.ReferenceFor(rental.NewRentalID("b9", "AAAAAAAAAAAAAAAAAAAAAA"))
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"not JSON", `{"id":`, 400},
		{"an unknown field", `{"id":"e1","type":"payment.succeeded","paymentReference":"` + ref + `","price":1}`, 400},
		{"a member twice", `{"id":"e1","type":"payment.failed","type":"payment.succeeded","paymentReference":"` + ref + `"}`, 400},
		{"a member in another case", `{"id":"e1","TYPE":"payment.succeeded","paymentReference":"` + ref + `"}`, 400},
		{"an unknown type", event("e1", "payment.refunded", ref, ""), 400},
		{"no id", event("", generic.TypeSucceeded, ref, ""), 400},
		{"an id with a space", event("e 1", generic.TypeSucceeded, ref, ""), 400},
		{"a reason on a success", event("e1", generic.TypeSucceeded, ref, "why"), 400},
		{"a reason too long", event("e1", generic.TypeFailed, ref, strings.Repeat("r", 501)), 400},
		{"not a reference", event("e1", generic.TypeSucceeded, "not-a-reference", ""), 400},
		{"data after the event", event("e1", generic.TypeSucceeded, ref, "") + "]", 400},
		{"an unknown reference", event("e1", generic.TypeSucceeded, unknown, ""), 404},
		{"oversized", `{"id":"e1","type":"payment.failed","paymentReference":"` + ref + `","reason":"` + strings.Repeat("x", httpapi.MaxWebhookBodyBytes) + `"}`, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.expect(http.MethodPost, "/webhooks/payments", tc.body, with(anonymous, signed(secret, tc.body, h.now)), tc.status)
		})
	}
	if n := h.streamLen(payment.StreamID(ref)); n != 1 {
		t.Errorf("bad bodies wrote %d events to the payment", n-1)
	}
	if n := h.streamLen(command.ReceiptStreamID(generic.Name, "e1")); n != 0 {
		t.Errorf("a bad body left a receipt")
	}
	// The same event id again with another body is refused, not applied.
	h.paid(ref, "e2")
	r := h.notify("e2", generic.TypeFailed, ref, "card declined", http.StatusUnprocessableEntity)
	if !strings.HasSuffix(r.str("type"), "#problem-webhook-event-reused") {
		t.Errorf("a reused event id: %s", r.raw)
	}
	if s, _, _ := h.commands.LoadPayment(context.Background(), ref); s.Status != payment.StatusConfirmed {
		t.Errorf("the reused id changed the payment to %s", s.Status)
	}
}

// TestAWebhookDeliveredFiftyTimesAtOnceHasOneEffect delivers one event fifty times
// concurrently, on both stores.
func TestAWebhookDeliveredFiftyTimesAtOnceHasOneEffect(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		ref := h.prepare(h.rentBike("b1", "alice"))
		body := event("evt-dup", generic.TypeSucceeded, ref, "")
		const deliveries = 50
		answers := make([]string, deliveries)
		var wg sync.WaitGroup
		for i := range deliveries {
			wg.Go(func() {
				req := h.request(http.MethodPost, "/webhooks/payments", body, with(anonymous, signed(secret, body, h.now)))
				resp, _ := h.api.Handle(context.Background(), req)
				answers[i] = fmt.Sprint(resp.StatusCode, strings.Replace(resp.Body, `,"duplicate":true`, "", 1))
			})
		}
		wg.Wait()
		for i, a := range answers {
			if a != answers[0] || !strings.HasPrefix(a, "200") {
				t.Fatalf("delivery %d answered %s, the first %s", i, a, answers[0])
			}
		}
		if n := h.streamLen(payment.StreamID(ref)); n != 2 {
			t.Errorf("the payment holds %d events, want prepared and confirmed once", n)
		}
		receipts, err := command.FindReceipts(context.Background(), store, generic.Name, "evt-dup", ref)
		if n := len(receipts); err != nil || n != 1 {
			t.Errorf("%d receipts for one event (%v)", n, err)
		}
	})
}

// TestEveryAuthenticEventIsAcknowledged delivers events in the orders a provider
// may: duplicated, reordered, late. Each answers 200; a success that arrives after
// the payment was given up on is recorded and owed back, and the rental stays
// ended.
func TestEveryAuthenticEventIsAcknowledged(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		ctx := context.Background()

		// A failure, then a success: the success came after the rejection.
		rejected := h.prepare(h.rentBike("b1", "alice"))
		h.notify("f-1", generic.TypeFailed, rejected, "card declined", http.StatusOK)
		if r := h.paid(rejected, "s-1"); r.str("status") != "rejected" || r.str("refund") != "owed" {
			t.Errorf("a success after the failure: %s", r.raw)
		}
		// A success, then a failure: the failure changes nothing.
		confirmed := h.prepare(h.rentBike("b2", "bob"))
		h.paid(confirmed, "s-2")
		if r := h.notify("f-2", generic.TypeFailed, confirmed, "late", http.StatusOK); r.str("status") != "confirmed" || r.str("refund") != "" {
			t.Errorf("a failure after the success: %s", r.raw)
		}
		// Cancelled by the sweep, then paid: refund owed, rental still cancelled.
		rentalID := h.rentBike("b3", "carol")
		late := h.prepare(rentalID)
		if _, err := h.commands.Payment(ctx, payment.CancelPayment{Reference: late}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if r := h.paid(late, "s-3"); r.str("status") != "cancelled" || r.str("refund") != "owed" {
				t.Errorf("a success after the cancellation: %s", r.raw)
			}
		}
		s, records, _ := h.commands.LoadPayment(ctx, late)
		if !s.LateSuccess || s.Refund != payment.RefundStatusOwed || len(records) != 4 {
			t.Errorf("after a late success: %+v in %d events, want prepared, cancelled, late success, refund owed", s, len(records))
		}
		h.reject(rentalID, "carol") // the process releases the bike
		view := h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK)
		if view.str("status") != "cancelled" || view.body["payment"].(map[string]any)["refund"] != "owed" {
			t.Errorf("the rental after a late success: %s", view.raw)
		}
	})
}

// TestWebhooksTakeOnlyJSON sends authentic, correctly signed events to both webhook
// routes with a Content-Type that is not JSON, or none: each is refused with 415, as
// a body of /rentals is, and changes nothing. JSON with parameters, as Stripe sends
// it (application/json; charset=utf-8), is taken.
func TestWebhooksTakeOnlyJSON(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: stripeSecret, APIURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := webhook.NewVerifier(secret, webhook.DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: verifier, Stripe: provider, Now: func() time.Time { return h.now }})
	ref := h.prepare(h.rentBike("b1", "alice"))
	genericBody := event("evt-ct", generic.TypeSucceeded, ref, "")
	// An event about a PaymentIntent that is not ours: the adapter answers it from
	// the body alone, without calling Stripe.
	foreign := stripeEvent(t, "payment_intent.succeeded.foreign", "evt_ct", ref, "pi_not_ours")
	routes := []struct {
		path, body string
		headers    map[string]string
	}{
		{"/webhooks/payments", genericBody, signed(secret, genericBody, h.now)},
		{"/webhooks/stripe", foreign, stripeSigned(foreign, h.now)},
	}
	for _, rt := range routes {
		for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "json"} {
			r := h.expect(http.MethodPost, rt.path, rt.body, with(anonymous, rt.headers, map[string]string{"Content-Type": ct}), http.StatusUnsupportedMediaType)
			if r.str("type") != "about:blank" || !strings.Contains(r.str("detail"), "application/json") {
				t.Errorf("%s with Content-Type %q: %s", rt.path, ct, r.raw)
			}
		}
	}
	if n := h.streamLen(payment.StreamID(ref)); n != 1 {
		t.Errorf("refused webhooks wrote %d events to the payment", n-1)
	}
	if n := h.streamLen(command.ReceiptStreamID(generic.Name, "evt-ct")); n != 0 {
		t.Errorf("a refused webhook left a receipt")
	}
	for _, rt := range routes {
		h.expect(http.MethodPost, rt.path, rt.body, with(anonymous, rt.headers, map[string]string{"Content-Type": "application/json; charset=utf-8"}), http.StatusOK)
	}
	if s, _, _ := h.commands.LoadPayment(context.Background(), ref); s.Status != payment.StatusConfirmed {
		t.Errorf("the accepted webhook left the payment %s", s.Status)
	}
}
