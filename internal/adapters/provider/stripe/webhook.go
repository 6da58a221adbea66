package stripe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	stripesdk "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// The event types ParseWebhook maps; every other type is payment.ErrWebhookIgnored.
const (
	EventPaymentSucceeded = string(stripesdk.EventTypePaymentIntentSucceeded)     // payment.ProviderSucceeded
	EventPaymentFailed    = string(stripesdk.EventTypePaymentIntentPaymentFailed) // payment.ProviderFailed
	EventPaymentCanceled  = string(stripesdk.EventTypePaymentIntentCanceled)      // payment.ProviderCancelled
	EventChargeRefunded   = string(stripesdk.EventTypeChargeRefunded)             // payment.ProviderRefunded
	EventRefundFailed     = string(stripesdk.EventTypeRefundFailed)               // payment.ProviderRefundFailed
)

// MaxEventDepth is the deepest nesting of arrays and objects a Stripe event may
// have. Stripe's events nest a handful of levels; the bound keeps the work an
// authentic but absurd body causes to one pass over its bytes.
const MaxEventDepth = 64

// MaxReasonLength bounds a failure's Reason, in bytes (cut at a rune boundary).
const MaxReasonLength = 500

// maxUnix bounds the timestamps verify turns into a time.Time: far beyond any clock,
// far below where time.Unix and Time.Sub stop being exact.
const maxUnix = 1 << 40

// ParseWebhook verifies a Stripe webhook and returns the event it carries.
//
// header looks a request header up by name (case-insensitively, as http.Header.Get
// does); ParseWebhook reads SignatureHeader. The signature is checked with
// stripe-go's webhook package over the raw body; its timestamp is checked here
// against now, not the wall clock (stripe-go's own check uses time.Since and lets
// any future timestamp through), and must lie within the tolerance in either
// direction. A missing, malformed, stale, future or wrong signature is
// payment.ErrWebhookUnauthentic, and neither the header nor the body is quoted.
//
// A body with a valid signature that names a member twice in one object, or a
// member stripe-go reads in another case than stripe-go declares it (both as
// strictjson.CheckNames finds them, at any depth), or that nests deeper than
// MaxEventDepth, is payment.ErrWebhookMalformed; so is a body that is not a Stripe
// event, or one rendered for another API release train than APIVersion's
// (stripe-go refuses those), or whose object is not what its type says.
//
// The event types mapped, with the reference read from the object's metadata
// (MetadataKey):
//
//   - payment_intent.succeeded: payment.ProviderSucceeded.
//   - payment_intent.payment_failed: payment.ProviderFailed, Reason from
//     last_payment_error's message, else its code. Stripe sends it for each failed
//     attempt: the PaymentIntent goes back to requires_payment_method and the
//     renter may still pay it with another method.
//   - payment_intent.canceled: payment.ProviderCancelled.
//   - charge.refunded, for a charge refunded in full: payment.ProviderRefunded,
//     PaymentID the charge's payment_intent. The reference is taken from the
//     charge's metadata, else from the metadata of the refunds listed on it; but
//     since API version 2022-11-15 Stripe does not list a charge's refunds, and
//     Stripe does not promise to copy a PaymentIntent's metadata onto its charges,
//     so the event may come with Reference "" and PaymentID set: the caller must
//     then find the payment by its PaymentID. A partial refund (the charge's
//     refunded is false) is ignored: the service only refunds in full, and a
//     partial refund made by hand does not make the payment refunded.
//   - refund.failed, for a Refund Stripe had accepted (pending) that failed
//     afterwards (the card account closed, say: Stripe puts the money back in the
//     balance): payment.ProviderRefundFailed, PaymentID the Refund's
//     payment_intent, Amount and Currency the Refund's, RefundID its id, and
//     Reason "Stripe's refund re_… failed" with its failure_reason. Stripe sends
//     charge.refunded when it creates a refund, so this usually comes after it. The reference is the Refund's
//     metadata (RefundPayment writes it), else the payment is found by its
//     PaymentID. The refund is then owed, for operators to make by hand.
//
// Any other type, an object whose metadata holds no reference of this service
// (payment.RentalIDFor), and a refunded charge without one and without a
// payment_intent, are payment.ErrWebhookIgnored: to be acknowledged and dropped.
//
// The event has Provider Name, EventID the event's id (evt_...), ReportedAt the
// event's created (Stripe creates the charge.refunded of a refund when it creates
// the refund, and the refund.failed when it fails: a charge refunded in full can be
// refunded anew only after its refund failed, so the two times tell a late report
// of the refund that failed from the report of another one; the event names no
// Refund, since API version 2022-11-15 lists a charge's refunds only when
// expanded, which an event never is), PaymentID the
// PaymentIntent's id, Amount and Currency the PaymentIntent's (the charge's for
// charge.refunded; Stripe writes currencies in lower case, the event in upper case
// as payments record them). Stripe's events always state all three: Unstated is
// empty, so a charge.refunded whose charge names no PaymentIntent states an empty
// payment id, which is never the one recorded. A PaymentIntent or charge without
// an amount of 1 to payment.MaxAmount and a currency is payment.ErrWebhookMalformed.
// Whether the event is about the PaymentIntent, amount and currency recorded for
// the reference is the caller's to check (payment.Disagreements): metadata is only
// what someone holding the API key wrote.
//
// Digest is payment.EffectDigest of the event and of what it is about: its type,
// and the object's kind, id and status, as paymentIntentEvent and
// chargeRefundedEvent read them. The event object's other members describe the
// delivery or the account, not the payment (pending_webhooks, which Stripe counts
// down as it delivers, request, created, livemode, api_version), so a redelivery
// that differs in them has the same digest. BodyDigest is the hex SHA-256 of the
// body.
func (p *Provider) ParseWebhook(header func(string) string, body []byte, now time.Time) (payment.ProviderEvent, error) {
	sig := ""
	if header != nil {
		sig = header(SignatureHeader)
	}
	if err := p.verify(sig, body, now); err != nil {
		return payment.ProviderEvent{}, err
	}
	e, err := p.decodeEvent(sig, body)
	if err != nil {
		return payment.ProviderEvent{}, err
	}
	sum := sha256.Sum256(body)
	out := payment.ProviderEvent{Provider: Name, EventID: e.ID, BodyDigest: hex.EncodeToString(sum[:]), ReportedAt: reportedAt(e.Created)}
	var obj payment.ProviderObject
	switch string(e.Type) {
	case EventPaymentSucceeded, EventPaymentFailed, EventPaymentCanceled:
		out, obj, err = paymentIntentEvent(e, out)
	case EventChargeRefunded:
		out, obj, err = chargeRefundedEvent(e, out)
	case EventRefundFailed:
		out, obj, err = refundFailedEvent(e, out)
	default:
		return payment.ProviderEvent{}, fmt.Errorf("%w: event %s of type %q", payment.ErrWebhookIgnored, e.ID, truncate(string(e.Type), 100))
	}
	if err != nil {
		return payment.ProviderEvent{}, err
	}
	out.Digest = payment.EffectDigest(out, obj)
	return out, nil
}

