package stripe_test

// The adapter's outbound calls, made by the real stripe-go client, against
// stripe-mock: it checks each request against Stripe's OpenAPI specification (URL,
// method, parameter names and types, a test key) and answers with a fixture of the
// right shape. It keeps no state, so it cannot show idempotency or anything that
// depends on a PaymentIntent's status; recorded_test.go covers those.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	stripesdk "github.com/stripe/stripe-go/v85"

	stripe "github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

func mockProvider(t *testing.T) (*stripe.Provider, *recorder) {
	t.Helper()
	srv := stripemock.Start(t)
	rec := &recorder{t: t}
	return newProvider(t, srv.URL, &http.Client{Transport: rec}), rec
}

func wantHeaders(t *testing.T, s sent) {
	t.Helper()
	if s.StripeVersion != stripesdk.APIVersion {
		t.Errorf("%s %s: Stripe-Version %q, want %q", s.Method, s.Path, s.StripeVersion, stripesdk.APIVersion)
	}
	if s.Authorization != "Bearer "+testKey {
		t.Errorf("%s %s: Authorization %q, want the secret key as a bearer token", s.Method, s.Path, s.Authorization)
	}
	if s.Method == http.MethodPost && s.ContentType != "application/x-www-form-urlencoded" {
		t.Errorf("%s %s: Content-Type %q", s.Method, s.Path, s.ContentType)
	}
}

func TestMockCreatePayment(t *testing.T) {
	p, rec := mockProvider(t)
	ctx := context.Background()

	first, err := p.CreatePayment(ctx, reference, 1500, "EUR")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.PaymentID, "pi_") || !strings.HasPrefix(first.ClientSecret, "pi_") || !strings.Contains(first.ClientSecret, "_secret_") {
		t.Fatalf("created %+v: want a PaymentIntent id and its client secret", first)
	}
	second, err := p.CreatePayment(ctx, reference, 1500, "eur")
	if err != nil {
		t.Fatal(err)
	}

	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2: %+v", len(reqs), reqs)
	}
	for i, s := range reqs {
		wantHeaders(t, s)
		if s.Method != http.MethodPost || s.Path != "/v1/payment_intents" {
			t.Errorf("request %d: %s %s, want POST /v1/payment_intents", i, s.Method, s.Path)
		}
		if s.IdempotencyKey != "create-"+reference {
			t.Errorf("request %d: Idempotency-Key %q, want %q", i, s.IdempotencyKey, "create-"+reference)
		}
		if rec.replied[i] != s.IdempotencyKey {
			t.Errorf("request %d: stripe-mock reflected Idempotency-Key %q", i, rec.replied[i])
		}
		wantForm(t, "create", s.Form, map[string]string{
			"amount":                             "1500",
			"currency":                           "eur",
			"automatic_payment_methods[enabled]": "true",
			"metadata[reference]":                reference,
		})
	}
	// What makes Stripe answer the second create with the first PaymentIntent is
	// that both requests are the same, key and parameters: shown above. stripe-mock
	// keeps nothing and makes up an id each time, so it cannot show the answer
	// itself; TestRecordedCreateIsIdempotent does.
	if reqs[0].Form.Encode() != reqs[1].Form.Encode() {
		t.Errorf("the two creates differ: %v and %v", reqs[0].Form, reqs[1].Form)
	}
	t.Logf("stripe-mock answered %s, then %s (it keeps no state)", first.PaymentID, second.PaymentID)
}

func TestMockCancelPayment(t *testing.T) {
	p, rec := mockProvider(t)
	const id = "pi_3TbC4nLkdIwHu7ix0yXq2aZd"
	got, _, err := p.CancelPayment(context.Background(), id)
	if err != nil || got != payment.CancelledAtProvider {
		t.Fatalf("CancelPayment = %q, %v; want %q", got, err, payment.CancelledAtProvider)
	}
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Path != "/v1/payment_intents/"+id+"/cancel" {
		t.Fatalf("requests %+v, want one POST /v1/payment_intents/%s/cancel", reqs, id)
	}
	wantHeaders(t, reqs[0])
	wantForm(t, "cancel", reqs[0].Form, map[string]string{})
	// The SDK gives every POST an idempotency key, the same on its retries.
	if reqs[0].IdempotencyKey == "" {
		t.Error("cancel sent without an Idempotency-Key")
	}
}

func TestMockRefundPayment(t *testing.T) {
	p, rec := mockProvider(t)
	const id = "pi_3TbC4nLkdIwHu7ix0yXq2aZd"
	got, err := p.RefundPayment(context.Background(), id, reference)
	if err != nil || !strings.HasPrefix(got, "re_") {
		t.Fatalf("RefundPayment = %q, %v; want a Refund id", got, err)
	}
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Path != "/v1/refunds" {
		t.Fatalf("requests %+v, want one POST /v1/refunds", reqs)
	}
	wantHeaders(t, reqs[0])
	if reqs[0].IdempotencyKey != "refund-"+reference {
		t.Errorf("Idempotency-Key %q, want %q", reqs[0].IdempotencyKey, "refund-"+reference)
	}
	wantForm(t, "refund", reqs[0].Form, map[string]string{
		"payment_intent":      id,
		"metadata[reference]": reference,
	})
}

