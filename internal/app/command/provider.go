package command

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// PaymentProvider is everything the payment commands ask of the provider that holds
// the money, in one interface that every provider implements whole: what a
// provider cannot do, it answers so (payment.CancelNotSupported,
// payment.ErrRefundNotSupported, payment.ErrLookupNotSupported), rather than
// lacking a method. A capability discovered by type assertion is lost by any
// wrapper that does not forward it, and a provider deployed behind one would
// then silently do less than its tests prove; a method every provider has
// cannot be dropped. The adapters in internal/adapters/provider implement it.
// The decider stays pure: the handler calls the provider around it, and what it
// records always follows the provider's answer.
type PaymentProvider interface {
	// Name is the provider's name, which its webhook events carry
	// (payment.ProviderEvent.Provider): an event of another provider never
	// applies to the payments this one prepared.
	Name() string
	// CreatePayment creates the payment of a reference at the provider; creating
	// twice for one reference must be the same payment.
	CreatePayment(ctx context.Context, reference string, amount int64, currency string) (payment.Created, error)
	// CancelPayment calls a payment off at the provider, and says whether it did,
	// whether the payment had already succeeded, that the provider cannot cancel
	// at all (payment.CancelNotSupported), or that it did not answer
	// (payment.ProviderCannotSay, with the error). With a nil error and an
	// outcome of payment.CancelledAtProvider or payment.AlreadySucceeded, told is
	// what the provider holds of the payment, read with its answer (the payment it
	// cancelled, or the one it would not cancel), when it says (told.PaymentID is
	// set); a provider that does not say leaves it zero.
	CancelPayment(ctx context.Context, paymentID string) (outcome payment.CancelOutcome, told payment.Told, err error)
	// RefundPayment refunds a payment; refunding twice for one reference must be one
	// refund. payment.ErrRefundNotSupported: the provider cannot refund.
	RefundPayment(ctx context.Context, paymentID, reference string) (refundID string, err error)
	// RefundUnexpected refunds in full a provider payment that took money under one
	// of our references without being the payment recorded for it. Refunding twice
	// for one paymentID must be one refund, and never the refund of the recorded
	// payment. payment.ErrRefundNotSupported: the provider cannot refund it.
	RefundUnexpected(ctx context.Context, paymentID, reference string) (refundID string, err error)
	// ReferenceOf finds our payment reference from the provider's payment id, for
	// events that carry only the latter. payment.ErrLookupNotSupported: the
	// provider cannot be asked (its events always name the reference).
	ReferenceOf(ctx context.Context, paymentID string) (reference string, err error)
}

// WithProvider sets the payment provider, each of its calls bounded by the
// handler's provider timeout (WithProviderTimeout). A Handler has none unless it
// is given one: wiring picks it.
func WithProvider(p PaymentProvider) Option { return func(h *Handler) { h.provider = p } }

// Provider returns the provider the handler calls, each call bounded by its
// provider timeout, or nil for a Handler built without one.
func (h *Handler) Provider() PaymentProvider { return h.provider }

// ErrNoProvider reports a payment command sent to a Handler built without a payment
// provider (WithProvider): it is refused, and nothing is read or recorded.
var ErrNoProvider = errors.New("command: no payment provider configured (WithProvider): payment commands are refused")

// needProvider is ErrNoProvider, wrapped with what was refused, for a Handler built
// without a provider, and nil otherwise.
func (h *Handler) needProvider(what string) error {
	if h.provider == nil {
		return fmt.Errorf("%w: %s", ErrNoProvider, what)
	}
	return nil
}

// ErrProviderEventReused reports a provider event id seen before with another
// content: it is refused, and nothing is applied.
var ErrProviderEventReused = errors.New("command: the provider's event id was already used for another event")

// ProviderEventReceived is the receipt of one provider event, alone in a stream of
// its own ("providerevent-<provider>-<event id>"), written in the same transaction as
// whatever the event changed, so that every delivery after the first finds it and
// changes nothing. An event that settles its payment (PaymentConfirmed,
// PaymentRejected) has no receipt stream: the settling event carries its receipt
// (payment.ReceiptOf), and every later delivery finds it in the payment's stream.
// Every other event (one for a payment already settled, a late success, a refund,
// a cancellation, a failure the provider answers as already succeeded) and every
// event recorded before receipts moved into settlements has its receipt here.
type ProviderEventReceived struct {
	Provider  string                    `json:"provider"`
	EventID   string                    `json:"eventId"`
	Kind      payment.ProviderEventKind `json:"kind"`
	Reference string                    `json:"reference"`
	Digest    string                    `json:"digest"`
}

// EventType returns "ProviderEventReceived".
func (ProviderEventReceived) EventType() string { return "ProviderEventReceived" }