// decodeEvent reads the event of a body whose signature verify accepted: what
// fails from here on is the body, payment.ErrWebhookMalformed.
func (p *Provider) decodeEvent(sig string, body []byte) (stripesdk.Event, error) {
	// Its member names are read exactly: encoding/json, which stripe-go decodes
	// with, would take a member twice (the last one) or in another case, and the
	// service must read what the signed bytes say, the same way any other reader
	// would.
	if err := strictjson.CheckNames(body, &stripesdk.Event{}, MaxEventDepth); err != nil {
		return stripesdk.Event{}, fmt.Errorf("%w: %w", payment.ErrWebhookMalformed, err)
	}
	// The SDK checks the signature once more (ignoring the timestamp, which verify
	// checked), that the body is an event (object "event") and its API version.
	e, err := webhook.ConstructEventWithOptions(body, sig, p.webhookSecret, webhook.ConstructEventOptions{IgnoreTolerance: true})
	if err != nil {
		return stripesdk.Event{}, fmt.Errorf("%w: %s", payment.ErrWebhookMalformed, truncate(err.Error(), 300))
	}
	if !validEventID(e.ID) {
		return stripesdk.Event{}, fmt.Errorf("%w: the event has no valid id", payment.ErrWebhookMalformed)
	}
	if e.Data == nil || len(e.Data.Raw) == 0 {
		return stripesdk.Event{}, fmt.Errorf("%w: event %s has no data.object", payment.ErrWebhookMalformed, e.ID)
	}
	return e, nil
}

// decodeObject decodes the event's data.object into v, its member names read
// exactly as the event's are.
func decodeObject(e stripesdk.Event, v any) error {
	if err := strictjson.CheckNames(e.Data.Raw, v, MaxEventDepth); err != nil {
		return fmt.Errorf("%w: event %s: data.object: %w", payment.ErrWebhookMalformed, e.ID, err)
	}
	if err := json.Unmarshal(e.Data.Raw, v); err != nil {
		return fmt.Errorf("%w: event %s: data.object: %s", payment.ErrWebhookMalformed, e.ID, truncate(err.Error(), 200))
	}
	return nil
}