// TestMockRefundUnexpected: the refund of a PaymentIntent that took money under our
// reference without being the one recorded is made on that PaymentIntent, under a
// key of its own, never the one of the recorded PaymentIntent's refund.
func TestMockRefundUnexpected(t *testing.T) {
	p, rec := mockProvider(t)
	const id = "pi_3TbC4nLkdIwHu7ixSomeoneElse"
	got, err := p.RefundUnexpected(context.Background(), id, reference)
	if err != nil || !strings.HasPrefix(got, "re_") {
		t.Fatalf("RefundUnexpected = %q, %v; want a Refund id", got, err)
	}
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Path != "/v1/refunds" {
		t.Fatalf("requests %+v, want one POST /v1/refunds", reqs)
	}
	wantHeaders(t, reqs[0])
	if reqs[0].IdempotencyKey != "refund-unexpected-"+id {
		t.Errorf("Idempotency-Key %q, want %q", reqs[0].IdempotencyKey, "refund-unexpected-"+id)
	}
	wantForm(t, "refund", reqs[0].Form, map[string]string{
		"payment_intent":      id,
		"metadata[reference]": reference,
	})
}

// TestMockErrors: what stripe-mock refuses, the adapter returns as *APIError, never
// with the secret key in it.
func TestMockErrors(t *testing.T) {
	srv := stripemock.Start(t)
	ctx := context.Background()

	t.Run("a key stripe-mock refuses", func(t *testing.T) {
		// stripe-mock takes test keys only, and quotes the Authorization header it
		// refused in its message (Stripe's API masks the key): the adapter must not
		// pass it on.
		const liveKey = "sk_live_51NotARealKeyButSecretAnyway"
		p, err := stripe.New(stripe.Config{SecretKey: liveKey, WebhookSecret: webhookSecret, APIURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.CreatePayment(ctx, reference, 1500, "eur")
		var ae *stripe.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != http.StatusUnauthorized || ae.Type != "invalid_request_error" {
			t.Fatalf("CreatePayment with a refused key = %v, want a 401 APIError", err)
		}
		if strings.Contains(err.Error(), liveKey) || strings.Contains(ae.Message, liveKey) {
			t.Fatalf("the error quotes the secret key: %v", err)
		}
		if !strings.Contains(ae.Message, "[secret key]") {
			t.Errorf("message %q: want stripe-mock's echo of the key blanked out", ae.Message)
		}
		if stripe.IsTemporary(err) {
			t.Error("a refused key is temporary")
		}
		outcome, _, err := p.CancelPayment(ctx, "pi_123")
		if outcome != payment.ProviderCannotSay || err == nil || strings.Contains(err.Error(), liveKey) {
			t.Fatalf("CancelPayment with a refused key = %q, %v; want ProviderCannotSay and an error without the key", outcome, err)
		}
		if _, err := p.RefundPayment(ctx, "pi_123", reference); !errors.As(err, &ae) || ae.HTTPStatus != http.StatusUnauthorized {
			t.Fatalf("RefundPayment with a refused key = %v", err)
		}
	})

	t.Run("an id that names no PaymentIntent URL", func(t *testing.T) {
		// stripe-mock answers every well-formed id; one with a slash (escaped by
		// the SDK, unescaped by the server) reaches no route: 404.
		rec := &recorder{t: t}
		p := newProvider(t, srv.URL, &http.Client{Transport: rec})
		outcome, _, err := p.CancelPayment(ctx, "pi_123/456")
		var ae *stripe.APIError
		if outcome != payment.ProviderCannotSay || !errors.As(err, &ae) || ae.HTTPStatus != http.StatusNotFound || ae.Type != "invalid_request_error" {
			t.Fatalf("CancelPayment = %q, %v; want ProviderCannotSay and a 404 APIError", outcome, err)
		}
		if stripe.IsTemporary(err) {
			t.Error("a 404 is temporary")
		}
		if reqs := rec.requests(); len(reqs) != 1 {
			t.Errorf("%d requests, want 1 (a 404 is not retried)", len(reqs))
		}
	})

	t.Run("arguments refused without a request", func(t *testing.T) {
		rec := &recorder{t: t}
		p := newProvider(t, srv.URL, &http.Client{Transport: rec})
		for name, call := range map[string]func() error{
			"empty reference":     func() error { _, err := p.CreatePayment(ctx, "", 1500, "eur"); return err },
			"foreign reference":   func() error { _, err := p.CreatePayment(ctx, "order-17", 1500, "eur"); return err },
			"zero amount":         func() error { _, err := p.CreatePayment(ctx, reference, 0, "eur"); return err },
			"negative amount":     func() error { _, err := p.CreatePayment(ctx, reference, -5, "eur"); return err },
			"currency":            func() error { _, err := p.CreatePayment(ctx, reference, 1500, "euro"); return err },
			"cancel a reference":  func() error { _, _, err := p.CancelPayment(ctx, reference); return err },
			"cancel generic's id": func() error { _, _, err := p.CancelPayment(ctx, "pay_abc"); return err },
			"cancel empty":        func() error { _, _, err := p.CancelPayment(ctx, ""); return err },
			"refund empty id":     func() error { _, err := p.RefundPayment(ctx, "", reference); return err },
			"refund no reference": func() error { _, err := p.RefundPayment(ctx, "pi_123", ""); return err },
		} {
			err := call()
			if !errors.Is(err, stripe.ErrInvalidArgument) || stripe.IsTemporary(err) {
				t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
			}
		}
		if outcome, _, _ := p.CancelPayment(ctx, "pay_abc"); outcome != payment.ProviderCannotSay {
			t.Errorf("CancelPayment of another provider's id = %q, want ProviderCannotSay", outcome)
		}
		if reqs := rec.requests(); len(reqs) != 0 {
			t.Errorf("%d requests sent for refused arguments", len(reqs))
		}
	})
}