// ReceiptStreamID returns the stream of a provider event's receipt:
// "providerevent-<provider>-<event id>" where that fits a stream id
// (eventstore.MaxStreamIDBytes), which is where every receipt stored so far lives,
// and otherwise "providereventsha256-<provider>-<hex SHA-256 of the event id>",
// which always fits and never equals a key of the first form.
func ReceiptStreamID(provider, eventID string) string {
	if id := "providerevent-" + provider + "-" + eventID; len(id) <= eventstore.MaxStreamIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(eventID))
	return "providereventsha256-" + provider + "-" + hex.EncodeToString(sum[:])
}

// ProviderCausationID is the causation id of everything a provider event records:
// "provider-event:<provider>:<event id>", or, for an event id too long for a
// causation id, "provider-event:<provider>:sha256:<hex SHA-256 of the event id>".
func ProviderCausationID(provider, eventID string) string {
	if id := "provider-event:" + provider + ":" + eventID; len(id) <= eventstore.MaxCausationIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(eventID))
	return "provider-event:" + provider + ":sha256:" + hex.EncodeToString(sum[:])
}

// ProviderResult is the outcome of a provider event: the payment after it, whether
// this delivery repeated one already applied, and, for an event that does not
// match what was recorded for the payment (which it then left unchanged), the
// mismatch recorded.
type ProviderResult struct {
	Payment   payment.Payment
	Duplicate bool
	Mismatch  *ProviderEventMismatched
}

// preparePayment creates the payment at the provider, then records PaymentPrepared
// with the provider's payment id. A payment already prepared is not created again.
func (h *Handler) preparePayment(ctx context.Context, c payment.PreparePayment, meta Meta) (Result[payment.Payment], error) {
	s, records, err := h.LoadPayment(ctx, c.Reference)
	if err != nil {
		return Result[payment.Payment]{}, err
	}
	if s.Status != "" && s.Status != payment.StatusNone {
		return Result[payment.Payment]{State: s}, nil
	}
	if _, err := payment.Decide(s, c); err != nil { // refuse bad input before the provider sees it
		return Result[payment.Payment]{}, err
	}
	created, err := h.provider.CreatePayment(ctx, c.Reference, c.Amount, c.Currency)
	if err != nil {
		return Result[payment.Payment]{}, fmt.Errorf("command: create payment %s at the provider: %w", c.Reference, err)
	}
	c.PaymentID, c.ClientSecret = created.PaymentID, created.ClientSecret
	return runFrom(ctx, h, payments, payment.StreamID(c.Reference), records, payment.Command(c), meta)
}

// cancelPayment asks the provider first (cancelAtProvider: temporary failures are
// tried again within the command's budget): a payment that already succeeded there
// is declined (payment.ErrPaymentAlreadyConfirmed), and what the provider said of it
// with its answer is recorded, through the checks of a webhook's
// event (succeededWhenCancelled); otherwise PaymentCancelled is recorded, so that the bike is released on time. If
// the provider did not answer, CancellationOwedAtProvider is recorded with it: the
// cancellation stays owed, and RetryCancellation makes it later. A provider that
// cannot cancel at all (payment.CancelNotSupported) owes nothing. Either way a
// success that arrives later is refunded.
func (h *Handler) cancelPayment(ctx context.Context, c payment.CancelPayment, meta Meta) (Result[payment.Payment], error) {
	s, records, err := h.LoadPayment(ctx, c.Reference)
	if err != nil {
		return Result[payment.Payment]{}, err
	}
	c.UnansweredAttempts = 0 // only the provider's answer, below, sets it
	if s.Status == payment.StatusPrepared {
		answer, err := h.cancelAtProvider(ctx, s.PaymentID)
		switch outcome := answer.outcome; {
		case outcome == payment.AlreadySucceeded && answer.told != nil:
			return h.succeededWhenCancelled(ctx, s, *answer.told, meta)
		case outcome == payment.AlreadySucceeded:
			return Result[payment.Payment]{State: s}, payment.ErrPaymentAlreadyConfirmed
		case outcome == payment.ProviderCannotSay:
			c.UnansweredAttempts = answer.attempts
		case err != nil:
			return Result[payment.Payment]{}, fmt.Errorf("command: cancel payment %s at the provider: %w", c.Reference, err)
		}
	}
	// Decided on what was read before the provider was asked: if the payment moved
	// meanwhile, the append conflicts and the decision is made again.
	return runFrom(ctx, h, payments, payment.StreamID(c.Reference), records, payment.Command(c), meta)
}

// DefaultCancelRetry bounds how often a cancellation the provider did not answer
// is tried again within one command, and how long it waits in between: about two
// seconds at most in all, well inside an API request's and a sweep's budget.
var DefaultCancelRetry = eventstore.RetryPolicy{MaxAttempts: 3, BaseDelay: 400 * time.Millisecond, MaxDelay: 1600 * time.Millisecond}

