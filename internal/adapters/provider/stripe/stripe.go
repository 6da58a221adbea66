// Package stripe is the Stripe payment provider: an adapter over stripe-go that
// creates a PaymentIntent per payment reference, cancels and refunds it, and turns
// Stripe's signed webhook events into payment.ProviderEvent values.
//
// Every call to Stripe is made with stripe-go's client and its retries: two, with
// backoff (0.5 s, then 1 s), reusing the request's idempotency key, for network
// errors and timeouts (not once the context is done), for answers that are not
// Stripe's JSON (a gateway's 502) and for 429 lock_timeout. stripe-go v85 retries no
// other error Stripe answers in its JSON, 5xx and 409 included: those come back at
// once, as *APIError, Temporary. The SDK logs nothing (its logger is off): what goes
// wrong is returned, and errors never carry the secret key, the webhook secret or a
// client secret (Stripe embeds the PaymentIntent, client secret and all, in some
// errors; APIError keeps only the error's own fields).
//
// Idempotency: creating and refunding send the Idempotency-Key "create-"+reference
// and "refund-"+reference, so that calling again for one reference, with the same
// arguments, gives the same PaymentIntent or Refund rather than a second one (the
// refund of a PaymentIntent that was not the one recorded, RefundUnexpected, sends
// "refund-unexpected-"+its id). Stripe
// keeps idempotency keys for at least 24 hours only: a create repeated days later
// makes a new PaymentIntent. Stripe answers a key reused with other arguments (say
// another amount) with an idempotency_error, and replays the first answer for a key,
// errors included, while it keeps the key.
package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	stripesdk "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// Provider is the command handler's payment provider, and does all it asks.
var _ command.PaymentProvider = (*Provider)(nil)

// Name is the provider's name in provider events (and in PAYMENT_PROVIDER).
const Name = "stripe"

// SignatureHeader is the HTTP header carrying a webhook's signature.
const SignatureHeader = "Stripe-Signature"

// MetadataKey is the metadata key under which the payment reference is given to
// Stripe, on the PaymentIntent and on the Refund.
const MetadataKey = "reference"

// APIVersion is the Stripe API version stripe-go pins and sends with every request.
// Webhook events must be rendered in the same release train (the part after the
// dot, "dahlia"): set the webhook endpoint's API version to it.
const APIVersion = stripesdk.APIVersion

// DefaultTolerance is how far, in either direction, a webhook signature's timestamp
// may be from the time of verification: stripe-go's default, 300 seconds.
const DefaultTolerance = webhook.DefaultTolerance

// ErrInvalidArgument is returned, wrapped, for an argument the adapter refuses
// without calling Stripe (an empty or foreign reference, a payment id that is not a
// PaymentIntent's, a non-positive amount, a currency that is not three letters).
// It is not temporary (payment.Temporary): the same call fails the same way.
var ErrInvalidArgument error = invalidArgument{}

type invalidArgument struct{}

func (invalidArgument) Error() string   { return "stripe: invalid argument" }
func (invalidArgument) Temporary() bool { return false }

// Config configures a Provider.
type Config struct {
	// SecretKey is the Stripe secret (or restricted) API key, sk_... or rk_....
	SecretKey string
	// WebhookSecret is the webhook endpoint's signing secret, whsec_....
	WebhookSecret string
	// APIURL is the base URL of Stripe's API; empty means Stripe's own
	// (https://api.stripe.com). Tests point it at stripe-mock.
	APIURL string
	// HTTPClient makes the requests; nil means stripe-go's default (80 s timeout).
	HTTPClient *http.Client
	// Tolerance is the largest accepted distance between a webhook signature's
	// timestamp and the verification time, in the past or in the future; zero
	// means DefaultTolerance.
	Tolerance time.Duration
}

// Provider is the Stripe payment provider. It is safe for concurrent use.
type Provider struct {
	api           api
	key           string // also to redact it from error messages
	webhookSecret string
	tolerance     time.Duration
}

