package stripe_test

// What stripe-mock cannot show, against an httptest server answering with Stripe's
// recorded responses and errors (testdata/api, shaped as in Stripe's API reference
// for the API version stripe-go pins), asserting the exact requests the adapter
// sent: idempotent creates and refunds, a cancel that Stripe refuses because the
// PaymentIntent succeeded or was cancelled before, Stripe failing, and timeouts.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	stripe "github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

func recordedProvider(t *testing.T, answer func(n int, s sent) reply) (*stripe.Provider, *fakeStripe) {
	t.Helper()
	f := newFakeStripe(t, answer)
	return newProvider(t, f.URL, f.Client()), f
}

type want struct{ method, path, key string }

func wantRequests(t *testing.T, got []sent, wants ...want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("%d requests %+v, want %d %+v", len(got), got, len(wants), wants)
	}
	for i, w := range wants {
		g := got[i]
		if g.Method != w.method || g.Path != w.path {
			t.Errorf("request %d: %s %s, want %s %s", i, g.Method, g.Path, w.method, w.path)
		}
		if w.key != "*" && g.IdempotencyKey != w.key {
			t.Errorf("request %d: Idempotency-Key %q, want %q", i, g.IdempotencyKey, w.key)
		}
		if g.RawQuery != "" {
			t.Errorf("request %d: query %q, want none", i, g.RawQuery)
		}
		wantHeaders(t, g)
	}
}

var createForm = map[string]string{
	"amount":                             "1500",
	"currency":                           "eur",
	"automatic_payment_methods[enabled]": "true",
	"metadata[reference]":                reference,
}

// TestRecordedCreateIsIdempotent: creating twice for one reference sends the same
// request twice, which Stripe answers with the first PaymentIntent; the same
// reference with another amount is Stripe's idempotency_error.
func TestRecordedCreateIsIdempotent(t *testing.T) {
	p, f := recordedProvider(t, idempotent(func(n int, s sent) reply {
		if s.Method == http.MethodPost && s.Path == "/v1/payment_intents" && n == 0 {
			return reply{status: http.StatusOK, file: "api/payment_intent.created.json"}
		}
		t.Errorf("unexpected request %d: %s %s", n, s.Method, s.Path)
		return reply{status: http.StatusInternalServerError, file: "api/error.api_error.json"}
	}))
	ctx := context.Background()
	want1 := payment.Created{PaymentID: paymentID, ClientSecret: clientSecret}
	for i := range 2 {
		got, err := p.CreatePayment(ctx, reference, 1500, "EUR")
		if err != nil || got != want1 {
			t.Fatalf("create %d = %+v, %v; want %+v", i, got, err, want1)
		}
	}
	_, err := p.CreatePayment(ctx, reference, 2000, "eur")
	var ae *stripe.APIError
	if !errors.As(err, &ae) || ae.HTTPStatus != http.StatusBadRequest || ae.Type != "idempotency_error" || stripe.IsTemporary(err) {
		t.Fatalf("create with another amount = %v, want a 400 idempotency_error, not temporary", err)
	}

	reqs := f.requests()
	wantRequests(t, reqs,
		want{http.MethodPost, "/v1/payment_intents", "create-" + reference},
		want{http.MethodPost, "/v1/payment_intents", "create-" + reference},
		want{http.MethodPost, "/v1/payment_intents", "create-" + reference})
	wantForm(t, "create", reqs[0].Form, createForm)
	wantForm(t, "create again", reqs[1].Form, createForm)
	if reqs[2].Form.Get("amount") != "2000" {
		t.Errorf("third create sent amount %q", reqs[2].Form.Get("amount"))
	}
}