// cancelMargin is how much of the context's time a retry of a cancellation leaves
// for recording what happened: a wait that would end within it is not started.
const cancelMargin = 2 * time.Second

// WithCancelRetry sets how a cancellation the provider did not answer is retried
// within one command (DefaultCancelRetry by default; MaxAttempts below 1 keeps it).
func WithCancelRetry(p eventstore.RetryPolicy) Option {
	return func(h *Handler) {
		if p.MaxAttempts >= 1 {
			h.cancelRetry = p
		}
	}
}

// cancelAnswer is the provider's last answer to a cancellation: its outcome, how
// many times it was asked, and what it said of the payment with it, if it says
// (PaymentProvider.CancelPayment's told).
type cancelAnswer struct {
	outcome  payment.CancelOutcome
	attempts int
	told     *payment.Told
}

// cancelAtProvider asks the provider to cancel paymentID, and asks again, with
// backoff, while it does not answer (payment.ProviderCannotSay with an error that
// payment.Temporary says may pass), up to the retry policy's attempts and never
// past the context's deadline less cancelMargin. It returns the last answer (with
// how many times the provider was asked), and the last error. An unknown outcome
// with an error is returned as it is: nothing may be recorded on it.
func (h *Handler) cancelAtProvider(ctx context.Context, paymentID string) (cancelAnswer, error) {
	// Every attempt ends cancelMargin before ctx does, so that what it answered, or
	// that it did not answer, can still be recorded.
	call, deadline, bounded := ctx, time.Time{}, false
	if deadline, bounded = ctx.Deadline(); bounded {
		var cancel context.CancelFunc
		call, cancel = context.WithDeadline(ctx, deadline.Add(-cancelMargin))
		defer cancel()
	}
	// A retry is started only if its wait and the whole of its call fit before that.
	perCall := h.providerTimeout
	for attempt := 1; ; attempt++ {
		answer, err := h.cancelOnce(call, paymentID)
		answer.attempts = attempt
		switch answer.outcome {
		case payment.CancelledAtProvider, payment.AlreadySucceeded, payment.CancelNotSupported:
			return answer, nil
		case payment.ProviderCannotSay:
		default:
			if err == nil {
				err = fmt.Errorf("command: the provider answered the cancellation with %q", answer.outcome)
			}
			return answer, err
		}
		if err == nil || !payment.Temporary(err) || attempt >= h.cancelRetry.MaxAttempts || call.Err() != nil {
			return answer, err
		}
		if bounded && time.Until(deadline) < h.cancelRetry.MaxDelay+perCall+cancelMargin {
			return answer, err
		}
		if h.cancelRetry.Backoff(call, attempt) != nil {
			return answer, err
		}
	}
}

// RetryCancellation makes a cancellation that was owed to the provider
// (payment.Payment.CancellationDue): it asks the provider again, as cancelPayment
// does, and records what it answered. Cancelled there: CancellationDoneAtProvider,
// and nothing is owed any more. Already succeeded there: the success is recorded
// (PaymentSucceededAfterCancellation, as the provider's webhook would) and the
// money is refunded. Otherwise the cancellation stays owed and the error says why
// (for a provider that answered without cancelling, such as a payment being
// processed, an error wrapping ErrCancellationStillOwed), and that it is still
// owed is recorded (payment.CancellationStillOwed), which puts the sweep's next
// retry off (owed.Backoff). It reports whether the cancellation is still
// owed afterwards. For a payment with no cancellation owed
// it does nothing, so it is safe to call twice, late and from anywhere.
func (h *Handler) RetryCancellation(ctx context.Context, reference string, meta Meta) (owed bool, err error) {
	if err := h.needProvider("retry cancellation of " + reference); err != nil {
		return false, err
	}
	s, _, err := h.LoadPayment(ctx, reference)
	if err != nil || !s.CancellationDue() {
		return false, err
	}
	answer, err := h.cancelAtProvider(ctx, s.PaymentID)
	switch outcome, attempts := answer.outcome, answer.attempts; {
	case outcome == payment.CancelledAtProvider:
		res, err := run(ctx, h, payments, payment.StreamID(reference), payment.Command(payment.RecordCancelledAtProvider{Reference: reference}), meta)
		return err != nil || res.State.CancellationDue(), err
	case outcome == payment.AlreadySucceeded && answer.told != nil:
		after, err := h.recordTold(ctx, s, *answer.told, meta)
		if err != nil && after.Status == "" {
			return true, err // nothing read back: still owed, as far as this call knows
		}
		return after.CancellationDue(), err
	case outcome == payment.AlreadySucceeded:
		res, err := run(ctx, h, payments, payment.StreamID(reference), payment.Command(payment.ConfirmPayment{Reference: reference}), meta)
		if err != nil {
			return true, err
		}
		if _, err := h.Refund(ctx, reference, meta); err != nil {
			return res.State.CancellationDue(), err
		}
		return res.State.CancellationDue(), nil
	case err != nil:
		err = fmt.Errorf("command: cancel payment %s at the provider (%d attempts): %w", reference, attempts, err)
		return true, errors.Join(err, h.stillOwed(ctx, s, meta))
	}
	err = fmt.Errorf("%w: payment %s: the provider answered %q", ErrCancellationStillOwed, reference, answer.outcome)
	return true, errors.Join(err, h.stillOwed(ctx, s, meta))
}