// New returns a Provider for cfg. It refuses an empty secret key or webhook secret,
// or one with white space in it (a pasted newline), a negative tolerance, and an
// API URL that is not an absolute http or https URL; its errors never contain
// either secret.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.SecretKey == "":
		return nil, errors.New("stripe: the secret key is empty")
	case strings.ContainsFunc(cfg.SecretKey, unicode.IsSpace):
		return nil, errors.New("stripe: the secret key contains white space")
	case cfg.WebhookSecret == "":
		return nil, errors.New("stripe: the webhook secret is empty")
	case strings.ContainsFunc(cfg.WebhookSecret, unicode.IsSpace):
		return nil, errors.New("stripe: the webhook secret contains white space")
	case cfg.Tolerance < 0:
		return nil, fmt.Errorf("stripe: the webhook tolerance must not be negative, got %v", cfg.Tolerance)
	case cfg.APIURL != "" && !validAPIURL(cfg.APIURL):
		return nil, fmt.Errorf("stripe: the API URL %q is not an absolute http or https URL", cfg.APIURL)
	}
	tolerance := cfg.Tolerance
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	backend := &stripesdk.BackendConfig{
		HTTPClient:    cfg.HTTPClient,
		LeveledLogger: &stripesdk.LeveledLogger{Level: stripesdk.LevelNull},
	}
	if cfg.APIURL != "" {
		backend.URL = stripesdk.String(cfg.APIURL)
	}
	return &Provider{
		api:           api{backend: stripesdk.GetBackendWithConfig(stripesdk.APIBackend, backend), key: cfg.SecretKey},
		key:           cfg.SecretKey,
		webhookSecret: cfg.WebhookSecret,
		tolerance:     tolerance,
	}, nil
}

// CreatePayment creates a PaymentIntent for amount (in the currency's smallest
// unit) in currency (sent lower-case), with automatic payment methods, the metadata
// {"reference": reference} and the idempotency key "create-"+reference: creating
// again for the same reference and arguments, while Stripe keeps the key, answers
// the same PaymentIntent. It returns the PaymentIntent's id and client secret.
//
// reference must be a payment reference of this service (payment.ReferenceFor).
// Errors are *APIError for Stripe's refusals; IsTemporary says whether trying again
// (with the same arguments, which is safe) may succeed.
func (p *Provider) CreatePayment(ctx context.Context, reference string, amount int64, currency string) (payment.Created, error) {
	if err := checkReference(reference); err != nil {
		return payment.Created{}, err
	}
	if amount <= 0 {
		return payment.Created{}, fmt.Errorf("%w: amount must be positive, got %d", ErrInvalidArgument, amount)
	}
	currency = strings.ToLower(currency)
	if !isCurrency(currency) {
		return payment.Created{}, fmt.Errorf("%w: currency must be a three-letter ISO code, got %q", ErrInvalidArgument, currency)
	}
	params := &stripesdk.PaymentIntentCreateParams{
		Amount:   stripesdk.Int64(amount),
		Currency: stripesdk.String(currency),
		AutomaticPaymentMethods: &stripesdk.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled: stripesdk.Bool(true),
		},
	}
	params.AddMetadata(MetadataKey, reference)
	params.SetIdempotencyKey("create-" + reference)
	pi, err := p.api.createPaymentIntent(ctx, params)
	if err != nil {
		return payment.Created{}, p.wrap("create payment", err)
	}
	if pi.ID == "" || pi.ClientSecret == "" {
		return payment.Created{}, errors.New("stripe: create payment: the answer lacks the PaymentIntent's id or client secret")
	}
	return payment.Created{PaymentID: pi.ID, ClientSecret: pi.ClientSecret}, nil
}

// Name returns Name: the provider its webhook events name.
func (p *Provider) Name() string { return Name }

