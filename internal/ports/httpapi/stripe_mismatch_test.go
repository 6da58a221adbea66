package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// stripeCall is one request the adapter sent to Stripe.
type stripeCall struct {
	method, path string
	form         url.Values
}

// stripeTap records the adapter's requests on their way to stripe-mock, and with
// succeeded set answers a cancellation as Stripe does for a PaymentIntent that
// already succeeded (stripe-mock keeps no state, so it cannot).
type stripeTap struct {
	next      http.RoundTripper
	mu        sync.Mutex
	calls     []stripeCall
	succeeded bool
	down      bool // answers every cancellation with Stripe's 500 api_error
}

func (tap *stripeTap) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	form, _ := url.ParseQuery(string(body))
	tap.mu.Lock()
	tap.calls = append(tap.calls, stripeCall{r.Method, r.URL.Path, form})
	succeeded, down := tap.succeeded, tap.down
	tap.mu.Unlock()
	answer := func(status int, v any) *http.Response {
		b, _ := json.Marshal(v)
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_tap"}},
			Body: io.NopCloser(bytes.NewReader(b)), Request: r}
	}
	if down && strings.HasSuffix(r.URL.Path, "/cancel") {
		return answer(http.StatusInternalServerError, map[string]any{"error": map[string]any{"type": "api_error", "message": "An unknown error occurred"}}), nil
	}
	if succeeded && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/pi_") {
		id := strings.Split(r.URL.Path, "/")[3]
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel") {
			return answer(http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
				"message": "You cannot cancel this PaymentIntent because it has a status of succeeded."}}), nil
		}
		if r.Method == http.MethodGet {
			return answer(http.StatusOK, map[string]any{"id": id, "object": "payment_intent", "status": "succeeded", "amount": 1500, "currency": "eur"}), nil
		}
	}
	return tap.next.RoundTrip(r)
}

func (tap *stripeTap) since(n int) []stripeCall {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return slices.Clone(tap.calls[n:])
}

func (tap *stripeTap) count() int {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return len(tap.calls)
}

// stripeEventWith is stripeEvent with its object changed by change.
func stripeEventWith(t *testing.T, name, id, ref, intent string, change func(object map[string]any)) string {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal([]byte(stripeEvent(t, name, id, ref, intent)), &e); err != nil {
		t.Fatal(err)
	}
	change(e["data"].(map[string]any)["object"].(map[string]any))
	b, _ := json.Marshal(e)
	return string(b)
}

