package command

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// cancelOnce asks the provider once to cancel paymentID, and keeps what it said of
// the payment with its answer, if it said (PaymentProvider.CancelPayment).
func (h *Handler) cancelOnce(ctx context.Context, paymentID string) (cancelAnswer, error) {
	outcome, told, err := h.provider.CancelPayment(ctx, paymentID)
	answer := cancelAnswer{outcome: outcome}
	if err == nil && told.PaymentID != "" && (outcome == payment.AlreadySucceeded || outcome == payment.CancelledAtProvider) {
		answer.told = &told
	}
	return answer, err
}

// succeededWhenCancelled answers a cancellation of payment s that the provider
// refused because the payment had succeeded there: it records what the provider
// said of it (recordTold). Matched, the payment is confirmed and the cancellation
// declined (payment.ErrPaymentAlreadyConfirmed), so that the process approves the
// rental as a webhook's confirmation would; not matched, the payment is given up
// and what was taken goes back, and the cancellation's result is that.
func (h *Handler) succeededWhenCancelled(ctx context.Context, s payment.Payment, told payment.Told, meta Meta) (Result[payment.Payment], error) {
	after, err := h.recordTold(ctx, s, told, meta)
	if err != nil {
		return Result[payment.Payment]{}, err
	}
	if after.Status == payment.StatusConfirmed {
		return Result[payment.Payment]{State: after}, payment.ErrPaymentAlreadyConfirmed
	}
	return Result[payment.Payment]{State: after}, nil
}

// recordTold records what the provider said, when asked, of payment s: a success
// goes through ApplyProviderEvent as the provider's event toldEvent, under the
// causation ToldCausationID, so that the one match check (mismatchOf), the
// receipts, the refund of a late success and the giving up of a success that does
// not match are a webhook's. A success that matches what was recorded confirms a
// prepared payment (or, for one given up already, is a late success, refunded).
// One that does not match is recorded as a mismatch operators see, and, since the
// rental cannot have its bike for it, the payment is given up and what the
// provider said it took goes back (giveUpUnmatched). Anything else the provider
// said records nothing. Safe to call twice and at once: a second call finds the
// first one's receipt, and decides on what it recorded. It returns the payment
// afterwards. What it records names the provider's word as its cause, never the
// caller's (the meta it is given).
func (h *Handler) recordTold(ctx context.Context, s payment.Payment, told payment.Told, _ Meta) (payment.Payment, error) {
	if !told.Succeeded {
		return s, nil
	}
	res, err := h.applyProviderEvent(ctx, toldEvent(h.provider.Name(), s.Reference, told))
	if err != nil {
		return res.Payment, fmt.Errorf("command: record what the provider said of payment %s: %w", s.Reference, err)
	}
	return res.Payment, nil
}

// ToldEventPrefix starts the event id under which what the provider said of a
// payment, when asked, is recorded as its event (toldEvent): "told:" and the
// provider's payment id. No provider's webhook event id has a colon (Stripe's are
// letters, digits and underscores, the generic provider's also hyphens), and
// ApplyProviderEvent refuses one that has, so a webhook never shares its receipt.
const ToldEventPrefix = "told:"

// toldEvent is what the provider said of a payment that succeeded there, as a
// provider event of kind ProviderSucceeded: its id names the provider's payment
// (ToldEventPrefix; its hex SHA-256 for an id too long), so that every time the provider says the same of it is the
// same event, and its digest covers what decides its effect (payment id, amount,
// currency), so that the same word is a duplicate and another is refused.
func toldEvent(provider, reference string, told payment.Told) payment.ProviderEvent {
	id := ToldEventPrefix + told.PaymentID
	if len(id) > payment.MaxEventIDLength {
		long := sha256.Sum256([]byte(told.PaymentID))
		id = ToldEventPrefix + "sha256:" + hex.EncodeToString(long[:])
	}
	ev := payment.ProviderEvent{
		Provider: provider, EventID: id, Kind: payment.ProviderSucceeded, Reference: reference,
		PaymentID: told.PaymentID, Amount: told.Amount, Currency: told.Currency,
	}
	ev.Digest = payment.EffectDigest(ev, payment.ProviderObject{Type: "told", ObjectID: told.PaymentID, Status: string(payment.ProviderSucceeded)})
	return ev
}

// causationOf is the causation id of everything provider event ev records: the
// provider's answer about its payment (ToldCausationID) for an event toldEvent
// made, the provider's event (ProviderCausationID) for every other.
func causationOf(ev payment.ProviderEvent) string {
	if strings.HasPrefix(ev.EventID, ToldEventPrefix) {
		return ToldCausationID(ev.Provider, ev.PaymentID)
	}
	return ProviderCausationID(ev.Provider, ev.EventID)
}

// ToldCausationID is the causation id of what is recorded on the provider's word
// when asked about its payment paymentID: "provider-payment:<provider>:<payment
// id>", distinct from a webhook event's "provider-event:…", or, for an id too
// long for a causation id, its hex SHA-256 in its place.
func ToldCausationID(provider, paymentID string) string {
	if id := "provider-payment:" + provider + ":" + paymentID; len(id) <= eventstore.MaxCausationIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(paymentID))
	return "provider-payment:" + provider + ":sha256:" + hex.EncodeToString(sum[:])
}