// stillOwed records that the provider left a retry of payment s's owed
// cancellation unanswered (payment.CancellationStillOwed), which puts the next
// retry off. A retry recorded already by another caller that read the same tries
// is not recorded twice.
func (h *Handler) stillOwed(ctx context.Context, s payment.Payment, meta Meta) error {
	c := payment.RecordCancellationStillOwed{Reference: s.Reference, Tries: s.CancellationTries + 1}
	if _, err := run(ctx, h, payments, payment.StreamID(s.Reference), payment.Command(c), meta); err != nil {
		return fmt.Errorf("command: record that the cancellation of payment %s is still owed: %w", s.Reference, err)
	}
	return nil
}

// ErrCancellationStillOwed reports a cancellation owed to the provider that it
// answered without making (a payment it is processing, a provider that cannot
// cancel any more): the cancellation stays owed, to be tried again later.
var ErrCancellationStillOwed = errors.New("command: the cancellation is still owed to the provider")

// Refund sends back the money of a late success: through the provider where it can
// refund (RefundRequested), else as a refund owed (RefundOwed). It does nothing for
// a payment with no refund due, so it is safe to call twice and from every path
// that sees a late success.
//
// What the provider answers decides what is recorded (refundCommand): a refund it
// cannot make at all (payment.ErrRefundNotSupported) or refuses for good
// (payment.RefundRefused) is owed, for operators to make by hand; one it says is
// made already (payment.ErrAlreadyRefunded) is its word that the money went back
// (PaymentRefunded). Any other error records nothing and is returned: the refund
// stays due, and whoever called asks again (a webhook's redelivery, the process's
// stream record, parked and redelivered by the sweep until it succeeds).
func (h *Handler) Refund(ctx context.Context, reference string, meta Meta) (payment.Payment, error) {
	if err := h.needProvider("refund " + reference); err != nil {
		return payment.Payment{}, err
	}
	s, _, err := h.LoadPayment(ctx, reference)
	if err != nil || !s.RefundDue() {
		return s, err
	}
	refundID, err := h.provider.RefundPayment(ctx, s.PaymentID, reference)
	c, err := refundCommand(reference, refundID, err)
	if err != nil {
		return s, err
	}
	res, err := run(ctx, h, payments, payment.StreamID(reference), c, meta)
	return res.State, err
}

// refundCommand is the payment command that records the provider's answer to the
// refund of reference (refundID, err), or the error to return, recording nothing,
// when the answer leaves the refund to be asked for again.
func refundCommand(reference, refundID string, err error) (payment.Command, error) {
	var refused *payment.RefundRefused
	switch {
	case err == nil:
		return payment.RecordRefund{Reference: reference, RefundID: refundID}, nil
	case errors.Is(err, payment.ErrRefundNotSupported):
		return payment.OweRefund{Reference: reference}, nil
	case errors.As(err, &refused):
		return payment.OweRefund{Reference: reference, Reason: refused.Reason}, nil
	case errors.Is(err, payment.ErrAlreadyRefunded):
		return payment.ConfirmRefund{Reference: reference}, nil
	}
	return nil, fmt.Errorf("command: refund payment %s at the provider: %w", reference, err)
}

