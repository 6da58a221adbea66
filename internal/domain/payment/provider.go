package payment

import (
	"context"
	"errors"
)

// What the payment provider says, as the payment context sees it whatever the
// provider: the adapters (internal/adapters/provider/...) turn each provider's API and
// webhooks into these values, and the command layer acts on them around the pure
// decider.

// Created is what the provider answers when a payment is created for a reference.
type Created struct {
	// PaymentID is the provider's id of the payment (a Stripe PaymentIntent id).
	PaymentID string
	// ClientSecret is what the renter's client needs to pay (a PaymentIntent's
	// client secret), "" for providers that need none. It is a secret: it is shown
	// to the renter who must pay and to nobody else, and never logged.
	ClientSecret string
}

// CancelOutcome is the provider's answer to a cancellation.
type CancelOutcome string

// The answers to a cancellation.
const (
	// CancelledAtProvider: the provider called the payment off (or had already).
	CancelledAtProvider CancelOutcome = "cancelled"
	// AlreadySucceeded: the payment succeeded at the provider first; the
	// cancellation must be declined.
	AlreadySucceeded CancelOutcome = "already-succeeded"
	// CancelNotSupported: the provider cannot cancel at all (it only calls back);
	// the cancellation goes ahead, nothing is owed to the provider, and a success
	// that arrives later is refunded.
	CancelNotSupported CancelOutcome = "not-supported"
	// ProviderCannotSay: the provider did not answer (it failed, was busy or timed
	// out), or could not call the payment off just now (it is processing it); the
	// cancellation goes ahead, and stays owed to the provider until it confirms it
	// (CancellationOwedAtProvider). A success that arrives meanwhile is refunded.
	ProviderCannotSay CancelOutcome = "cannot-say"
)

// Temporary reports whether a provider's error leaves the outcome of the call
// unknown, so that trying again may succeed: true unless the error, or one it
// wraps, says otherwise through a Temporary() bool method (as a Stripe refusal
// does), or it is the end of the caller's own context (context.Canceled).
func Temporary(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var t interface{ Temporary() bool }
	if errors.As(err, &t) {
		return t.Temporary()
	}
	return true
}

// ErrRefundNotSupported is returned by a provider that cannot refund: what would be
// a refund is recorded as a refund owed.
var ErrRefundNotSupported = errors.New("payment: the provider cannot refund")

// ProviderEventKind is what a provider's webhook event says happened.
type ProviderEventKind string

// The kinds of provider event the payment context acts on.
const (
	ProviderSucceeded ProviderEventKind = "succeeded"
	ProviderFailed    ProviderEventKind = "failed"
	ProviderCancelled ProviderEventKind = "cancelled"
	ProviderRefunded  ProviderEventKind = "refunded"
)

// ProviderEvent is one verified webhook event about one of our payments.
type ProviderEvent struct {
	// Provider names the provider ("generic", "stripe"); event ids are unique per
	// provider only.
	Provider string
	// EventID is the provider's id of the event: deliveries of the same event share
	// it, and it is what makes webhooks idempotent.
	EventID string
	Kind    ProviderEventKind
	// Reference is our payment reference, as the provider was given it.
	Reference string
	// PaymentID is the provider's id of the payment ("" if the event lacks it).
	PaymentID string
	// Amount, in minor units of Currency, and Currency, three upper-case letters
	// (ISO 4217, as payments record it), are what the provider's payment is for;
	// 0 and "" if the event does not say. An event applies to a payment only when
	// what it says of PaymentID, Amount and Currency is what was recorded.
	Amount   int64
	Currency string
	// Reason says why a payment failed (ProviderFailed only).
	Reason string
	// Digest identifies the event's content (a hash of what the signature covered),
	// so that an event id sent again with another body can be refused.
	Digest string
}

// MaxEventIDLength bounds a provider's event id, in bytes, for every provider (a
// provider may allow fewer): Stripe's ids are at most 255 characters.
const MaxEventIDLength = 255

// Errors of webhook verification, shared by the adapters.
var (
	// ErrWebhookUnauthentic: the signature is missing, malformed, stale or wrong.
	ErrWebhookUnauthentic = errors.New("payment: webhook signature is missing, malformed, stale or wrong")
	// ErrWebhookMalformed: the signed body is not an event the provider sends.
	ErrWebhookMalformed = errors.New("payment: webhook body is not a valid event")
	// ErrWebhookIgnored: an authentic event that is not about one of our payments,
	// or of a type the payment context does not act on; it is acknowledged and
	// ignored.
	ErrWebhookIgnored = errors.New("payment: webhook event is not one the service acts on")
)

// Told is what the provider says of one payment when the service asks it (rather
// than by a webhook): with its answer to a cancellation, the payment as the
// provider holds it. The command layer records it through the same checks as a
// webhook's event: a success applies only when PaymentID, Amount and Currency are
// what was recorded.
type Told struct {
	// PaymentID is the provider's id of the payment it describes.
	PaymentID string
	// Succeeded says that the provider took the money.
	Succeeded bool
	// Amount, in minor units of Currency, and Currency, three upper-case letters
	// (ISO 4217, as payments record it), are what the provider's payment is for.
	Amount   int64
	Currency string
}
