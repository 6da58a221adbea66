package local

import (
	"context"
	"fmt"
	"io"

	"github.com/bikerental/bikerental/internal/stripemock"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// DefaultStripeWebhookSecret is the Stripe webhook signing secret of local runs when
// STRIPE_WEBHOOK_SECRET is not set. It is public: never use it on AWS.
const DefaultStripeWebhookSecret = "whsec_local_stripe_webhook_secret_not_for_production"

// withStripe starts stripe-mock when PAYMENT_PROVIDER=stripe and STRIPE_API_URL
// does not point at a Stripe API already, and returns the environment with the
// Stripe settings the functions then need: stripe-mock's address, its test key,
// and the local webhook secret. It returns stripe-mock, or nil when none was
// started; stop it when done.
func withStripe(ctx context.Context, getenv wiring.Getenv, progress io.Writer) (wiring.Getenv, *stripemock.Server, error) {
	if getenv(paymentfn.EnvProvider) != paymentfn.Stripe {
		return getenv, nil, nil
	}
	defaults := map[string]string{
		paymentfn.EnvStripeSecretKey:     stripemock.SecretKey,
		paymentfn.EnvStripeWebhookSecret: DefaultStripeWebhookSecret,
	}
	var mock *stripemock.Server
	if getenv(paymentfn.EnvStripeAPIURL) == "" {
		fmt.Fprintln(progress, "starting Stripe's API mock (stripe-mock)...")
		var err error
		if mock, err = stripemock.StartServer(ctx); err != nil {
			return nil, nil, fmt.Errorf("local: PAYMENT_PROVIDER=stripe: %w (make stripe-mock installs it)", err)
		}
		fmt.Fprintf(progress, "Stripe API mock: %s\n", mock.URL)
		defaults[paymentfn.EnvStripeAPIURL] = mock.URL
	}
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return defaults[name]
	}, mock, nil
}