// ApplyProviderEvent applies one verified provider event to its payment, once: the
// first delivery records what it changes and its receipt in one write (an event
// that settles the payment, as one conditional append of the settling event that
// carries the receipt; any other, with a receipt stream of its own); every later
// delivery of the same event id and content changes nothing and gets the same
// answer, and one with other content for the same payment is refused with
// ErrProviderEventReused (as is one for another payment when the id's first use
// left a receipt stream; a settlement's receipt is found by its payment only). A
// success for a payment already given up on is recorded and refunded. An event
// for a payment we never prepared is payment.ErrPaymentNotFound, and changes
// nothing; an event id that is empty or longer than payment.MaxEventIDLength is
// payment.ErrWebhookMalformed, and so is one with a colon, which
// only the service's own record of what the provider said when asked has
// (ToldEventPrefix): a webhook never shares its receipt, whatever its adapter let
// through.
//
// An event applies to its payment only when what it says of the provider's payment
// id, amount and currency is what was recorded. One that does not match is not
// applied: its receipt is a ProviderEventMismatched instead
// (ProviderResult.Mismatch), which operators see, and money it reports taken on
// another provider payment is refunded on that payment
// (PaymentProvider.RefundUnexpected), or recorded as owed. A success the configured provider reports on the payment
// recorded for another amount or currency cannot pay for the rental: the payment
// is given up and what it took goes back (giveUpUnmatched), unless it was
// confirmed already.
//
// A failure is not the end at a provider that can cancel: the payment stays
// payable there (the renter may try another card), so it is cancelled at the
// provider before the rejection is recorded. A provider that says the payment
// already succeeded makes the failure change nothing (the success confirms it); one
// that cannot answer makes ApplyProviderEvent return its error, with nothing
// recorded, so that the provider delivers the event again.
//
// Every event it records, on every delivery (the receipt, what the event changes,
// a refund, a mismatch's refund), names the provider's event as its cause
// (ProviderCausationID; for what the provider said when asked, ToldCausationID),
// and its correlation is the rental's: whoever delivered
// the event (an HTTP request, a test) is the caller's to log beside the event id.
func (h *Handler) ApplyProviderEvent(ctx context.Context, ev payment.ProviderEvent) (ProviderResult, error) {
	if strings.Contains(ev.EventID, ":") {
		return ProviderResult{}, fmt.Errorf("%w: provider event id %q has a colon, which only the service's own records have", payment.ErrWebhookMalformed, ev.EventID)
	}
	return h.applyProviderEvent(ctx, ev)
}

// applyProviderEvent is ApplyProviderEvent for an event of any id: a webhook's, or
// the provider's word when asked (toldEvent).
func (h *Handler) applyProviderEvent(ctx context.Context, ev payment.ProviderEvent) (ProviderResult, error) {
	if err := h.needProvider("provider event " + ev.EventID); err != nil {
		return ProviderResult{}, err
	}
	store, ok := h.store.(eventstore.MultiStreamStore)
	if !ok {
		return ProviderResult{}, ErrNeedsMultiStreamStore
	}
	ev, err := h.identify(ctx, ev)
	if err != nil {
		return ProviderResult{}, err
	}
	meta := Meta{CausationID: causationOf(ev)}
	a := &application{h: h, ev: ev, receiptStream: ReceiptStreamID(ev.Provider, ev.EventID), meta: meta}
	if _, err := eventstore.ExecuteStreams(ctx, oneStreamAlone{store}, a.attempt, h.policy); err != nil {
		return ProviderResult{}, err
	}
	if a.answered {
		if a.answer.Mismatch != nil && a.err == nil {
			return h.giveUpUnmatched(ctx, ev, a.answer, meta)
		}
		return a.answer, a.err
	}
	if a.after.RefundDue() {
		refunded, err := h.Refund(ctx, ev.Reference, meta)
		return ProviderResult{Payment: refunded}, err
	}
	return ProviderResult{Payment: a.after}, nil
}

// oneStreamAlone appends a single stream's part with Append, which writes one event
// as one conditional put (a settlement that carries its receipt: one write unit on
// DynamoDB, where a transaction of one item costs two), and several streams' parts
// together with AppendStreams. Either way, a version taken meanwhile is an
// eventstore.ErrConcurrency and nothing is written.
type oneStreamAlone struct{ eventstore.MultiStreamStore }

func (s oneStreamAlone) AppendStreams(ctx context.Context, appends ...eventstore.StreamAppend) ([]eventstore.Record, error) {
	if len(appends) == 1 {
		return s.Append(ctx, appends[0].StreamID, appends[0].ExpectedVersion, appends[0].Events...)
	}
	return s.MultiStreamStore.AppendStreams(ctx, appends...)
}

// identify checks what names a provider event's payment and its receipt: an event
// id of 1 to payment.MaxEventIDLength bytes that fits a receipt's stream id (else
// payment.ErrWebhookMalformed), and a reference of one of our rentals' payments,
// found from the provider's payment id when the event names only that (else
// payment.ErrPaymentNotFound). It returns ev with its reference.
func (h *Handler) identify(ctx context.Context, ev payment.ProviderEvent) (payment.ProviderEvent, error) {
	if ev.EventID == "" || len(ev.EventID) > payment.MaxEventIDLength {
		return ev, fmt.Errorf("%w: provider event id must be 1 to %d bytes", payment.ErrWebhookMalformed, payment.MaxEventIDLength)
	}
	if ev.Reference == "" && ev.PaymentID != "" {
		ref, err := h.provider.ReferenceOf(ctx, ev.PaymentID)
		if errors.Is(err, payment.ErrLookupNotSupported) {
			return ev, fmt.Errorf("%w: the event names no payment reference", payment.ErrPaymentNotFound)
		}
		if err != nil {
			return ev, err
		}
		ev.Reference = ref
	}
	if _, err := payment.RentalIDFor(ev.Reference); err != nil {
		return ev, fmt.Errorf("%w: %w", payment.ErrPaymentNotFound, err)
	}
	if err := eventstore.ValidateStreamID(ReceiptStreamID(ev.Provider, ev.EventID)); err != nil {
		return ev, fmt.Errorf("%w: provider event id %q", payment.ErrWebhookMalformed, ev.EventID)
	}
	return ev, nil
}