func TestRecordedCancelPayment(t *testing.T) {
	cancelPath := "/v1/payment_intents/" + paymentID + "/cancel"
	getPath := "/v1/payment_intents/" + paymentID
	for _, c := range []struct {
		name     string
		replies  []reply
		outcome  payment.CancelOutcome
		requests []want
	}{
		{
			name:     "cancelled",
			replies:  []reply{{status: 200, file: "api/payment_intent.canceled.json"}},
			outcome:  payment.CancelledAtProvider,
			requests: []want{{http.MethodPost, cancelPath, "*"}},
		},
		{
			name: "already succeeded",
			replies: []reply{
				{status: 400, file: "api/error.unexpected_state.succeeded.json"},
				{status: 200, file: "api/payment_intent.succeeded.json"},
			},
			outcome:  payment.AlreadySucceeded,
			requests: []want{{http.MethodPost, cancelPath, "*"}, {http.MethodGet, getPath, ""}},
		},
		{
			name: "already cancelled",
			replies: []reply{
				{status: 400, file: "api/error.unexpected_state.canceled.json"},
				{status: 200, file: "api/payment_intent.canceled.json"},
			},
			outcome:  payment.CancelledAtProvider,
			requests: []want{{http.MethodPost, cancelPath, "*"}, {http.MethodGet, getPath, ""}},
		},
		{
			// Stripe refuses, and the PaymentIntent is processing (a debit under
			// way): money may still arrive.
			name: "processing",
			replies: []reply{
				{status: 400, file: "api/error.unexpected_state.succeeded.json"},
				{status: 200, file: "api/payment_intent.processing.json"},
			},
			outcome:  payment.ProviderCannotSay,
			requests: []want{{http.MethodPost, cancelPath, "*"}, {http.MethodGet, getPath, ""}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, f := recordedProvider(t, func(n int, s sent) reply {
				if n >= len(c.replies) {
					t.Errorf("unexpected request %d: %s %s", n, s.Method, s.Path)
					return reply{status: 500, file: "api/error.api_error.json", header: map[string]string{"Stripe-Should-Retry": "false"}}
				}
				return c.replies[n]
			})
			got, _, err := p.CancelPayment(context.Background(), paymentID)
			if err != nil || got != c.outcome {
				t.Fatalf("CancelPayment = %q, %v; want %q", got, err, c.outcome)
			}
			reqs := f.requests()
			wantRequests(t, reqs, c.requests...)
			wantForm(t, "cancel", reqs[0].Form, map[string]string{})
			if reqs[0].IdempotencyKey == "" {
				t.Error("cancel sent without an Idempotency-Key")
			}
		})
	}
}