// CancelPayment cancels the PaymentIntent paymentID, and says what Stripe holds of
// it (told), from the PaymentIntent it answered: the one it cancelled, or the one
// retrieved after payment_intent_unexpected_state (read anyway to know the
// outcome, so nothing is asked twice).
//
//   - Cancelled: payment.CancelledAtProvider.
//   - Stripe refuses with payment_intent_unexpected_state: the PaymentIntent is
//     retrieved and its status decides: succeeded is payment.AlreadySucceeded,
//     canceled (cancelled before) is payment.CancelledAtProvider, anything else
//     (processing: money may still arrive) is payment.ProviderCannotSay, each with
//     a nil error.
//   - Any other failure: a timeout or a network error after the SDK's retries, a
//     5xx, a refusal such as an unknown PaymentIntent or a bad key, an argument
//     refused here (ErrInvalidArgument), or a failed retrieve after the refusal:
//     payment.ProviderCannotSay AND the error
//     (*APIError for Stripe's answers). Whether the PaymentIntent was cancelled is
//     then unknown; the caller decides, by IsTemporary(err), whether to try again
//     or to go ahead as ProviderCannotSay says (a success that arrives later is
//     refunded).
//
// Told has the PaymentIntent's id, whether it succeeded, its amount and its
// currency (in upper case, as payments record it), and is set only with a nil
// error and an outcome of payment.CancelledAtProvider or payment.AlreadySucceeded.
// An answer about another PaymentIntent than paymentID, or a succeeded one without
// a positive amount and a currency, is payment.ProviderCannotSay with an error:
// nothing may be recorded on it.
func (p *Provider) CancelPayment(ctx context.Context, paymentID string) (payment.CancelOutcome, payment.Told, error) {
	if err := checkPaymentID(paymentID); err != nil {
		return payment.ProviderCannotSay, payment.Told{}, err
	}
	pi, err := p.api.cancelPaymentIntent(ctx, paymentID)
	if err == nil {
		return told(payment.CancelledAtProvider, paymentID, pi)
	}
	var se *stripesdk.Error
	if !errors.As(err, &se) || se.Code != stripesdk.ErrorCodePaymentIntentUnexpectedState {
		return payment.ProviderCannotSay, payment.Told{}, p.wrap("cancel payment", err)
	}
	pi, err = p.api.paymentIntent(ctx, paymentID)
	if err != nil {
		return payment.ProviderCannotSay, payment.Told{}, p.wrap("retrieve the payment Stripe would not cancel", err)
	}
	switch pi.Status {
	case stripesdk.PaymentIntentStatusSucceeded:
		return told(payment.AlreadySucceeded, paymentID, pi)
	case stripesdk.PaymentIntentStatusCanceled:
		return told(payment.CancelledAtProvider, paymentID, pi)
	default:
		return payment.ProviderCannotSay, payment.Told{}, nil
	}
}

// errUnexpectedAnswer wraps an answer of Stripe's that cannot be what it says: not
// temporary (payment.Temporary), since asking again at once gets the same.
var errUnexpectedAnswer error = unexpectedAnswer{}

type unexpectedAnswer struct{}

func (unexpectedAnswer) Error() string   { return "stripe: unexpected answer" }
func (unexpectedAnswer) Temporary() bool { return false }

// told is outcome with what pi, Stripe's answer about paymentID, says of it.
func told(outcome payment.CancelOutcome, paymentID string, pi *stripesdk.PaymentIntent) (payment.CancelOutcome, payment.Told, error) {
	if pi == nil || pi.ID != paymentID {
		return payment.ProviderCannotSay, payment.Told{}, fmt.Errorf("%w: cancel payment %s: the answer is about another PaymentIntent", errUnexpectedAnswer, paymentID)
	}
	t := payment.Told{PaymentID: pi.ID, Succeeded: pi.Status == stripesdk.PaymentIntentStatusSucceeded, Amount: pi.Amount, Currency: strings.ToUpper(string(pi.Currency))}
	if t.Succeeded && (payment.CheckAmount(t.Amount) != nil || payment.CheckCurrency(t.Currency) != nil) {
		return payment.ProviderCannotSay, payment.Told{}, fmt.Errorf("%w: cancel payment %s: the succeeded PaymentIntent has no valid amount or currency", errUnexpectedAnswer, paymentID)
	}
	return outcome, t, nil
}

// ReferenceOf returns our payment reference for the PaymentIntent paymentID, from
// its metadata: for events such as charge.refunded whose charge carries only the
// PaymentIntent's id. A PaymentIntent without our metadata is
// payment.ErrWebhookIgnored: not one of ours.
func (p *Provider) ReferenceOf(ctx context.Context, paymentID string) (string, error) {
	if err := checkPaymentID(paymentID); err != nil {
		return "", err
	}
	pi, err := p.api.paymentIntent(ctx, paymentID)
	if err != nil {
		return "", p.wrap("retrieve the payment a charge belongs to", err)
	}
	ref := pi.Metadata[MetadataKey]
	if checkReference(ref) != nil {
		return "", fmt.Errorf("%w: PaymentIntent %s carries no reference of ours", payment.ErrWebhookIgnored, paymentID)
	}
	return ref, nil
}

