package local

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// DefaultStripeWebhookSecret is the Stripe webhook signing secret of local runs when
// STRIPE_WEBHOOK_SECRET is not set. It is public: never use it on AWS.
const DefaultStripeWebhookSecret = "whsec_local_stripe_webhook_secret_not_for_production"

// withStripeKeys fills in stripe-mock's test key and the local webhook secret when
// PAYMENT_PROVIDER=stripe and getenv leaves them empty.
func withStripeKeys(getenv wiring.Getenv) wiring.Getenv {
	defaults := map[string]string{
		paymentfn.EnvStripeSecretKey:     stripemock.SecretKey,
		paymentfn.EnvStripeWebhookSecret: DefaultStripeWebhookSecret,
	}
	return func(name string) string {
		if v := getenv(name); v != "" || getenv(paymentfn.EnvProvider) != paymentfn.Stripe {
			return v
		}
		return defaults[name]
	}
}

// startStripeMock starts stripe-mock; a test replaces it to see that it is not
// reached.
var startStripeMock = stripemock.StartServer

// withStripe starts stripe-mock when PAYMENT_PROVIDER=stripe and STRIPE_API_URL
// does not point at a Stripe API already, and returns the environment with its
// address as STRIPE_API_URL (getenv carries the keys, withStripeKeys). It returns
// stripe-mock, or nil when none was started; stop it when done.
func withStripe(ctx context.Context, getenv wiring.Getenv, progress io.Writer) (wiring.Getenv, *stripemock.Server, error) {
	if getenv(paymentfn.EnvProvider) != paymentfn.Stripe || getenv(paymentfn.EnvStripeAPIURL) != "" {
		return getenv, nil, nil
	}
	fmt.Fprintln(progress, "starting Stripe's API mock (stripe-mock)...")
	mock, err := startStripeMock(ctx)
	if err != nil {
		if errors.Is(err, stripemock.ErrNotInstalled) {
			return nil, nil, errors.New("PAYMENT_PROVIDER=stripe needs stripe-mock, which is not installed: make stripe-mock installs it (or set STRIPE_MOCK to one, or STRIPE_API_URL to a Stripe API)")
		}
		return nil, nil, fmt.Errorf("PAYMENT_PROVIDER=stripe needs stripe-mock, which did not start: %w", err)
	}
	fmt.Fprintf(progress, "Stripe API mock: %s\n", mock.URL)
	return func(name string) string {
		if v := getenv(name); v != "" || name != paymentfn.EnvStripeAPIURL {
			return v
		}
		return mock.URL
	}, mock, nil
}
