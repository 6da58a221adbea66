package stripe

import (
	"context"
	"net/http"

	stripesdk "github.com/stripe/stripe-go/v85"
)

// api is the four calls to Stripe's API the provider makes, each as the SDK's
// service of that resource makes it, through the SDK's backend: the SDK's Client
// holds a service for every resource of Stripe's API, and a function that made
// one would link them all (about 200 kB of every binary).
type api struct {
	backend stripesdk.Backend
	key     string
}

// createPaymentIntent is POST /v1/payment_intents.
func (a api) createPaymentIntent(ctx context.Context, params *stripesdk.PaymentIntentCreateParams) (*stripesdk.PaymentIntent, error) {
	params.Context = ctx
	pi := &stripesdk.PaymentIntent{}
	return pi, a.backend.Call(http.MethodPost, "/v1/payment_intents", a.key, params, pi)
}

// paymentIntent is GET /v1/payment_intents/{id}.
func (a api) paymentIntent(ctx context.Context, id string) (*stripesdk.PaymentIntent, error) {
	params := &stripesdk.PaymentIntentRetrieveParams{}
	params.Context = ctx
	pi := &stripesdk.PaymentIntent{}
	return pi, a.backend.Call(http.MethodGet, stripesdk.FormatURLPath("/v1/payment_intents/%s", id), a.key, params, pi)
}

// cancelPaymentIntent is POST /v1/payment_intents/{id}/cancel.
func (a api) cancelPaymentIntent(ctx context.Context, id string) (*stripesdk.PaymentIntent, error) {
	params := &stripesdk.PaymentIntentCancelParams{}
	params.Context = ctx
	pi := &stripesdk.PaymentIntent{}
	return pi, a.backend.Call(http.MethodPost, stripesdk.FormatURLPath("/v1/payment_intents/%s/cancel", id), a.key, params, pi)
}

// createRefund is POST /v1/refunds.
func (a api) createRefund(ctx context.Context, params *stripesdk.RefundCreateParams) (*stripesdk.Refund, error) {
	params.Context = ctx
	r := &stripesdk.Refund{}
	return r, a.backend.Call(http.MethodPost, "/v1/refunds", a.key, params, r)
}
