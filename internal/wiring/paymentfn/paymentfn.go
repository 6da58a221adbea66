// Package paymentfn wires the payment provider, chosen by PAYMENT_PROVIDER, into
// the functions that call it: the command function (payments, cancellations and
// webhooks), the process (payments and refunds) and the sweep (cancellations), and
// builds the parts those functions share (Core). It is a package of its own so that
// only they link the Stripe client and, for Stripe's keys, Secrets Manager.
package paymentfn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/secrets"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Environment variables of the payment provider.
const (
	// EnvProvider chooses the provider: generic (the default: one that only calls
	// back) or stripe.
	EnvProvider = "PAYMENT_PROVIDER"
	// EnvStripeSecretID names the Secrets Manager secret holding
	// {"secretKey": "sk_...", "webhookSecret": "whsec_..."}, read at cold start.
	EnvStripeSecretID = "STRIPE_SECRET_ID"
	// EnvStripeSecretKey and EnvStripeWebhookSecret are the same, for local runs.
	EnvStripeSecretKey     = "STRIPE_SECRET_KEY"
	EnvStripeWebhookSecret = "STRIPE_WEBHOOK_SECRET"
	// EnvStripeAPIURL points the Stripe client elsewhere than Stripe's API: at
	// stripe-mock, locally.
	EnvStripeAPIURL = "STRIPE_API_URL"
	// EnvProviderTimeout bounds each call to the provider (command.DefaultProviderTimeout):
	// a provider that does not answer fails that request or stream record alone.
	EnvProviderTimeout = "PAYMENT_PROVIDER_TIMEOUT"
)

// Provider names.
const (
	Generic = generic.Name
	Stripe  = "stripe"
)

// WebhookParser is api.WebhookParser, declared again so that the process and the
// sweep, which link this package, do not link the HTTP API.
type WebhookParser interface {
	ParseWebhook(header func(string) string, body []byte, now time.Time) (payment.ProviderEvent, error)
}

// Payments is the configured provider: its calls, their bound, and for Stripe its
// webhooks.
type Payments struct {
	Provider command.PaymentProvider
	// Timeout bounds each call to Provider (PAYMENT_PROVIDER_TIMEOUT).
	Timeout time.Duration
	// Stripe reads Stripe's webhooks; nil for the generic provider.
	Stripe WebhookParser
}

// Option is the command handler's option that reaches the provider, each call
// bounded by Timeout: what every function that sends payment commands, and
// rentalctl, builds its commands with.
func (p Payments) Option() command.Option {
	return func(h *command.Handler) {
		command.WithProvider(p.Provider)(h)
		command.WithProviderTimeout(p.Timeout)(h)
	}
}

// Check validates, touching nothing, the settings Provider reads:
// PAYMENT_PROVIDER_TIMEOUT (a positive duration, at most command.MaxProviderTimeout), PAYMENT_PROVIDER (generic or
// stripe) and, for stripe, STRIPE_SECRET_ID (a secret's name or ARN)
// or else STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET and STRIPE_API_URL, as
// stripe.New takes them. Its errors name the variable and never carry a key.
func Check(getenv wiring.Getenv) error {
	_, err := settings(getenv)
	return err
}

// providerSettings are Provider's settings; with secretID, the keys are in that
// secret.
type providerSettings struct {
	timeout                 time.Duration
	stripe                  bool
	secretID                string
	key, hookSecret, apiURL string
}

// settings reads STRIPE_SECRET_ID whatever the provider, as the template sets it for
// either, so that a deployment switches providers by PAYMENT_PROVIDER alone.
func settings(getenv wiring.Getenv) (providerSettings, error) {
	timeout, err := wiring.Duration(getenv, EnvProviderTimeout, command.DefaultProviderTimeout)
	if err != nil {
		return providerSettings{}, err
	}
	if timeout > command.MaxProviderTimeout {
		return providerSettings{}, wiring.BadSetting(EnvProviderTimeout, getenv(EnvProviderTimeout), fmt.Sprintf("at most %s, so that a call fits in the command function's time", command.MaxProviderTimeout))
	}
	secretID, err := wiring.SecretID(getenv, EnvStripeSecretID)
	if err != nil {
		return providerSettings{}, err
	}
	switch name := getenv(EnvProvider); name {
	case "", Generic:
		return providerSettings{timeout: timeout}, nil
	case Stripe:
	default:
		return providerSettings{}, wiring.BadSetting(EnvProvider, name, Generic+" or "+Stripe)
	}
	set := providerSettings{timeout: timeout, stripe: true, secretID: secretID}
	if secretID == "" { // a local run: the keys, and stripe-mock's address, from the environment
		set.key, set.hookSecret, set.apiURL = getenv(EnvStripeSecretKey), getenv(EnvStripeWebhookSecret), getenv(EnvStripeAPIURL)
		if err := checkStripeKeys(set); err != nil {
			return providerSettings{}, err
		}
	}
	return set, nil
}

