package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// ProviderEventMismatched is the receipt of an authentic provider event that names
// one of our payment references but not what was recorded for it: another provider
// payment id, another amount or another currency. It stands in the receipt's
// stream in place of ProviderEventReceived (so later deliveries find it), is not
// applied to the payment, and is what operators list (rentalctl mismatches) and
// the ProviderEventMismatches alarm counts. RefundDue is set when the event reports
// money taken on another provider payment: MismatchRefundRequested or
// MismatchRefundOwed follow in the same stream. A success reported on the payment
// recorded for another amount or currency gives the payment up instead, its money
// refunded or owed in the payment's own stream (giveUpUnmatched).
type ProviderEventMismatched struct {
	Provider  string                    `json:"provider"`
	EventID   string                    `json:"eventId"`
	Kind      payment.ProviderEventKind `json:"kind"`
	Reference string                    `json:"reference"`
	Digest    string                    `json:"digest"`
	// What the event says, and what was recorded for the payment: what it was
	// prepared for, or, once the provider took money after it was given up on,
	// what it reported taken (payment.Payment.Charge).
	PaymentID         string `json:"paymentId,omitempty"`
	Amount            int64  `json:"amount,omitempty"`
	Currency          string `json:"currency,omitempty"`
	RecordedPaymentID string `json:"recordedPaymentId"`
	RecordedAmount    int64  `json:"recordedAmount"`
	RecordedCurrency  string `json:"recordedCurrency"`
	// Fields names what differs: "provider", and the facts the event states that
	// are not what was recorded ("paymentId", "amount", "currency": a fact stated
	// as 0 or "" included; payment.Facts.Names).
	Fields    []string `json:"fields"`
	RefundDue bool     `json:"refundDue,omitempty"`
}

// MismatchRefundRequested records that the provider accepted the refund of the
// money a mismatched event reported taken, on the payment that took it.
type MismatchRefundRequested struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	RefundID  string `json:"refundId"`
}

// MismatchRefundOwed records that the money a mismatched event reported taken must
// be paid back by hand: the provider cannot refund it, or refused it for good for
// Reason (payment.RefundRefused; empty for a provider that cannot refund).
type MismatchRefundOwed struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reason    string `json:"reason,omitempty"`
}

// EventType returns "ProviderEventMismatched".
func (ProviderEventMismatched) EventType() string { return "ProviderEventMismatched" }

// EventType returns "MismatchRefundRequested".
func (MismatchRefundRequested) EventType() string { return "MismatchRefundRequested" }

// EventType returns "MismatchRefundOwed".
func (MismatchRefundOwed) EventType() string { return "MismatchRefundOwed" }

func (m ProviderEventMismatched) reference() string { return m.Reference }

// MismatchEventTypes returns the types of the events of a mismatched provider
// event's stream, in a new slice.
func MismatchEventTypes() []string {
	return []string{ProviderEventMismatched{}.EventType(), MismatchRefundRequested{}.EventType(), MismatchRefundOwed{}.EventType()}
}

// mismatchOf is the one check of a provider's word about a payment against what s
// recorded, whatever brought that word (a webhook's event, or the provider's
// answer when asked): the facts ev states that are not what was recorded
// (payment.Disagreements: a fact ev states as 0 or "" is compared like any other,
// only those ev leaves unstated are not), as the mismatch to record, and whether
// there is one. An event of another provider than the configured one (provider,
// when it is known) never matches: the payments were prepared with the configured
// one, so another provider's word about them is not theirs to give, however
// authentic.
func mismatchOf(s payment.Payment, ev payment.ProviderEvent, provider string) (ProviderEventMismatched, bool) {
	var fields []string
	otherProvider := provider != "" && ev.Provider != provider
	if otherProvider {
		fields = append(fields, "provider")
	}
	differ := payment.Disagreements(s, ev)
	fields = append(fields, differ.Names()...)
	if len(fields) == 0 {
		return ProviderEventMismatched{}, false
	}
	charge := s.Charge() // what the event was compared with
	return ProviderEventMismatched{
		Provider: ev.Provider, EventID: ev.EventID, Kind: ev.Kind, Reference: ev.Reference, Digest: ev.Digest,
		PaymentID: ev.PaymentID, Amount: ev.Amount, Currency: ev.Currency,
		RecordedPaymentID: s.PaymentID, RecordedAmount: charge.Amount, RecordedCurrency: charge.Currency,
		Fields: fields,
		// Money taken on a payment that is not ours to keep goes back on it
		// (by the provider that holds the money: another provider's event names no
		// payment of it); so does money whose refund there failed (our refund of a
		// mismatch's money, RefundUnexpected, which, asked again, the provider makes
		// anew or answers refused, and the money is then owed by hand).
		RefundDue: !otherProvider && (ev.Kind == payment.ProviderSucceeded || ev.Kind == payment.ProviderRefundFailed) &&
			ev.PaymentID != "" && differ.Has(payment.FactPaymentID),
	}, true
}

