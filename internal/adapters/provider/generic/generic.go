// Package generic is the payment provider that only calls back: it is told nothing
// when a payment is created, cancelled or refunded, and reports each payment's
// outcome by a webhook signed with a shared secret over the whole body, which names
// the payment and the outcome. It is the default provider, and the local stack's.
package generic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// Name is the provider's name in PAYMENT_PROVIDER and in provider events.
const Name = "generic"

// Event types of the generic provider's webhook.
const (
	TypeSucceeded = "payment.succeeded"
	TypeFailed    = "payment.failed"
)

// MaxEventIDLength bounds the provider's event ids; MaxReasonLength a failure's reason.
const (
	MaxEventIDLength = 128
	MaxReasonLength  = 500
)

// Event is the body of the generic provider's webhook, POST /webhooks/payments.
// PaymentID, Amount and Currency are optional (Optional: the facts the provider's
// events may leave unstated), because the provider is told nothing when a payment
// is created; but a member that is there states a fact, and the event applies only
// to a payment recorded with the same provider payment id (what CreatePayment
// answered), amount and currency, as a Stripe event does. A member that is there
// with a value no payment can have ("amount": 0, "paymentId": "") is refused.
type Event struct {
	ID               string                      `json:"id"`
	Type             string                      `json:"type"`
	PaymentReference string                      `json:"paymentReference"`
	Reason           string                      `json:"reason,omitempty"`
	PaymentID        strictjson.Optional[string] `json:"paymentId,omitzero"`
	Amount           strictjson.Optional[int64]  `json:"amount,omitzero"`
	Currency         strictjson.Optional[string] `json:"currency,omitzero"`
}

// Optional is what the provider's events may leave unstated of the provider's
// payment: every fact (payment.ProviderEvent.Unstated lists those an event leaves
// out).
const Optional = payment.AllFacts

// Provider is a command handler's payment provider: what it cannot do, it says.
var _ command.PaymentProvider = Provider{}

// Provider is the generic provider. Its zero value creates, cancels and refunds
// (nothing reaches the provider); webhooks need Verifier.
type Provider struct {
	// Verifier checks the Payment-Signature header of webhooks.
	Verifier *webhook.Verifier
}

// Name returns Name: the provider its webhook events name.
func (Provider) Name() string { return Name }

// CreatePayment returns the payment id the provider knows the reference by:
// derived from the reference, so that creating twice is the same payment.
func (Provider) CreatePayment(_ context.Context, reference string, _ int64, _ string) (payment.Created, error) {
	return payment.Created{PaymentID: "pay_" + ident.Derived(22, reference)}, nil
}

// CancelPayment cannot reach a provider that only calls back: it always answers
// payment.CancelNotSupported, and says nothing of the payment, so nothing is owed
// to the provider, and a success that arrives later is refunded.
func (Provider) CancelPayment(context.Context, string) (payment.CancelOutcome, payment.Told, error) {
	return payment.CancelNotSupported, payment.Told{}, nil
}

// RefundPayment cannot refund: it returns payment.ErrRefundNotSupported, and the
// refund is recorded as owed.
func (Provider) RefundPayment(context.Context, string, string) (string, error) {
	return "", payment.ErrRefundNotSupported
}

// RefundUnexpected cannot refund either: it returns payment.ErrRefundNotSupported,
// and the money an event reported taken on another payment is recorded as owed.
func (Provider) RefundUnexpected(context.Context, string, string) (string, error) {
	return "", payment.ErrRefundNotSupported
}

// ReferenceOf cannot ask a provider that only calls back: it returns
// payment.ErrLookupNotSupported. Its events always name the reference
// (ParseWebhook).
func (Provider) ReferenceOf(context.Context, string) (string, error) {
	return "", payment.ErrLookupNotSupported
}