// checkStripeKeys checks the keys and the API URL of a local run by the Stripe
// adapter's own rule (stripe.New), one at a time beside stand-ins for the others,
// so that the refusal names the setting.
func checkStripeKeys(set providerSettings) error {
	const key, hook = "sk_test_standin", "whsec_standin"
	for _, c := range []struct {
		name, value, want string
		secret            bool
		cfg               stripe.Config
	}{
		{EnvStripeSecretKey, set.key, "a Stripe secret key without white space (or " + EnvStripeSecretID + ")", true, stripe.Config{SecretKey: set.key, WebhookSecret: hook}},
		{EnvStripeWebhookSecret, set.hookSecret, "a Stripe webhook secret without white space (or " + EnvStripeSecretID + ")", true, stripe.Config{SecretKey: key, WebhookSecret: set.hookSecret}},
		{EnvStripeAPIURL, set.apiURL, "an absolute http or https URL, or unset for Stripe's", false, stripe.Config{SecretKey: key, WebhookSecret: hook, APIURL: set.apiURL}},
	} {
		if _, err := stripe.New(c.cfg); err == nil {
			continue
		}
		switch {
		case c.value == "":
			return wiring.MissingSetting(c.name, c.want)
		case c.secret:
			return wiring.BadSecret(c.name, c.want)
		}
		return wiring.BadSetting(c.name, c.value, c.want)
	}
	_, err := stripe.New(stripe.Config{SecretKey: set.key, WebhookSecret: set.hookSecret, APIURL: set.apiURL})
	return err
}

// Provider returns the provider PAYMENT_PROVIDER names, and PAYMENT_PROVIDER_TIMEOUT,
// which bounds each of its calls (Payments.Option). Stripe's keys come from the
// Secrets Manager secret STRIPE_SECRET_ID names (source is called only then, and
// only once every setting passed Check), or else from STRIPE_SECRET_KEY and
// STRIPE_WEBHOOK_SECRET. Errors never carry a key.
func Provider(ctx context.Context, source func() secrets.Source, getenv wiring.Getenv) (Payments, error) {
	set, err := settings(getenv)
	if err != nil {
		return Payments{}, err
	}
	if !set.stripe {
		return Payments{Provider: generic.Provider{}, Timeout: set.timeout}, nil
	}
	if set.secretID != "" {
		out, err := source().GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(set.secretID)})
		if err != nil {
			return Payments{}, fmt.Errorf("wiring: read the Stripe secret %s: %w", set.secretID, err)
		}
		var keys struct {
			SecretKey     string `json:"secretKey"`
			WebhookSecret string `json:"webhookSecret"`
		}
		if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &keys); err != nil {
			return Payments{}, fmt.Errorf("wiring: the Stripe secret %s is not JSON with secretKey and webhookSecret", set.secretID)
		}
		set.key, set.hookSecret = keys.SecretKey, keys.WebhookSecret
	}
	p, err := stripe.New(stripe.Config{SecretKey: set.key, WebhookSecret: set.hookSecret, APIURL: set.apiURL})
	if err != nil {
		return Payments{}, fmt.Errorf("wiring: the Stripe secret %s: %w", set.secretID, err)
	}
	return Payments{Provider: p, Timeout: set.timeout, Stripe: p}, nil
}

// Load is Provider with cfg's reader of Secrets Manager (secrets.New), made only
// when Stripe's keys are read from it: what the process and the sweep functions start with.
func Load(ctx context.Context, cfg aws.Config, getenv wiring.Getenv) (Payments, error) {
	return Provider(ctx, func() secrets.Source { return secrets.New(cfg) }, getenv)
}