// TestRecordedCancelFailures: whatever goes wrong, CancelPayment answers
// ProviderCannotSay with the error.
func TestRecordedCancelFailures(t *testing.T) {
	t.Parallel()
	cancelPath := "/v1/payment_intents/" + paymentID + "/cancel"

	t.Run("no such PaymentIntent", func(t *testing.T) {
		t.Parallel()
		p, f := recordedProvider(t, func(int, sent) reply { return reply{status: 404, file: "api/error.resource_missing.json"} })
		got, _, err := p.CancelPayment(context.Background(), paymentID)
		var ae *stripe.APIError
		if got != payment.ProviderCannotSay || !errors.As(err, &ae) || ae.Code != "resource_missing" || ae.HTTPStatus != 404 || ae.Param != "intent" {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and resource_missing", got, err)
		}
		if stripe.IsTemporary(err) || !strings.Contains(ae.RequestID, "req_") {
			t.Errorf("error %+v: want not temporary, with the request id", ae)
		}
		wantRequests(t, f.requests(), want{http.MethodPost, cancelPath, "*"})
	})

	t.Run("Stripe fails", func(t *testing.T) {
		t.Parallel()
		// stripe-go retries no error answered in Stripe's JSON but a 429
		// lock_timeout: a 500 api_error comes back at once.
		p, f := recordedProvider(t, func(int, sent) reply { return reply{status: 500, file: "api/error.api_error.json"} })
		got, _, err := p.CancelPayment(context.Background(), paymentID)
		var ae *stripe.APIError
		if got != payment.ProviderCannotSay || !errors.As(err, &ae) || ae.HTTPStatus != 500 || ae.Type != "api_error" || !stripe.IsTemporary(err) {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and a temporary api_error", got, err)
		}
		wantRequests(t, f.requests(), want{http.MethodPost, cancelPath, "*"})
	})

	t.Run("a gateway fails, and fails on the SDK's retries", func(t *testing.T) {
		t.Parallel()
		// An answer that is not Stripe's JSON (a load balancer's 502) is retried,
		// twice, with the same idempotency key.
		p, f := recordedProvider(t, func(int, sent) reply {
			return reply{status: 502, body: []byte("<html><body>502 Bad Gateway</body></html>")}
		})
		got, _, err := p.CancelPayment(context.Background(), paymentID)
		var ae *stripe.APIError
		if got != payment.ProviderCannotSay || err == nil || errors.As(err, &ae) || !stripe.IsTemporary(err) {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and a temporary error", got, err)
		}
		reqs := f.requests()
		wantRequests(t, reqs, want{http.MethodPost, cancelPath, "*"}, want{http.MethodPost, cancelPath, "*"}, want{http.MethodPost, cancelPath, "*"})
		if reqs[0].IdempotencyKey == "" || reqs[1].IdempotencyKey != reqs[0].IdempotencyKey || reqs[2].IdempotencyKey != reqs[0].IdempotencyKey {
			t.Errorf("the retries' Idempotency-Keys %q %q %q, want one key", reqs[0].IdempotencyKey, reqs[1].IdempotencyKey, reqs[2].IdempotencyKey)
		}
	})

	t.Run("a lock timeout is retried", func(t *testing.T) {
		t.Parallel()
		p, f := recordedProvider(t, func(n int, s sent) reply {
			if n == 0 {
				return reply{status: 429, body: []byte(`{"error":{"code":"lock_timeout","doc_url":"https://stripe.com/docs/error-codes/lock-timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request. If you see this error frequently and are making multiple concurrent requests to a single object, make your requests serially or at a lower rate.","type":"invalid_request_error"}}`)}
			}
			return reply{status: 200, file: "api/payment_intent.canceled.json"}
		})
		got, _, err := p.CancelPayment(context.Background(), paymentID)
		if err != nil || got != payment.CancelledAtProvider {
			t.Fatalf("CancelPayment = %q, %v; want cancelled after a retry", got, err)
		}
		reqs := f.requests()
		wantRequests(t, reqs, want{http.MethodPost, cancelPath, "*"}, want{http.MethodPost, cancelPath, "*"})
		if reqs[1].IdempotencyKey != reqs[0].IdempotencyKey {
			t.Errorf("the retry's Idempotency-Key %q, want %q", reqs[1].IdempotencyKey, reqs[0].IdempotencyKey)
		}
	})

	t.Run("the retrieve after a refusal fails", func(t *testing.T) {
		t.Parallel()
		p, f := recordedProvider(t, func(n int, s sent) reply {
			if n == 0 {
				return reply{status: 400, file: "api/error.unexpected_state.succeeded.json"}
			}
			return reply{status: 503, file: "api/error.api_error.json", header: map[string]string{"Stripe-Should-Retry": "false"}}
		})
		got, _, err := p.CancelPayment(context.Background(), paymentID)
		if got != payment.ProviderCannotSay || err == nil || !stripe.IsTemporary(err) {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and a temporary error", got, err)
		}
		wantRequests(t, f.requests(), want{http.MethodPost, cancelPath, "*"}, want{http.MethodGet, "/v1/payment_intents/" + paymentID, ""})
	})

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		p, f := recordedProvider(t, nil)
		f.block = true
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		got, _, err := p.CancelPayment(ctx, paymentID)
		if got != payment.ProviderCannotSay || !errors.Is(err, context.DeadlineExceeded) || !stripe.IsTemporary(err) {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and the deadline", got, err)
		}
		// The SDK does not retry once the context is done.
		wantRequests(t, f.requests(), want{http.MethodPost, cancelPath, "*"})
	})

	t.Run("the client's own timeout", func(t *testing.T) {
		t.Parallel()
		f := newFakeStripe(t, nil)
		f.block = true
		client := f.Client()
		client.Timeout = 100 * time.Millisecond
		p := newProvider(t, f.URL, client)
		got, _, err := p.CancelPayment(context.Background(), paymentID)
		if got != payment.ProviderCannotSay || err == nil || !stripe.IsTemporary(err) {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and a temporary error", got, err)
		}
		// A network timeout is retried by the SDK.
		if n := len(f.requests()); n != 3 {
			t.Errorf("%d requests, want 3 (two retries)", n)
		}
	})
}