// application is one ApplyProviderEvent: its attempts, and what they found out.
type application struct {
	h             *Handler
	ev            payment.ProviderEvent
	receiptStream string
	meta          Meta
	// askedProvider and succeededAtProvider keep what the provider said of a
	// cancellation before a rejection, so that it is asked once per call.
	askedProvider, succeededAtProvider bool
	// after is the payment after what the last attempt decided.
	after payment.Payment
	// answered says that an attempt answered without appending: answer and err.
	answered bool
	answer   ProviderResult
	err      error
}

// attempt is one attempt of the application, from fresh reads: a receipt already
// stored, in the event's receipt stream or in a settling event of its payment,
// answers as a redelivery, and an event that does not match its payment is recorded
// as a mismatch, both without appending here; otherwise it returns what the event
// changes in the payment and, unless that carries the receipt, the receipt, to be
// appended together.
func (a *application) attempt(ctx context.Context) ([]eventstore.StreamAppend, error) {
	receipts, err := a.h.store.Read(ctx, a.receiptStream, 0)
	if err != nil {
		return nil, err
	}
	if len(receipts) > 0 {
		return nil, a.answerWith(a.h.redelivered(ctx, a.ev, a.receiptStream, receipts, a.meta))
	}
	s, records, err := a.h.LoadPayment(ctx, a.ev.Reference)
	if err != nil {
		return nil, err
	}
	if s.Status == "" || s.Status == payment.StatusNone {
		return nil, fmt.Errorf("%w: %s", payment.ErrPaymentNotFound, a.ev.Reference)
	}
	if seen, ok, err := receiptIn(records, a.ev.Provider, a.ev.EventID); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return nil, a.answerWith(a.h.settledBy(ctx, a.ev, seen, a.meta))
	}
	if m, ok := mismatchOf(s, a.ev, a.h.provider.Name()); ok {
		return nil, a.answerWith(a.recordMismatch(ctx, m))
	}
	decided, err := a.decide(ctx, s)
	if err != nil {
		return nil, err
	}
	a.after = s
	for _, e := range decided {
		a.after = payment.Evolve(a.after, e)
	}
	return a.appends(records, decided)
}

// answerWith ends the application with res and err, appending nothing more.
func (a *application) answerWith(res ProviderResult, err error) error {
	a.answered, a.answer, a.err = true, res, err
	return nil
}

// recordMismatch records m as the event's receipt; when another delivery stored
// a receipt first, it answers as that redelivery.
func (a *application) recordMismatch(ctx context.Context, m ProviderEventMismatched) (ProviderResult, error) {
	res, err := a.h.recordMismatch(ctx, m, a.receiptStream, a.meta)
	if !errors.Is(err, eventstore.ErrConcurrency) {
		return res, err
	}
	receipts, readErr := a.h.store.Read(ctx, a.receiptStream, 0)
	switch {
	case readErr != nil:
		return ProviderResult{}, readErr
	case len(receipts) == 0:
		return ProviderResult{}, err
	}
	return a.h.redelivered(ctx, a.ev, a.receiptStream, receipts, a.meta)
}

// decide is what the event changes in payment s: what payment.Decide says of its
// command, nothing for a failure or cancellation reported after the success, and
// nothing for a failure of a payment that succeeded at the provider meanwhile
// (cancelFirst).
func (a *application) decide(ctx context.Context, s payment.Payment) ([]payment.Event, error) {
	decided, err := payment.Decide(s, commandFor(a.ev))
	if errors.Is(err, payment.ErrPaymentAlreadyConfirmed) {
		return nil, nil // acknowledged, changes nothing
	}
	if err != nil || !rejects(decided) {
		return decided, err
	}
	succeeded, err := a.cancelFirst(ctx, s.PaymentID)
	if err != nil || succeeded {
		return nil, err // on a success, its own event confirms the payment
	}
	return decided, nil
}

// cancelFirst cancels a failed payment at the provider before its rejection is
// recorded, once per call (brief failures tried again, as any cancellation): a
// later attempt decides again on what the provider already said. It reports
// whether the provider said the payment already succeeded.
func (a *application) cancelFirst(ctx context.Context, paymentID string) (succeeded bool, err error) {
	if !a.askedProvider {
		answer, err := a.h.cancelAtProvider(ctx, paymentID)
		switch {
		case answer.outcome == payment.AlreadySucceeded:
			a.succeededAtProvider = true
		case err != nil:
			return false, fmt.Errorf("command: cancel payment %s at the provider before rejecting it: %w", a.ev.Reference, err)
		}
		a.askedProvider = true
	}
	return a.succeededAtProvider, nil
}

