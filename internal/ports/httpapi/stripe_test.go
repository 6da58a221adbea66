package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

const stripeSecret = "whsec_api_test_0123456789abcdef"

// stripeEvent returns a recorded Stripe event of the adapter's testdata, made about
// our payment: its reference and PaymentIntent id, under event id id.
func stripeEvent(t *testing.T, name, id, ref, intent string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "provider", "stripe", "testdata", "events", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(raw), "rp_01JZ8K3M6Q2W4E5R7T9YAB", ref)
	body = strings.ReplaceAll(body, "pi_3TbC4nLkdIwHu7ix0yXq2aZd", intent)
	var event map[string]any
	if err := json.Unmarshal([]byte(body), &event); err != nil {
		t.Fatal(err)
	}
	event["id"] = id
	out, _ := json.Marshal(event)
	return string(out)
}

func stripeSigned(body string, at time.Time) map[string]string {
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: stripeSecret, Timestamp: at})
	return map[string]string{stripe.SignatureHeader: signed.Header}
}

// TestStripeWebhooksEndToEnd runs Stripe's side of a rental through the API with the
// real Stripe adapter against stripe-mock: a payment made at Stripe, its success
// applied once, and a payment that succeeds after the sweep gave up on it refunded
// through Stripe and then confirmed refunded.
func TestStripeWebhooksEndToEnd(t *testing.T) {
	mock := stripemock.Start(t)
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: stripeSecret, APIURL: mock.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, eventstore.NewMemory(), nil, command.WithProvider(provider))
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Stripe: provider, Now: func() time.Time { return h.now }})
	ctx := context.Background()
	prepare := func(bike string) (string, string, string) {
		rentalID := h.rentBike(bike, "renter-"+bike)
		ref := payment.ReferenceFor(rentalID)
		res, err := h.commands.Payment(ctx, payment.PreparePayment{Reference: ref, Amount: 1500, Currency: "EUR", PaymentID: "set-by-the-provider"}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.State.PaymentID, "pi_") || res.State.ClientSecret == "" {
			t.Fatalf("prepared at Stripe: %+v", res.State)
		}
		return rentalID, ref, res.State.PaymentID
	}

	rentalID, ref, intent := prepare("s1")
	view := h.expect(http.MethodGet, "/rentals/"+rentalID, "", as("renter-s1"), http.StatusOK)
	if p := view.body["payment"].(map[string]any); p["paymentId"] != intent || p["clientSecret"] == "" || p["clientSecret"] == nil {
		t.Errorf("the renter's view lacks what pays: %s", view.raw)
	}
	if strings.Contains(h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK).raw, "_secret_") {
		t.Errorf("an operator was shown the client secret")
	}
	paid := stripeEvent(t, "payment_intent.succeeded", "evt_api_1", ref, intent)
	for range 2 {
		if r := h.expect(http.MethodPost, "/webhooks/stripe", paid, with(anonymous, stripeSigned(paid, h.now)), http.StatusOK); r.str("status") != "confirmed" {
			t.Errorf("payment_intent.succeeded: %s", r.raw)
		}
	}
	for name, hdr := range map[string]map[string]string{
		"no signature":                              {},
		"a stale signature":                         stripeSigned(paid, h.now.Add(-10*time.Minute)),
		"the generic header":                        signed(secret, paid, h.now),
		"a malformed header":                        {stripe.SignatureHeader: "t=1,v1=00"},
		"a signature for a body altered afterwards": stripeSigned(strings.Replace(paid, ref, "rp_someone_else", 1), h.now),
	} {
		if r := h.do(http.MethodPost, "/webhooks/stripe", paid, with(anonymous, hdr)); r.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	foreign := stripeEvent(t, "payment_intent.succeeded.foreign", "evt_api_2", ref, intent)
	if r := h.expect(http.MethodPost, "/webhooks/stripe", foreign, with(anonymous, stripeSigned(foreign, h.now)), http.StatusOK); r.raw != `{"ignored":true}` {
		t.Errorf("an event about someone else's object: %s", r.raw)
	}

	// The sweep gives up (Stripe cancels), then Stripe reports a success anyway, as
	// when the cancellation timed out: the money goes back through Stripe.
	_, late, lateIntent := prepare("s2")
	if _, err := h.commands.Payment(ctx, payment.CancelPayment{Reference: late}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	lateBody := stripeEvent(t, "payment_intent.succeeded", "evt_api_3", late, lateIntent)
	r := h.expect(http.MethodPost, "/webhooks/stripe", lateBody, with(anonymous, stripeSigned(lateBody, h.now)), http.StatusOK)
	if r.str("status") != "cancelled" || r.str("refund") != "requested" {
		t.Errorf("a success after the cancellation: %s", r.raw)
	}
	refunded := stripeEvent(t, "charge.refunded", "evt_api_4", late, lateIntent)
	if r := h.expect(http.MethodPost, "/webhooks/stripe", refunded, with(anonymous, stripeSigned(refunded, h.now)), http.StatusOK); r.str("refund") != "refunded" {
		t.Errorf("charge.refunded: %s", r.raw)
	}
	s, _, _ := h.commands.LoadPayment(ctx, late)
	if s.Status != payment.StatusCancelled || !s.LateSuccess || s.Refund != payment.RefundStatusDone {
		t.Errorf("the late payment ends %+v", s)
	}
	if strings.Contains(h.logs.String(), stripeSecret) || strings.Contains(h.logs.String(), "_secret_") {
		t.Errorf("the logs carry a secret")
	}
}