// recordMismatch writes m as the receipt of its event, alone (the payment is not
// touched), then refunds what it reports taken. eventstore.ErrConcurrency: another
// delivery wrote the receipt first.
func (h *Handler) recordMismatch(ctx context.Context, m ProviderEventMismatched, receiptStream string, meta Meta) (ProviderResult, error) {
	receipt, err := h.receiptEvent(m, meta)
	if err != nil {
		return ProviderResult{}, err
	}
	stored, err := h.store.Append(ctx, receiptStream, 0, receipt)
	if err != nil {
		return ProviderResult{}, err
	}
	m, err = h.finishMismatch(ctx, receiptStream, stored, meta)
	if err != nil {
		return ProviderResult{}, err
	}
	s, _, err := h.LoadPayment(ctx, m.Reference)
	return ProviderResult{Payment: s, Mismatch: &m}, err
}

// finishMismatch refunds the money a mismatch reports taken, on the provider payment
// that took it, unless its stream (records, from version 1) already records the
// refund or its being owed: safe to call twice. It returns the mismatch.
func (h *Handler) finishMismatch(ctx context.Context, stream string, records []eventstore.Record, meta Meta) (ProviderEventMismatched, error) {
	m, err := eventstore.Decode[ProviderEventMismatched](records[0], DecodeEvent)
	if err != nil {
		return m, err
	}
	if !m.RefundDue || len(records) > 1 {
		return m, nil
	}
	owed := MismatchRefundOwed{Reference: m.Reference, PaymentID: m.PaymentID, Amount: m.Amount, Currency: m.Currency}
	var e interface{ EventType() string } = owed
	refundID, err := h.provider.RefundUnexpected(ctx, m.PaymentID, m.Reference)
	var refused *payment.RefundRefused
	switch {
	case err == nil:
		e = MismatchRefundRequested{Reference: m.Reference, PaymentID: m.PaymentID, RefundID: refundID}
	case errors.As(err, &refused):
		owed.Reason = refused.Reason
		e = owed
	case errors.Is(err, payment.ErrAlreadyRefunded):
		// The provider says the money went back already (a refund repeated
		// after it forgot the idempotency key): nothing is owed, and there is
		// no new refund to name.
		e = MismatchRefundRequested{Reference: m.Reference, PaymentID: m.PaymentID}
	case !errors.Is(err, payment.ErrRefundNotSupported):
		return m, fmt.Errorf("command: refund provider payment %s, which took money under %s without being recorded for it: %w", m.PaymentID, m.Reference, err)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return m, err
	}
	rentalID, _ := payment.RentalIDFor(m.Reference)
	_, err = h.store.Append(ctx, stream, records[len(records)-1].Version, eventstore.Event{
		ID: h.newID(), Type: e.EventType(), Data: data,
		Tags: []string{"payment:" + m.Reference, "rental:" + rentalID}, CorrelationID: rentalID, CausationID: meta.CausationID,
	})
	if errors.Is(err, eventstore.ErrConcurrency) {
		return m, nil // another delivery recorded the refund: one refund, by the provider's idempotency
	}
	return m, err
}