// RefundPayment refunds the PaymentIntent paymentID in full: a Refund with the
// metadata {"reference": reference} and the idempotency key "refund-"+reference, so
// that refunding again for the same reference, while Stripe keeps the key, answers
// the same Refund. It returns the Refund's id. A Refund that is pending may still
// fail later, which Stripe reports by a refund.failed event (ParseWebhook:
// payment.ProviderRefundFailed, which makes the refund owed).
//
// Stripe's answers become what the payment context acts on (refundAnswer):
// charge_already_refunded, once the payment was refunded in full otherwise (or
// after Stripe forgot the key of our own earlier refund), is
// payment.ErrAlreadyRefunded; a refusal no retry can change (refusedForGood: a
// dispute, a payment that cannot be refunded) and a Refund Stripe answers failed
// or canceled are a *payment.RefundRefused with Stripe's reason. Every other error
// is *APIError for Stripe's refusals (a key without the right to refund, a
// balance too low: an operator's to fix, never a refund owed), and IsTemporary says
// whether trying again may succeed.
func (p *Provider) RefundPayment(ctx context.Context, paymentID, reference string) (string, error) {
	return p.refund(ctx, paymentID, reference, "refund-"+reference)
}

func (p *Provider) refund(ctx context.Context, paymentID, reference, idempotencyKey string) (string, error) {
	if err := checkPaymentID(paymentID); err != nil {
		return "", err
	}
	if err := checkReference(reference); err != nil {
		return "", err
	}
	params := &stripesdk.RefundCreateParams{PaymentIntent: stripesdk.String(paymentID)}
	params.AddMetadata(MetadataKey, reference)
	params.SetIdempotencyKey(idempotencyKey)
	r, err := p.api.createRefund(ctx, params)
	if err != nil {
		return "", refundAnswer(p.wrap("refund payment", err))
	}
	if r.ID == "" {
		return "", errors.New("stripe: refund payment: the answer lacks the Refund's id")
	}
	switch r.Status {
	case stripesdk.RefundStatusFailed, stripesdk.RefundStatusCanceled:
		// Asked again under the same key, Stripe answers the same Refund: the
		// money has to go back another way.
		reason := fmt.Sprintf("Stripe's refund %s is %s", r.ID, r.Status)
		if r.FailureReason != "" {
			reason += " (" + string(r.FailureReason) + ")"
		}
		return "", payment.RefusedRefund(reason)
	}
	return r.ID, nil
}

// RefundUnexpected refunds in full the PaymentIntent paymentID, which took money
// under our reference without being the PaymentIntent recorded for it: a Refund
// with the metadata {"reference": reference} and the idempotency key
// "refund-unexpected-"+paymentID, so that it never shares a key with the refund of
// the recorded PaymentIntent ("refund-"+reference) and refunding again, while
// Stripe keeps the key, answers the same Refund. Answers and errors are those of
// RefundPayment.
func (p *Provider) RefundUnexpected(ctx context.Context, paymentID, reference string) (string, error) {
	return p.refund(ctx, paymentID, reference, "refund-unexpected-"+paymentID)
}

// checkReference refuses what payment.ReferenceFor cannot have made: the reference
// goes into metadata (at most 500 characters) and idempotency keys (at most 255).
func checkReference(reference string) error {
	if _, err := payment.RentalIDFor(reference); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if len(reference) > 200 {
		return fmt.Errorf("%w: reference is over 200 bytes", ErrInvalidArgument)
	}
	return nil
}

// checkPaymentID refuses an id that is not a PaymentIntent's, such as another
// provider's payment id or a reference given by mistake; whether the PaymentIntent
// exists is Stripe's to say.
func checkPaymentID(id string) error {
	if !strings.HasPrefix(id, "pi_") || len(id) > 255 {
		return fmt.Errorf("%w: %q is not a PaymentIntent id (pi_...)", ErrInvalidArgument, truncate(id, 80))
	}
	return nil
}

// isCurrency reports whether s is a currency as Stripe writes it, in lower case (or
// in upper case, as a payment records it): payment.CheckCurrency's rule, whatever
// the case.
func isCurrency(s string) bool { return payment.CheckCurrency(strings.ToUpper(s)) == nil }

// truncate returns at most n bytes of s, cut at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// validAPIURL reports whether u is an absolute http or https URL with a host.
func validAPIURL(u string) bool {
	parsed, err := url.Parse(u)
	return err == nil && (parsed.Scheme == "http" || parsed.Scheme == "https") && parsed.Host != ""
}