// paymentIntentEvent completes out from an event about a PaymentIntent:
// payment_intent.succeeded, payment_failed or canceled. It returns what the event
// is about, for its digest.
func paymentIntentEvent(e stripesdk.Event, out payment.ProviderEvent) (payment.ProviderEvent, payment.ProviderObject, error) {
	var pi stripesdk.PaymentIntent
	if err := decodeObject(e, &pi); err != nil {
		return payment.ProviderEvent{}, payment.ProviderObject{}, err
	}
	if pi.Object != "payment_intent" || !strings.HasPrefix(pi.ID, "pi_") {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s of type %s is not about a PaymentIntent", payment.ErrWebhookMalformed, e.ID, e.Type)
	}
	reference, ok := ourReference(pi.Metadata)
	if !ok {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: PaymentIntent %s has no reference of this service", payment.ErrWebhookIgnored, e.ID, pi.ID)
	}
	if payment.CheckAmount(pi.Amount) != nil || !isCurrency(string(pi.Currency)) {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: PaymentIntent %s has no amount of 1 to %d or no currency", payment.ErrWebhookMalformed, e.ID, pi.ID, payment.MaxAmount)
	}
	out.Reference, out.PaymentID = reference, pi.ID
	out.Amount, out.Currency = pi.Amount, strings.ToUpper(string(pi.Currency))
	switch string(e.Type) {
	case EventPaymentSucceeded:
		out.Kind = payment.ProviderSucceeded
	case EventPaymentFailed:
		out.Kind = payment.ProviderFailed
		out.Reason = failureReason(pi.LastPaymentError)
	default:
		out.Kind = payment.ProviderCancelled
	}
	return out, payment.ProviderObject{Type: string(e.Type), Object: pi.Object, ObjectID: pi.ID, Status: string(pi.Status)}, nil
}

// chargeRefundedEvent completes out from a charge.refunded event. It returns what
// the event is about, for its digest.
func chargeRefundedEvent(e stripesdk.Event, out payment.ProviderEvent) (payment.ProviderEvent, payment.ProviderObject, error) {
	var ch stripesdk.Charge
	if err := decodeObject(e, &ch); err != nil {
		return payment.ProviderEvent{}, payment.ProviderObject{}, err
	}
	if ch.Object != "charge" || ch.ID == "" {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s of type %s is not about a charge", payment.ErrWebhookMalformed, e.ID, e.Type)
	}
	if !ch.Refunded { // false while the charge is refunded only in part
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: charge %s is refunded in part only", payment.ErrWebhookIgnored, e.ID, ch.ID)
	}
	if ch.PaymentIntent != nil && strings.HasPrefix(ch.PaymentIntent.ID, "pi_") {
		out.PaymentID = ch.PaymentIntent.ID
	}
	reference, ok := chargeReference(&ch)
	if !ok && out.PaymentID == "" {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: charge %s has neither a reference of this service nor a PaymentIntent", payment.ErrWebhookIgnored, e.ID, ch.ID)
	}
	if payment.CheckAmount(ch.Amount) != nil || !isCurrency(string(ch.Currency)) {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: charge %s has no amount of 1 to %d or no currency", payment.ErrWebhookMalformed, e.ID, ch.ID, payment.MaxAmount)
	}
	out.Kind, out.Reference = payment.ProviderRefunded, reference
	out.Amount, out.Currency = ch.Amount, strings.ToUpper(string(ch.Currency))
	return out, payment.ProviderObject{Type: string(e.Type), Object: ch.Object, ObjectID: ch.ID, Status: string(ch.Status)}, nil
}

// refundFailedEvent completes out from a refund.failed event. It returns what the
// event is about, for its digest.
func refundFailedEvent(e stripesdk.Event, out payment.ProviderEvent) (payment.ProviderEvent, payment.ProviderObject, error) {
	var r stripesdk.Refund
	if err := decodeObject(e, &r); err != nil {
		return payment.ProviderEvent{}, payment.ProviderObject{}, err
	}
	if r.Object != "refund" || r.ID == "" || r.Status != stripesdk.RefundStatusFailed {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s of type %s is not about a failed refund", payment.ErrWebhookMalformed, e.ID, e.Type)
	}
	if r.PaymentIntent != nil && strings.HasPrefix(r.PaymentIntent.ID, "pi_") {
		out.PaymentID = r.PaymentIntent.ID
	}
	reference, ok := ourReference(r.Metadata)
	if !ok && out.PaymentID == "" {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: refund %s has neither a reference of this service nor a PaymentIntent", payment.ErrWebhookIgnored, e.ID, r.ID)
	}
	if payment.CheckAmount(r.Amount) != nil || !isCurrency(string(r.Currency)) {
		return payment.ProviderEvent{}, payment.ProviderObject{}, fmt.Errorf("%w: event %s: refund %s has no amount of 1 to %d or no currency", payment.ErrWebhookMalformed, e.ID, r.ID, payment.MaxAmount)
	}
	reason := fmt.Sprintf("Stripe's refund %s failed", r.ID)
	if r.FailureReason != "" {
		reason += " (" + string(r.FailureReason) + ")"
	}
	out.Kind, out.Reference, out.Reason, out.RefundID = payment.ProviderRefundFailed, reference, payment.RefusedRefund(reason).Reason, r.ID
	out.Amount, out.Currency = r.Amount, strings.ToUpper(string(r.Currency))
	return out, payment.ProviderObject{Type: string(e.Type), Object: r.Object, ObjectID: r.ID, Status: string(r.Status)}, nil
}