func TestRecordedRefundPayment(t *testing.T) {
	t.Run("refunded, and refunding again is the same refund", func(t *testing.T) {
		p, f := recordedProvider(t, idempotent(func(n int, s sent) reply {
			return reply{status: 200, file: "api/refund.created.json"}
		}))
		for i := range 2 {
			got, err := p.RefundPayment(context.Background(), paymentID, reference)
			if err != nil || got != refundID {
				t.Fatalf("refund %d = %q, %v; want %q", i, got, err, refundID)
			}
		}
		reqs := f.requests()
		wantRequests(t, reqs, want{http.MethodPost, "/v1/refunds", "refund-" + reference}, want{http.MethodPost, "/v1/refunds", "refund-" + reference})
		for _, r := range reqs {
			wantForm(t, "refund", r.Form, map[string]string{"payment_intent": paymentID, "metadata[reference]": reference})
		}
	})

	t.Run("already refunded", func(t *testing.T) {
		p, f := recordedProvider(t, func(int, sent) reply { return reply{status: 400, file: "api/error.charge_already_refunded.json"} })
		_, err := p.RefundPayment(context.Background(), paymentID, reference)
		var ae *stripe.APIError
		if !errors.Is(err, payment.ErrAlreadyRefunded) || !errors.As(err, &ae) || ae.Code != "charge_already_refunded" || stripe.IsTemporary(err) {
			t.Fatalf("RefundPayment = %v, want payment.ErrAlreadyRefunded, from charge_already_refunded", err)
		}
		wantRequests(t, f.requests(), want{http.MethodPost, "/v1/refunds", "refund-" + reference})
	})

	t.Run("a refund that failed at once", func(t *testing.T) {
		body := strings.Replace(string(fixture(t, "api/refund.created.json")), `"status": "succeeded"`, `"status": "failed"`, 1)
		p, _ := recordedProvider(t, func(int, sent) reply { return reply{status: 200, body: []byte(body)} })
		_, err := p.RefundPayment(context.Background(), paymentID, reference)
		var refused *payment.RefundRefused
		if !errors.As(err, &refused) || !strings.Contains(refused.Reason, refundID) || !strings.Contains(refused.Reason, "failed") {
			t.Fatalf("RefundPayment = %v, want a payment.RefundRefused naming the failed refund", err)
		}
	})
}

// TestRecordedErrorsCarryNoSecret: Stripe embeds the PaymentIntent, client secret
// included, in a payment_intent_unexpected_state error; the adapter's errors never
// carry it, nor the secret key.
func TestRecordedErrorsCarryNoSecret(t *testing.T) {
	p, _ := recordedProvider(t, func(n int, s sent) reply {
		if s.Method == http.MethodPost && strings.HasSuffix(s.Path, "/cancel") {
			return reply{status: 400, file: "api/error.unexpected_state.succeeded.json"}
		}
		return reply{status: 400, file: "api/error.unexpected_state.succeeded.json"} // the retrieve, refused too
	})
	_, _, err := p.CancelPayment(context.Background(), paymentID)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, secret := range []string{clientSecret, testKey} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q carries a secret", err)
		}
	}
}

// TestRecordedReferenceOf finds our reference on the PaymentIntent a charge names,
// for the charge.refunded events that carry no reference of their own.
func TestRecordedReferenceOf(t *testing.T) {
	p, fake := recordedProvider(t, func(int, sent) reply { return reply{status: 200, file: "api/payment_intent.succeeded.json"} })
	ref, err := p.ReferenceOf(context.Background(), paymentID)
	if err != nil || ref != "rp_01JZ8K3M6Q2W4E5R7T9YAB" {
		t.Fatalf("ReferenceOf = %q, %v", ref, err)
	}
	wantRequests(t, fake.requests(), want{http.MethodGet, "/v1/payment_intents/" + paymentID, ""})
	if _, err := p.ReferenceOf(context.Background(), "ch_not_a_payment_intent"); err == nil {
		t.Error("an id that is not a PaymentIntent's was looked up")
	}
}