// appends are, when the event changes the payment (decided, on records), the
// payment's events, and the event's receipt unless one of them carries it (a
// settlement: then the payment's stream is all that is written, at the version
// decided on, so that a concurrent delivery of the same event loses the race and
// finds the receipt there), to be written together.
func (a *application) appends(records []eventstore.Record, decided []payment.Event) ([]eventstore.StreamAppend, error) {
	ev := a.ev
	var parts []eventstore.StreamAppend
	if !carriesReceipt(decided, ev) {
		receipt, err := a.h.receiptEvent(ProviderEventReceived{Provider: ev.Provider, EventID: ev.EventID, Kind: ev.Kind, Reference: ev.Reference, Digest: ev.Digest}, a.meta)
		if err != nil {
			return nil, err
		}
		parts = append(parts, eventstore.StreamAppend{StreamID: a.receiptStream, Events: []eventstore.Event{receipt}})
	}
	if len(decided) > 0 {
		events, err := runner(a.h, payments).Encode(decided, a.meta)
		if err != nil {
			return nil, err
		}
		parts = append(parts, eventstore.StreamAppend{StreamID: payment.StreamID(ev.Reference), ExpectedVersion: lastVersion(records), Events: events})
	}
	return parts, nil
}

// carriesReceipt reports whether one of the decided events carries the receipt of
// provider event ev.
func carriesReceipt(decided []payment.Event, ev payment.ProviderEvent) bool {
	for _, e := range decided {
		if r, ok := payment.ReceiptOf(e); ok && r.Provider == ev.Provider && r.EventID == ev.EventID {
			return true
		}
	}
	return false
}

// receiptIn returns the receipt of the provider's event eventID that a settling
// event of a payment's stream (records) carries, if one does.
func receiptIn(records []eventstore.Record, provider, eventID string) (payment.ProviderReceipt, bool, error) {
	found, err := receiptsIn(records, provider, eventID)
	if err != nil || len(found) == 0 {
		return payment.ProviderReceipt{}, false, err
	}
	return found[0].receipt, true, nil
}

// carried is a receipt carried by the settling event record.
type carried struct {
	receipt payment.ProviderReceipt
	record  eventstore.Record
}

// receiptsIn returns every settling event of a payment's stream (records) that
// carries the receipt of the provider's event eventID, in order.
func receiptsIn(records []eventstore.Record, provider, eventID string) ([]carried, error) {
	var out []carried
	for _, r := range records {
		if !payment.Settles(r.Type) {
			continue
		}
		e, err := eventstore.Decode[payment.Event](r, payment.DecodeEvent)
		if err != nil {
			return nil, err
		}
		if seen, ok := payment.ReceiptOf(e); ok && seen.Provider == provider && seen.EventID == eventID {
			out = append(out, carried{receipt: seen, record: r})
		}
	}
	return out, nil
}

// settledBy answers a delivery of an event whose receipt the payment's settlement
// carries, as redelivered does one whose receipt has a stream of its own: the same
// event changes nothing more (but a refund its payment still owes), another one
// under the same id is ErrProviderEventReused.
func (h *Handler) settledBy(ctx context.Context, ev payment.ProviderEvent, seen payment.ProviderReceipt, meta Meta) (ProviderResult, error) {
	if !ev.HasDigest(seen.Digest) || seen.Kind != ev.Kind {
		return ProviderResult{}, ErrProviderEventReused
	}
	s, err := h.Refund(ctx, ev.Reference, meta)
	return ProviderResult{Payment: s, Duplicate: true}, err
}

// redelivered answers a delivery of an event whose receipt is stored: the same
// event finishes what its first delivery may not have (a refund), another one under
// the same id is ErrProviderEventReused.
func (h *Handler) redelivered(ctx context.Context, ev payment.ProviderEvent, receiptStream string, receipts []eventstore.Record, meta Meta) (ProviderResult, error) {
	seen, err := storedReceipt(receiptStream, receipts)
	if err != nil {
		return ProviderResult{}, err
	}
	if !ev.HasDigest(seen.Digest) || seen.Reference != ev.Reference || seen.Kind != ev.Kind {
		return ProviderResult{}, ErrProviderEventReused
	}
	if receipts[0].Type == (ProviderEventMismatched{}).EventType() {
		m, err := h.finishMismatch(ctx, receiptStream, receipts, meta)
		if err != nil {
			return ProviderResult{}, err
		}
		s, _, err := h.LoadPayment(ctx, ev.Reference)
		return ProviderResult{Payment: s, Duplicate: true, Mismatch: &m}, err
	}
	s, err := h.Refund(ctx, ev.Reference, meta)
	return ProviderResult{Payment: s, Duplicate: true}, err
}

