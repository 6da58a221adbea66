package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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

// ErrLookupNotSupported is returned by a provider that cannot be asked which of our
// payment references one of its payments has (one that only calls back, whose
// events always name the reference): an event that names only the provider's
// payment is then not ours to apply.
var ErrLookupNotSupported = errors.New("payment: the provider cannot be asked which reference a payment has")

// ErrAlreadyRefunded is returned by a provider that refuses a refund because the
// payment is refunded in full already (by an earlier request of ours whose answer
// was lost, after the provider forgot its idempotency key, or by hand at the
// provider): the money went back, so the refund is recorded as the provider's
// word (PaymentRefunded), never as owed.
var ErrAlreadyRefunded = errors.New("payment: the provider says the payment is refunded already")

// MaxRefundRefusalLength bounds the reason a RefundRefused carries, in characters.
const MaxRefundRefusalLength = 300

// RefundRefused is returned by a provider that can refund but refuses this
// payment's refund for good (the payment is disputed, the refund failed at the
// bank): asking again cannot make it, so the refund is recorded as owed
// (RefundOwed, with the reason), for operators to make by hand. It is not
// Temporary. A refusal that an operator can remove at the provider (a key without
// the right to refund, a balance too low) is not a RefundRefused: it stays an
// error, and the refund stays due, retried until it is made.
type RefundRefused struct {
	// Reason is the provider's, safe to show operators: printable, without the
	// provider's secrets, at most MaxRefundRefusalLength characters
	// (RefusedRefund makes it so).
	Reason string
}

// RefusedRefund returns the RefundRefused for the provider's reason, made fit to
// record: control and format characters become spaces, the ends are trimmed, and
// it is cut to MaxRefundRefusalLength characters; an empty reason becomes "refused
// by the provider".
func RefusedRefund(reason string) *RefundRefused {
	reason = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, reason)
	reason = strings.TrimSpace(reason)
	if runes := []rune(reason); len(runes) > MaxRefundRefusalLength {
		reason = strings.TrimSpace(string(runes[:MaxRefundRefusalLength]))
	}
	if reason == "" {
		reason = "refused by the provider"
	}
	return &RefundRefused{Reason: reason}
}

func (e *RefundRefused) Error() string {
	return "payment: the provider refuses the refund for good: " + e.Reason
}

// Temporary returns false: the same refund is refused the same way.
func (e *RefundRefused) Temporary() bool { return false }

// ProviderEventKind is what a provider's webhook event says happened.
type ProviderEventKind string

// The kinds of provider event the payment context acts on.
const (
	ProviderSucceeded ProviderEventKind = "succeeded"
	ProviderFailed    ProviderEventKind = "failed"
	ProviderCancelled ProviderEventKind = "cancelled"
	ProviderRefunded  ProviderEventKind = "refunded"
	// ProviderRefundFailed: a refund the provider accepted (RefundRequested, and
	// perhaps reported made: PaymentRefunded) failed afterwards (a closed card
	// account, say), with Reason and RefundID; the money is back with the
	// merchant, and owed to the renter (RecordRefundFailed).
	ProviderRefundFailed ProviderEventKind = "refund-failed"
)

// ProviderEvent is one verified provider event about one of our payments: a
// webhook's, or what the provider answers when it is asked about a payment.
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
	// PaymentID is the provider's id of the payment.
	PaymentID string
	// Amount, in minor units of Currency, and Currency, three upper-case letters
	// (ISO 4217, as payments record it), are what the provider's payment is for.
	Amount   int64
	Currency string
	// Unstated lists what the event does not say of the provider's payment: only a
	// provider whose events may leave a fact out (the generic one, for the members
	// its body omits) sets it. Every fact not listed here is one the event states,
	// and is compared with what was recorded, a zero value included: an event that
	// says 0 or "" never reads as an event that says nothing (Disagreements).
	Unstated Facts
	// ReportedAt is when the provider says the event happened, by its own clock
	// (Stripe's event's created); zero where it does not say (the generic
	// provider's events, and the provider's answer when asked). It tells a
	// provider's word about a refund that failed from its word about another one
	// made since (ConfirmRefund, RecordRefundFailed). It does not enter Digest: a
	// provider sends an event id at one time only, and deliveries of one id are
	// told apart by their receipt.
	ReportedAt time.Time
	// Reason says why a payment failed (ProviderFailed), or why its refund did
	// (ProviderRefundFailed).
	Reason string
	// RefundID is the provider's id of the refund that failed (ProviderRefundFailed
	// only).
	RefundID string
	// Digest identifies what decides the event's effect, in EffectDigest's form, so
	// that an event id sent again for another effect can be refused while a
	// redelivery that differs only in what describes the delivery is recognised.
	Digest string
	// BodyDigest is the hex SHA-256 of the signed body, the form of digest receipts
	// recorded before effect digests hold: it lets such a receipt still recognise a
	// redelivery of the very same bytes (HasDigest). "" where there is no body.
	BodyDigest string
}

// Facts is a set of the facts a provider event can state about the provider's
// payment, each compared with what was recorded for our payment.
type Facts uint8

// The facts a provider event can state.
const (
	FactPaymentID Facts = 1 << iota // the provider's payment id, Payment.PaymentID
	FactAmount                      // the amount, Payment.Amount
	FactCurrency                    // the currency, Payment.Currency
	// AllFacts is every fact.
	AllFacts = FactPaymentID | FactAmount | FactCurrency
)

