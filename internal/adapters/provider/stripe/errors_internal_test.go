package stripe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	stripesdk "github.com/stripe/stripe-go/v85"
)

// TestWrapKeepsSecretsOut: neither the client secret of a PaymentIntent embedded in
// Stripe's error nor the secret key, wherever it appears, reaches the message.
func TestWrapKeepsSecretsOut(t *testing.T) {
	const key, clientSecret = "sk_test_51WrapSecretKey", "pi_1_secret_Wrapped"
	p := &Provider{key: key}

	se := &stripesdk.Error{
		HTTPStatusCode: 400, Type: stripesdk.ErrorTypeInvalidRequest,
		Code: stripesdk.ErrorCodePaymentIntentUnexpectedState,
		Msg:  "Invalid API Key provided: " + key, RequestID: "req_1",
		PaymentIntent: &stripesdk.PaymentIntent{ID: "pi_1", ClientSecret: clientSecret},
	}
	for _, err := range []error{se, fmt.Errorf("call: %w", se)} {
		got := p.wrap("cancel payment", err)
		var ae *APIError
		if !errors.As(got, &ae) || ae.Code != "payment_intent_unexpected_state" || ae.HTTPStatus != 400 || ae.RequestID != "req_1" {
			t.Fatalf("wrap = %#v", got)
		}
		if s := got.Error(); strings.Contains(s, key) || strings.Contains(s, clientSecret) || !strings.Contains(s, "[secret key]") {
			t.Fatalf("message %q", s)
		}
	}

	transport := fmt.Errorf("Post %q: %w", "https://api.stripe.com/v1/refunds?"+key, context.DeadlineExceeded)
	got := p.wrap("refund payment", transport)
	if strings.Contains(got.Error(), key) || !errors.Is(got, context.DeadlineExceeded) || !IsTemporary(got) {
		t.Fatalf("wrap = %v: want the key out and the deadline kept", got)
	}
	plain := p.wrap("refund payment", errors.New("connection reset by peer"))
	if plain.Error() != "stripe: refund payment: connection reset by peer" || !IsTemporary(plain) {
		t.Fatalf("wrap = %v", plain)
	}
}

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abcdef", 3, "abc"}, {"aé", 2, "a"}, {"aé", 3, "aé"}, {"€€", 4, "€"},
	} {
		if got := truncate(c.s, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