// reportedAt is the time of an event's created, in seconds since 1970 by Stripe's
// clock; zero for none (or one no clock reads), which tells nothing.
func reportedAt(created int64) time.Time {
	if created <= 0 || created > maxUnix {
		return time.Time{}
	}
	return time.Unix(created, 0).UTC()
}

// chargeReference returns the reference of this service in a charge's metadata,
// else in the metadata of the first refund listed on it that holds one.
func chargeReference(ch *stripesdk.Charge) (string, bool) {
	if reference, ok := ourReference(ch.Metadata); ok {
		return reference, true
	}
	if ch.Refunds == nil {
		return "", false
	}
	for _, r := range ch.Refunds.Data {
		if r == nil {
			continue
		}
		if reference, ok := ourReference(r.Metadata); ok {
			return reference, true
		}
	}
	return "", false
}

// verify checks the Stripe-Signature header: its timestamp against now within the
// tolerance, then its v1 signatures with stripe-go. Every failure wraps
// payment.ErrWebhookUnauthentic with a reason that quotes nothing of the header.
func (p *Provider) verify(sig string, body []byte, now time.Time) error {
	if strings.TrimSpace(sig) == "" {
		return fmt.Errorf("%w: no %s header", payment.ErrWebhookUnauthentic, SignatureHeader)
	}
	ts, err := signatureTimestamp(sig)
	if err != nil {
		return fmt.Errorf("%w: %s header: %v", payment.ErrWebhookUnauthentic, SignatureHeader, err)
	}
	if ts < 0 || ts > maxUnix {
		return fmt.Errorf("%w: signature timestamp outside tolerance", payment.ErrWebhookUnauthentic)
	}
	if age := now.Sub(time.Unix(ts, 0)); age > p.tolerance || age < -p.tolerance {
		return fmt.Errorf("%w: signature timestamp is %v from now, beyond the tolerance of %v", payment.ErrWebhookUnauthentic, age.Round(time.Second), p.tolerance)
	}
	// The timestamp is checked; stripe-go checks the signatures over it.
	if err := webhook.ValidatePayloadIgnoringTolerance(body, sig, p.webhookSecret); err != nil {
		return fmt.Errorf("%w: %v", payment.ErrWebhookUnauthentic, sdkSignatureReason(err))
	}
	return nil
}

// signatureTimestamp returns the t= of a Stripe-Signature header value, which must
// appear exactly once (stripe-go takes the last of several; refusing them keeps the
// two readings the same).
func signatureTimestamp(sig string) (int64, error) {
	var ts int64
	seen := false
	for _, item := range strings.Split(sig, ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return 0, errors.New("an item is not key=value")
		}
		if k != "t" {
			continue
		}
		if seen {
			return 0, errors.New("more than one timestamp")
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, errors.New("the timestamp is not an integer")
		}
		ts, seen = n, true
	}
	if !seen {
		return 0, errors.New("no timestamp")
	}
	return ts, nil
}

// sdkSignatureReason says which of stripe-go's verification errors err is, without
// anything else.
func sdkSignatureReason(err error) string {
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return "no signature"
	case errors.Is(err, webhook.ErrInvalidHeader):
		return "malformed signature header"
	case errors.Is(err, webhook.ErrNoValidSignature):
		return "no valid v1 signature"
	case errors.Is(err, webhook.ErrTooOld):
		return "signature timestamp outside tolerance"
	default:
		return "signature refused"
	}
}

// ourReference returns the payment reference in metadata if it is one this service
// makes.
func ourReference(metadata map[string]string) (string, bool) {
	reference := metadata[MetadataKey]
	if reference == "" {
		return "", false
	}
	if _, err := payment.RentalIDFor(reference); err != nil {
		return "", false
	}
	return reference, true
}

// failureReason is what last_payment_error says: its message, else its code (or
// decline code), at most MaxReasonLength bytes.
func failureReason(e *stripesdk.Error) string {
	if e == nil {
		return ""
	}
	reason := e.Msg
	if reason == "" {
		reason = string(e.Code)
	}
	if reason == "" {
		reason = string(e.DeclineCode)
	}
	return truncate(reason, MaxReasonLength)
}

// validEventID reports whether id looks like a Stripe id: 1 to
// payment.MaxEventIDLength characters of A-Z, a-z, 0-9 and _.
func validEventID(id string) bool {
	if len(id) == 0 || len(id) > payment.MaxEventIDLength {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