// storedReceipt decodes the receipt that opens a receipt stream (receipts, from
// version 1): a ProviderEventReceived or a ProviderEventMismatched, which has the
// same fields, and more.
func storedReceipt(stream string, receipts []eventstore.Record) (ProviderEventReceived, error) {
	var seen ProviderEventReceived
	if err := json.Unmarshal(receipts[0].Data, &seen); err != nil {
		return seen, fmt.Errorf("%w: %s: %w", eventstore.ErrCorruptRecord, stream, err)
	}
	return seen, nil
}

// rejects reports whether decided rejects the payment.
func rejects(decided []payment.Event) bool {
	for _, e := range decided {
		if _, ok := e.(payment.PaymentRejected); ok {
			return true
		}
	}
	return false
}

// receiptEvent is the stored event of a receipt (ProviderEventReceived or
// ProviderEventMismatched), tagged with its payment and rental.
func (h *Handler) receiptEvent(r interface {
	EventType() string
	reference() string
}, meta Meta) (eventstore.Event, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return eventstore.Event{}, err
	}
	rentalID, _ := payment.RentalIDFor(r.reference())
	return eventstore.Event{
		ID: h.newID(), Type: r.EventType(), Data: data,
		Tags: []string{"payment:" + r.reference(), "rental:" + rentalID}, CorrelationID: rentalID, CausationID: meta.CausationID,
	}, nil
}

func (r ProviderEventReceived) reference() string { return r.Reference }

// commandFor is the payment command a provider event asks for.
func commandFor(ev payment.ProviderEvent) payment.Command {
	switch ev.Kind {
	case payment.ProviderSucceeded:
		return payment.ConfirmPayment{Reference: ev.Reference, ProviderEventID: ev.EventID, Provider: ev.Provider, ProviderEventDigest: ev.Digest}
	case payment.ProviderFailed:
		return payment.RejectPayment{Reference: ev.Reference, Reason: ev.Reason, ProviderEventID: ev.EventID, Provider: ev.Provider, ProviderEventDigest: ev.Digest}
	case payment.ProviderCancelled:
		return payment.CancelPayment{Reference: ev.Reference}
	case payment.ProviderRefunded:
		return payment.ConfirmRefund{Reference: ev.Reference, ProviderEventID: ev.EventID, ReportedAt: ev.ReportedAt}
	case payment.ProviderRefundFailed:
		return payment.RecordRefundFailed{Reference: ev.Reference, RefundID: ev.RefundID, Reason: ev.Reason, ProviderEventID: ev.EventID, FailedAt: ev.ReportedAt}
	}
	return nil
}

// Receipt is one stored receipt of a provider event, in either of its forms.
type Receipt struct {
	Provider, EventID, Digest string
	Kind                      payment.ProviderEventKind
	Reference                 string
	// StreamID, Version and Type name the record that holds it: a
	// ProviderEventReceived or ProviderEventMismatched in the event's receipt
	// stream (ReceiptStreamID), or the settling event of the payment's stream that
	// carries it (payment.ReceiptOf).
	StreamID string
	Version  int64
	Type     string
}

// FindReceipts returns the receipts stored of the provider's event eventID about
// payment reference: the first record of its receipt stream, if any, and every
// settling event of the payment's stream that carries its receipt. One event has
// at most one; ApplyProviderEvent reads both places the same way.
func FindReceipts(ctx context.Context, store eventstore.Store, provider, eventID, reference string) ([]Receipt, error) {
	var out []Receipt
	stream := ReceiptStreamID(provider, eventID)
	receipts, err := store.Read(ctx, stream, 0)
	if err != nil {
		return nil, err
	}
	if len(receipts) > 0 {
		seen, err := storedReceipt(stream, receipts)
		if err != nil {
			return nil, err
		}
		out = append(out, Receipt{Provider: seen.Provider, EventID: seen.EventID, Digest: seen.Digest, Kind: seen.Kind, Reference: seen.Reference,
			StreamID: stream, Version: receipts[0].Version, Type: receipts[0].Type})
	}
	records, err := store.Read(ctx, payment.StreamID(reference), 0)
	if err != nil {
		return nil, err
	}
	found, err := receiptsIn(records, provider, eventID)
	if err != nil {
		return nil, err
	}
	for _, c := range found {
		out = append(out, Receipt{Provider: c.receipt.Provider, EventID: c.receipt.EventID, Digest: c.receipt.Digest, Kind: c.receipt.Kind, Reference: reference,
			StreamID: c.record.StreamID, Version: c.record.Version, Type: c.record.Type})
	}
	return out, nil
}