// factNames are the facts' names, as mismatches and the generic webhook's body
// name them, in the order Names lists them.
var factNames = []struct {
	fact Facts
	name string
}{{FactPaymentID, "paymentId"}, {FactAmount, "amount"}, {FactCurrency, "currency"}}

// Has reports whether every fact of g is in f.
func (f Facts) Has(g Facts) bool { return f&g == g }

// Names returns the names of the facts in f ("paymentId", "amount", "currency"),
// in that order, in a new slice.
func (f Facts) Names() []string {
	var out []string
	for _, n := range factNames {
		if f.Has(n.fact) {
			out = append(out, n.name)
		}
	}
	return out
}

// Disagreements returns the facts ev states (every fact not in ev.Unstated) that
// are not what s records: a payment id that is not s.PaymentID (an empty one
// included), an amount that is not what the provider's payment is for
// (s.Charge: what the payment was prepared for, or, once a late success is
// recorded, what the provider reported taken; so never one outside 1..MaxAmount,
// which no payment records) and a currency that is not its currency. None means
// that ev is about the payment recorded, as far as ev says. It is the one
// comparison of a provider's word with what was recorded, whatever brought that
// word: a webhook, or the provider's answer when asked.
func Disagreements(s Payment, ev ProviderEvent) Facts {
	var out Facts
	stated, charge := AllFacts&^ev.Unstated, s.Charge()
	if stated.Has(FactPaymentID) && (ev.PaymentID == "" || ev.PaymentID != s.PaymentID) {
		out |= FactPaymentID
	}
	if stated.Has(FactAmount) && (CheckAmount(ev.Amount) != nil || ev.Amount != charge.Amount) {
		out |= FactAmount
	}
	if stated.Has(FactCurrency) && (CheckCurrency(ev.Currency) != nil || ev.Currency != charge.Currency) {
		out |= FactCurrency
	}
	return out
}

// Took returns what ev, a success the provider reports, says it took, and whether
// it says it of the payment recorded (its payment id, where it states one, is
// s.PaymentID) for another amount or currency than s.Charge, each stated validly:
// what it leaves unstated is taken as recorded. Such a success cannot pay for the
// rental, and what it took is to go back (GiveUpUnmatchedSuccess).
func Took(s Payment, ev ProviderEvent) (Money, bool) {
	differ := Disagreements(s, ev)
	if ev.Kind != ProviderSucceeded || differ.Has(FactPaymentID) || differ&(FactAmount|FactCurrency) == 0 {
		return Money{}, false
	}
	took := s.Charge()
	if differ.Has(FactAmount) {
		took.Amount = ev.Amount
	}
	if differ.Has(FactCurrency) {
		took.Currency = ev.Currency
	}
	if CheckAmount(took.Amount) != nil || CheckCurrency(took.Currency) != nil {
		return Money{}, false
	}
	return took, true
}

// EffectDigestPrefix begins every digest of EffectDigest's form. A digest without
// it is of the body form: the bare hex SHA-256 of a webhook's raw body, which every
// receipt recorded before effect digests holds.
const EffectDigestPrefix = "effect-v1:"

// ProviderObject is what a provider event says it is about, beyond what
// ProviderEvent holds: the provider's own event type, the kind and id of the
// object it reports on, and that object's status, as the provider writes them.
// A provider without such things leaves them "".
type ProviderObject struct {
	Type, Object, ObjectID, Status string
}

// EffectDigest returns the digest of what decides ev's effect: its provider,
// event id, kind, reference, what it states of the provider's payment (and which
// facts it leaves unstated), its reason, and what obj says it is about. Nothing
// else a delivery carries enters it, so two deliveries of one event that differ
// only in what describes the delivery have the same digest, and an event id used
// for another effect has another. The form is EffectDigestPrefix followed by the
// hex SHA-256 of those fields, each quoted (strconv.Quote) or written in decimal,
// in that order, separated by commas: one text for one effect, and no two effects
// with the same text.
func EffectDigest(ev ProviderEvent, obj ProviderObject) string {
	fields := []string{
		strconv.Quote(ev.Provider), strconv.Quote(ev.EventID), strconv.Quote(string(ev.Kind)), strconv.Quote(ev.Reference),
		strconv.Quote(ev.PaymentID), strconv.FormatInt(ev.Amount, 10), strconv.Quote(ev.Currency),
		strconv.FormatUint(uint64(ev.Unstated), 10), strconv.Quote(ev.Reason),
		strconv.Quote(obj.Type), strconv.Quote(obj.Object), strconv.Quote(obj.ObjectID), strconv.Quote(obj.Status),
	}
	sum := sha256.Sum256([]byte(strings.Join(fields, ",")))
	return EffectDigestPrefix + hex.EncodeToString(sum[:])
}

// HasDigest reports whether a digest a receipt stored is ev's: ev.Digest (of the
// effect form, for every event an adapter reads), or ev.BodyDigest (a receipt of
// the body form, recorded before effect digests, which only the same bytes
// match). The two forms never equal each other: only the effect form has
// EffectDigestPrefix.
func (ev ProviderEvent) HasDigest(stored string) bool {
	return stored == ev.Digest || ev.BodyDigest != "" && stored == ev.BodyDigest
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