// ParseWebhook verifies a webhook's Payment-Signature over its raw body and returns
// the event it carries. The signature covers the whole body, which names the event,
// the payment and the outcome, so it is valid for exactly those. A bad signature is
// payment.ErrWebhookUnauthentic (and the body is not looked at); a body that is not
// exactly one Event as strictjson.Decode reads it (each member once, named exactly,
// nothing unknown or after it, no null), with a known type, a valid reference and
// id, a reason only for failures, and, for each of paymentId, amount and currency
// that is there, a payment id of 1 to MaxEventIDLength of the id's characters, an
// amount payment.CheckAmount accepts and a currency payment.CheckCurrency accepts,
// is payment.ErrWebhookMalformed, wrapping the *strictjson.Error that names the
// member when there is one. The event's Unstated lists the members left out; its
// Digest is payment.EffectDigest of the event (the body names nothing that does not
// decide its effect), and its BodyDigest the hex SHA-256 of the body.
func (p Provider) ParseWebhook(header func(string) string, body []byte, now time.Time) (payment.ProviderEvent, error) {
	if err := p.Verifier.Verify(header(webhook.Header), body, now); err != nil {
		return payment.ProviderEvent{}, fmt.Errorf("%w: %w", payment.ErrWebhookUnauthentic, err)
	}
	var e Event
	if err := strictjson.Decode(body, &e); err != nil {
		return payment.ProviderEvent{}, fmt.Errorf("%w: %w", payment.ErrWebhookMalformed, err)
	}
	out := payment.ProviderEvent{Provider: Name, EventID: e.ID, Reference: e.PaymentReference, Reason: e.Reason,
		PaymentID: e.PaymentID.Value, Amount: e.Amount.Value, Currency: e.Currency.Value, Unstated: unstated(e)}
	switch e.Type {
	case TypeSucceeded:
		out.Kind = payment.ProviderSucceeded
		if e.Reason != "" {
			return payment.ProviderEvent{}, fmt.Errorf("%w: a reason is for %s only", payment.ErrWebhookMalformed, TypeFailed)
		}
	case TypeFailed:
		out.Kind = payment.ProviderFailed
	default:
		return payment.ProviderEvent{}, fmt.Errorf("%w: type %q is neither %s nor %s", payment.ErrWebhookMalformed, e.Type, TypeSucceeded, TypeFailed)
	}
	if err := checkEvent(e); err != nil {
		return payment.ProviderEvent{}, fmt.Errorf("%w: %w", payment.ErrWebhookMalformed, err)
	}
	out.Digest = payment.EffectDigest(out, payment.ProviderObject{Type: e.Type})
	sum := sha256.Sum256(body)
	out.BodyDigest = hex.EncodeToString(sum[:])
	return out, nil
}

// checkEvent says what is wrong with the members of e, nil if nothing is.
func checkEvent(e Event) error {
	switch {
	case !validEventID(e.ID):
		return fmt.Errorf("id must be 1 to %d characters of A-Z, a-z, 0-9, _ or -", MaxEventIDLength)
	case len(e.Reason) > MaxReasonLength:
		return fmt.Errorf("reason is over %d bytes", MaxReasonLength)
	case e.PaymentID.Present && !validEventID(e.PaymentID.Value):
		return fmt.Errorf("paymentId, where given, must be 1 to %d characters of A-Z, a-z, 0-9, _ or -", MaxEventIDLength)
	case e.Amount.Present && payment.CheckAmount(e.Amount.Value) != nil:
		return fmt.Errorf("amount, where given, must be a whole number of minor units from 1 to %d", payment.MaxAmount)
	case e.Currency.Present && payment.CheckCurrency(e.Currency.Value) != nil:
		return errors.New("currency, where given, must be 3 upper-case letters (ISO 4217)")
	}
	if _, err := payment.RentalIDFor(e.PaymentReference); err != nil {
		return fmt.Errorf("paymentReference: %v", err)
	}
	return nil
}

// unstated is what e leaves out of what the provider's events may leave out
// (Optional).
func unstated(e Event) payment.Facts {
	var out payment.Facts
	for _, m := range []struct {
		fact    payment.Facts
		present bool
	}{{payment.FactPaymentID, e.PaymentID.Present}, {payment.FactAmount, e.Amount.Present}, {payment.FactCurrency, e.Currency.Present}} {
		if !m.present {
			out |= m.fact
		}
	}
	return out & Optional
}

// validEventID reports whether id is 1 to MaxEventIDLength characters of A-Z, a-z,
// 0-9, _ and -.
func validEventID(id string) bool {
	if len(id) == 0 || len(id) > MaxEventIDLength {
		return false
	}
	for len(id) > 0 {
		n := min(len(id), ident.MaxLength)
		if !ident.Valid(id[:n]) {
			return false
		}
		id = id[n:]
	}
	return true
}

// Sign returns the Payment-Signature header value for body at time t, as the
// provider signs it: for the local stack's demo and tests, which play the provider.
func Sign(secret, body []byte, t time.Time) string { return webhook.Sign(secret, body, t) }