// TestStripeEventsApplyOnlyToThePaymentIntentRecorded sends signed Stripe events
// through the API with the real adapter against stripe-mock: an event that names
// our reference in its metadata but another PaymentIntent, amount or currency is
// acknowledged, is not applied and is recorded as a mismatch; the money a success
// took on another PaymentIntent is refunded on that one, and a success on ours for
// another amount or currency gives the payment up and is refunded on ours, for
// what it took; the currency Stripe writes in lower case matches the one recorded
// in upper case.
func TestStripeEventsApplyOnlyToThePaymentIntentRecorded(t *testing.T) {
	mock := stripemock.Start(t)
	tap := &stripeTap{next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: stripeSecret, APIURL: mock.URL, HTTPClient: &http.Client{Transport: tap}})
	if err != nil {
		t.Fatal(err)
	}
	store := eventstore.NewMemory()
	h := newHarness(t, store, nil, command.WithProvider(provider))
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Stripe: provider, Now: func() time.Time { return h.now }})
	ctx := context.Background()
	prepare := func(bike string) (string, string) {
		ref := payment.ReferenceFor(h.rentBike(bike, "renter-"+bike))
		res, err := h.commands.Payment(ctx, payment.PreparePayment{Reference: ref, Amount: 1500, Currency: "EUR", PaymentID: "set-by-the-provider"}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		return ref, res.State.PaymentID
	}
	send := func(body string) reply {
		t.Helper()
		return h.expect(http.MethodPost, "/webhooks/stripe", body, with(anonymous, stripeSigned(body, h.now)), http.StatusOK)
	}
	const other = "pi_3TbC4nLkdIwHu7ixSomeoneElse"

	for i, c := range []struct {
		name, intent string
		change       func(map[string]any)
		refundOn     string        // the PaymentIntent refunded as a mismatch's money, "" for none
		taken        payment.Money // what a success on ours took, given up and refunded on ours
	}{
		{"another PaymentIntent, 1 cent in another currency", other, func(o map[string]any) { o["amount"], o["amount_received"], o["currency"] = 1, 1, "usd" }, other, payment.Money{}},
		{"our PaymentIntent for another amount", "", func(o map[string]any) { o["amount"], o["amount_received"] = 1499, 1499 }, "", payment.Money{Amount: 1499, Currency: "EUR"}},
		{"our PaymentIntent in another currency", "", func(o map[string]any) { o["currency"] = "usd" }, "", payment.Money{Amount: 1500, Currency: "USD"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref, ours := prepare("m" + strconv.Itoa(i))
			intent := c.intent
			if intent == "" {
				intent = ours
			}
			eventID := "evt_mismatch_" + strconv.Itoa(i)
			body := stripeEventWith(t, "payment_intent.succeeded", eventID, ref, intent, c.change)
			before := tap.count()
			givenUp := c.taken != (payment.Money{})
			status, refund, events := "prepared", "", []string{"PaymentPrepared"}
			if givenUp {
				status, refund, events = "cancelled", "requested", []string{"PaymentPrepared", "PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}
			}
			for delivery := range 2 {
				r := send(body)
				if r.body["mismatch"] != true || r.str("status") != status || r.str("refund") != refund || (r.body["duplicate"] == true) != (delivery > 0) {
					t.Errorf("delivery %d: %s; want the status %q, the refund %q", delivery, r.raw, status, refund)
				}
			}
			if s, _, _ := h.commands.LoadPayment(ctx, ref); s.LateSuccess != givenUp || givenUp && s.Charge() != c.taken {
				t.Errorf("the payment became %+v", s)
			}
			if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, events) {
				t.Errorf("the payment's events: %v, want %v", got, events)
			}
			var refunds []string
			for _, call := range tap.since(before) {
				if call.path == "/v1/refunds" {
					refunds = append(refunds, call.form.Get("payment_intent"))
				}
			}
			want := []string{"ProviderEventMismatched"}
			switch {
			case c.refundOn != "":
				want = append(want, "MismatchRefundRequested")
				if !slices.Equal(refunds, []string{c.refundOn}) {
					t.Errorf("refunds asked of Stripe on %v, want one on %s", refunds, c.refundOn)
				}
			case givenUp:
				if !slices.Equal(refunds, []string{ours}) {
					t.Errorf("refunds asked of Stripe on %v, want one on ours, %s", refunds, ours)
				}
			case len(refunds) != 0:
				t.Errorf("refunds asked of Stripe on %v, want none", refunds)
			}
			if got := streamTypes(t, store, command.ReceiptStreamID(stripe.Name, eventID)); !slices.Equal(got, want) {
				t.Errorf("the event's stream: %v, want %v", got, want)
			}
		})
	}

	t.Run("a currency in lower case from Stripe matches the one recorded in upper case", func(t *testing.T) {
		ref, ours := prepare("case")
		body := stripeEvent(t, "payment_intent.succeeded", "evt_case", ref, ours) // "currency": "eur"
		if !strings.Contains(body, `"currency":"eur"`) {
			t.Fatalf("the fixture's currency is not lower case: %s", body)
		}
		if r := send(body); r.str("status") != "confirmed" || r.body["mismatch"] != nil {
			t.Errorf("%s", r.raw)
		}
	})

	t.Run("payment_failed cancels the PaymentIntent at Stripe, then rejects", func(t *testing.T) {
		ref, ours := prepare("fail")
		before := tap.count()
		body := stripeEvent(t, "payment_intent.payment_failed", "evt_failed_1", ref, ours)
		if r := send(body); r.str("status") != "rejected" {
			t.Errorf("%s", r.raw)
		}
		if calls := tap.since(before); len(calls) != 1 || calls[0].method != http.MethodPost || calls[0].path != "/v1/payment_intents/"+ours+"/cancel" {
			t.Errorf("Stripe was asked %+v, want the cancellation of %s", calls, ours)
		}
	})

	t.Run("payment_failed when Stripe says the PaymentIntent already succeeded: no rejection", func(t *testing.T) {
		ref, ours := prepare("won")
		tap.mu.Lock()
		tap.succeeded = true
		tap.mu.Unlock()
		defer func() { tap.mu.Lock(); tap.succeeded = false; tap.mu.Unlock() }()
		body := stripeEvent(t, "payment_intent.payment_failed", "evt_failed_2", ref, ours)
		if r := send(body); r.str("status") != "prepared" {
			t.Errorf("%s", r.raw)
		}
		if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, []string{"PaymentPrepared"}) {
			t.Errorf("the payment's events: %v", got)
		}
		paid := stripeEvent(t, "payment_intent.succeeded", "evt_won", ref, ours)
		if r := send(paid); r.str("status") != "confirmed" || r.str("refund") != "" {
			t.Errorf("the success: %s", r.raw)
		}
	})

	t.Run("payment_failed when Stripe does not answer: 5xx, nothing recorded, and the redelivery rejects", func(t *testing.T) {
		ref, ours := prepare("down")
		tap.mu.Lock()
		tap.down = true
		tap.mu.Unlock()
		body := stripeEvent(t, "payment_intent.payment_failed", "evt_failed_3", ref, ours)
		if r := h.do(http.MethodPost, "/webhooks/stripe", body, with(anonymous, stripeSigned(body, h.now))); r.status < 500 {
			t.Errorf("Stripe down: %d %s", r.status, r.raw)
		}
		if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, []string{"PaymentPrepared"}) {
			t.Errorf("the payment's events: %v", got)
		}
		tap.mu.Lock()
		tap.down = false
		tap.mu.Unlock()
		if r := send(body); r.str("status") != "rejected" || r.body["duplicate"] != nil {
			t.Errorf("the redelivery: %s", r.raw)
		}
	})

	t.Run("event ids at the limit", func(t *testing.T) {
		ref, ours := prepare("long")
		id := "evt_" + strings.Repeat("L", payment.MaxEventIDLength-4)
		body := stripeEvent(t, "payment_intent.succeeded", id, ref, ours)
		for range 2 {
			if r := send(body); r.str("status") != "confirmed" {
				t.Errorf("an id of %d characters: %s", len(id), r.raw)
			}
		}
		body = stripeEvent(t, "payment_intent.succeeded", id+"L", ref, ours)
		if r := h.do(http.MethodPost, "/webhooks/stripe", body, with(anonymous, stripeSigned(body, h.now))); r.status != http.StatusBadRequest {
			t.Errorf("an id of %d characters: %d %s", len(id)+1, r.status, r.raw)
		}
	})
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
