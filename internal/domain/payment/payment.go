// Package payment is the decider for payments: one event stream per payment
// reference, derived from a rental id, records a payment being prepared at the
// provider, how it settled (confirmed, rejected or cancelled) and, when the money
// arrived for a payment already given up on, how it went back (a refund, or a
// refund owed and then made by hand), and whether a cancellation the provider did not answer is still
// owed to it. Decide and Evolve are pure; the provider is called around them.
package payment

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/domain/eventtype"
	"github.com/bikerental/bikerental/internal/domain/ident"
)

// Sentinel errors returned by Decide, DecodeEvent and RentalIDFor. Business
// refusals are meant to reach API clients as they are.
var (
	// ErrInvalidCommand wraps every refusal of a malformed command (malformed
	// reference, empty payment id, non-positive amount, bad currency, a command
	// for another reference's stream, an unknown command).
	ErrInvalidCommand = errors.New("invalid command")
	// ErrInvalidReference is returned, wrapped, by RentalIDFor for a string that
	// ReferenceFor did not make.
	ErrInvalidReference = errors.New("invalid payment reference")
	// ErrPaymentNotFound is returned when no payment was prepared for the reference.
	ErrPaymentNotFound = errors.New("payment not found")
	// ErrPaymentAlreadyConfirmed is returned when rejecting or cancelling a
	// confirmed payment; a cancellation is declined this way.
	ErrPaymentAlreadyConfirmed = errors.New("payment is already confirmed")
	// ErrUnknownEventType is returned, wrapped with the type name, by DecodeEvent
	// for a type not listed in EventTypes.
	ErrUnknownEventType = eventtype.ErrUnknown
)

const referencePrefix = "rp_"

// ReferenceFor returns the payment reference of a rental: "rp_" + rentalID.
// For a rental id matching [A-Za-z0-9_-]{1,64}, RentalIDFor reverses it.
func ReferenceFor(rentalID string) string { return referencePrefix + rentalID }

// RentalIDFor returns the rental id that ReferenceFor turned into reference. It
// returns an error wrapping ErrInvalidReference when reference lacks the prefix
// or the rest is not a valid rental id ([A-Za-z0-9_-]{1,64}).
func RentalIDFor(reference string) (string, error) {
	id, ok := strings.CutPrefix(reference, referencePrefix)
	if !ok || !ident.Valid(id) {
		return "", fmt.Errorf("payment: %w: %q", ErrInvalidReference, reference)
	}
	return id, nil
}

// StreamID returns the event stream id of a payment: "payment-" + reference.
func StreamID(reference string) string { return "payment-" + reference }

// Status is where a payment is in its lifecycle.
type Status string

// Payment statuses. The zero Payment has an empty Status and is treated as StatusNone.
const (
	StatusNone      Status = "none"
	StatusPrepared  Status = "prepared"
	StatusConfirmed Status = "confirmed"
	StatusRejected  Status = "rejected"
	StatusCancelled Status = "cancelled"
)

// RefundStatus is where the money of a late success stands.
type RefundStatus string

// Refund statuses; the zero value means no refund is due or under way.
const (
	RefundStatusNone      RefundStatus = ""
	RefundStatusRequested RefundStatus = "requested" // the provider accepted a refund
	RefundStatusOwed      RefundStatus = "owed"      // the provider cannot refund: operators must
	RefundStatusDone      RefundStatus = "refunded"  // the provider confirmed the refund
	// RefundStatusMadeByHand (byhand.go): an operator recorded the refund owed made by hand.
)

// Payment is the state of one payment reference's stream. Amount is in minor
// units of Currency (ISO 4217); Reason is set once the payment is rejected.
// LateSuccess is set when the provider took the money after the payment was
// cancelled or rejected: the rental stays ended, and the money must go back.
// CancellationOwed is set while a cancellation the provider did not answer is
// still to be made there (CancellationOwedAtProvider, until CancellationDoneAtProvider or
// a late success).
type Payment struct {
	Reference    string
	PaymentID    string
	ClientSecret string
	Amount       int64
	Currency     string
	Status       Status
	Reason       string
	LateSuccess  bool
	Refund       RefundStatus
	// CancellationOwed: the payment was cancelled here, but the provider has not
	// confirmed it, so the payment may still be payable there.
	CancellationOwed bool
	// Taken is what the provider took after the payment was given up on, as it
	// reported it (PaymentSucceededAfterCancellation): what goes back, whatever
	// the payment was prepared for. Zero until a late success is recorded.
	Taken Money
	// RefundID is the provider's id of the refund it accepted (RefundRequested);
	// "" once it reported another refund made after that one failed, whose id it
	// did not say.
	RefundID string
	// RefundFailed: a refund the provider accepted failed afterwards, and the
	// refund is owed for it (RefundOwed with a FailedRefundID), until the provider
	// reports another refund made after the failure (PaymentRefunded). Its word
	// that the payment was refunded about the refund that failed changes nothing
	// (refundNews).
	RefundFailed bool
	// Reported is when the provider reported its refunds made and failed.
	Reported RefundReports
	// CancellationTries counts the retries of an owed cancellation that the
	// provider left unanswered (CancellationStillOwed): each one waits longer
	// before the next.
	CancellationTries int
	// Unexpected are the refunds owed on provider payments that are not the one
	// recorded (UnexpectedRefundOwed), one per provider payment, in the order they
	// became owed.
	Unexpected []UnexpectedRefund
}

// Money is an amount in minor units of a currency (ISO 4217).
type Money struct {
	Amount   int64
	Currency string
}

// String writes m as "1500 EUR".
func (m Money) String() string { return fmt.Sprintf("%d %s", m.Amount, m.Currency) }

// Prepared returns what the payment was prepared for: its amount and currency.
func (s Payment) Prepared() Money { return Money{Amount: s.Amount, Currency: s.Currency} }

// Charge returns what the provider's payment is for, as far as it was recorded:
// what the provider took after the payment was given up on, once that is
// recorded (Taken), else what the payment was prepared for. Every word of the
// provider about its payment is compared with it (Disagreements), and what is
// owed back, refunded or made by hand is it.
func (s Payment) Charge() Money {
	if s.LateSuccess && s.Taken != (Money{}) {
		return s.Taken
	}
	return s.Prepared()
}

// RefundDue reports whether money was taken for a payment that was given up on and
// no refund has been recorded for it yet.
func (s Payment) RefundDue() bool { return s.LateSuccess && s.Refund == RefundStatusNone }

// Payable reports whether the payment can still be paid: it is prepared and has not
// settled in any way. Only then is its client secret shown to its renter.
func (s Payment) Payable() bool { return s.Status == StatusPrepared }

// CancellationDue reports whether the cancellation must still be made at the
// provider: it was owed, and neither the provider confirmed it nor a success
// arrived meanwhile (which ends in a refund instead).
func (s Payment) CancellationDue() bool { return s.CancellationOwed && !s.LateSuccess }

// Event is a fact in a payment's stream. EventType returns the struct's type
// name, which is the stored event type: renaming an event is a schema change.
type Event interface{ EventType() string }

// PaymentPrepared records that the provider accepted a payment, under its own
// PaymentID, and that it awaits the renter. ClientSecret is what the renter's client
// needs to pay ("" for providers that need none): readers must never show it to
// anyone but the renter, nor log it.
type PaymentPrepared struct {
	PaymentID    string `json:"paymentId"`
	Reference    string `json:"reference"`
	Amount       int64  `json:"amount"`
	Currency     string `json:"currency"`
	ClientSecret string `json:"clientSecret,omitempty"`
}

// PaymentConfirmed records that the provider confirmed the payment. When the
// provider's webhook event confirmed it, the event carries that event's receipt:
// its id (ProviderEventID) and, since the receipt moved into the settling event,
// its provider and digest (ReceiptOf). Events recorded before have only the id,
// and their receipt is in a stream of its own.
type PaymentConfirmed struct {
	Reference           string `json:"reference"`
	PaymentID           string `json:"paymentId"`
	ProviderEventID     string `json:"providerEventId,omitempty"`
	Provider            string `json:"provider,omitempty"`
	ProviderEventDigest string `json:"providerEventDigest,omitempty"`
}

// PaymentRejected records that the provider rejected the payment; a rejection by
// the provider's webhook event carries that event's receipt as PaymentConfirmed
// does.
type PaymentRejected struct {
	Reference           string `json:"reference"`
	PaymentID           string `json:"paymentId"`
	Reason              string `json:"reason"`
	ProviderEventID     string `json:"providerEventId,omitempty"`
	Provider            string `json:"provider,omitempty"`
	ProviderEventDigest string `json:"providerEventDigest,omitempty"`
}

// ProviderReceipt is what a settling event records of the provider's webhook event
// that settled the payment, so that every later delivery of that event, which
// reads the payment's stream, finds it and changes nothing: the provider, its
// event id, what the event said (Kind) and a digest of its content, to refuse the
// same id with another content.
type ProviderReceipt struct {
	Provider string
	EventID  string
	Kind     ProviderEventKind
	Digest   string
}

// ReceiptOf returns the receipt of the provider event that e records having
// settled its payment, and whether e carries one: a PaymentConfirmed
// (ProviderSucceeded) or PaymentRejected (ProviderFailed) recorded with its
// provider and event id. Events that carry none include every settling event
// recorded before receipts moved into them (their receipts are in streams of
// their own) and those no webhook event caused.
func ReceiptOf(e Event) (ProviderReceipt, bool) {
	var r ProviderReceipt
	switch e := e.(type) {
	case PaymentConfirmed:
		r = ProviderReceipt{Provider: e.Provider, EventID: e.ProviderEventID, Kind: ProviderSucceeded, Digest: e.ProviderEventDigest}
	case PaymentRejected:
		r = ProviderReceipt{Provider: e.Provider, EventID: e.ProviderEventID, Kind: ProviderFailed, Digest: e.ProviderEventDigest}
	default:
		return ProviderReceipt{}, false
	}
	return r, r.Provider != "" && r.EventID != ""
}

// PaymentSucceededAfterCancellation records that the provider took the money for a
// payment already cancelled or rejected: the rental stays ended and the money
// must go back (RefundRequested or RefundOwed follow). Amount and Currency are
// what the provider reported taken: what the payment was prepared for, unless the
// provider said it took another amount or currency (GiveUpUnmatchedSuccess; every
// late success recorded before that case was, has the payment's own).
type PaymentSucceededAfterCancellation struct {
	Reference       string `json:"reference"`
	PaymentID       string `json:"paymentId"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	ProviderEventID string `json:"providerEventId,omitempty"`
}

// RefundRequested records that the provider accepted a refund of the payment.
type RefundRequested struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	RefundID  string `json:"refundId"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

// RefundOwed records that money must go back that the provider cannot refund:
// operators see it (rentalctl refunds) and an alarm reports it. Reason is why,
// when the provider can refund but refused this one for good (RefundRefused);
// it is empty for a provider that cannot refund at all, and in every RefundOwed
// recorded before reasons were.
type RefundOwed struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reason    string `json:"reason,omitempty"`
	// FailedRefundID names the refund the provider had accepted whose failure
	// made the refund owed (RecordRefundFailed); empty for a refund the provider
	// refused or cannot make.
	FailedRefundID string `json:"failedRefundId,omitempty"`
	// FailedAt is when the provider reported that failure, by its own clock
	// (Stripe's event's created); absent where it did not say, and from every
	// RefundOwed recorded before it was kept.
	FailedAt time.Time `json:"failedAt,omitzero"`
}

// PaymentRefunded records that the provider confirmed a refund of the payment.
// ReportedAt is when it reported it, by its own clock (Stripe's event's created);
// absent where it did not say (the provider's answer to a refund asked again), and
// from every PaymentRefunded recorded before it was kept.
type PaymentRefunded struct {
	Reference       string    `json:"reference"`
	PaymentID       string    `json:"paymentId"`
	ProviderEventID string    `json:"providerEventId,omitempty"`
	ReportedAt      time.Time `json:"reportedAt,omitzero"`
}

// PaymentCancelled records that the payment was called off before it settled.
type PaymentCancelled struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
}

// CancellationOwedAtProvider records, with the PaymentCancelled it follows, that
// the provider did not answer the cancellation (it failed, was busy or timed out
// after Attempts tries): the bike is released all the same, and the cancellation
// stays owed to the provider, retried by the sweep until the provider confirms it
// (CancellationDoneAtProvider) or a success arrives meanwhile (which is refunded).
// Operators see it (rentalctl cancellations) and an alarm reports it.
type CancellationOwedAtProvider struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	Attempts  int    `json:"attempts"`
}

// CancellationStillOwed records that a retry of a cancellation owed to the provider
// went unanswered again (the provider failed, was busy, timed out, or could not
// call the payment off just now), for the Tries-th time: the cancellation stays
// owed, and its next retry waits longer than the last (owed.Backoff, from
// this event's own time), so that a provider that does not answer is not asked at
// every sweep.
type CancellationStillOwed struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
	Tries     int    `json:"tries"`
}

// CancellationDoneAtProvider records that the provider confirmed a cancellation that was
// owed to it: nothing is owed any more.
type CancellationDoneAtProvider struct {
	Reference string `json:"reference"`
	PaymentID string `json:"paymentId"`
}

// EventType returns "PaymentPrepared".
func (PaymentPrepared) EventType() string { return "PaymentPrepared" }

// EventType returns "PaymentConfirmed".
func (PaymentConfirmed) EventType() string { return "PaymentConfirmed" }

// EventType returns "PaymentRejected".
func (PaymentRejected) EventType() string { return "PaymentRejected" }

// EventType returns "PaymentCancelled".
func (PaymentCancelled) EventType() string { return "PaymentCancelled" }

// EventType returns "PaymentSucceededAfterCancellation".
func (PaymentSucceededAfterCancellation) EventType() string {
	return "PaymentSucceededAfterCancellation"
}

// EventType returns "RefundRequested".
func (RefundRequested) EventType() string { return "RefundRequested" }

// EventType returns "RefundOwed".
func (RefundOwed) EventType() string { return "RefundOwed" }

// EventType returns "PaymentRefunded".
func (PaymentRefunded) EventType() string { return "PaymentRefunded" }

// EventType returns "CancellationOwedAtProvider".
func (CancellationOwedAtProvider) EventType() string { return "CancellationOwedAtProvider" }

// EventType returns "CancellationStillOwed".
func (CancellationStillOwed) EventType() string { return "CancellationStillOwed" }

// EventType returns "CancellationDoneAtProvider".
func (CancellationDoneAtProvider) EventType() string { return "CancellationDoneAtProvider" }

// ReferenceOf returns the payment reference an event is about, or "" for a type
// this package does not define.
func ReferenceOf(e Event) string {
	switch e := e.(type) {
	case PaymentPrepared:
		return e.Reference
	case PaymentConfirmed:
		return e.Reference
	case PaymentRejected:
		return e.Reference
	case PaymentCancelled:
		return e.Reference
	case PaymentSucceededAfterCancellation:
		return e.Reference
	case RefundRequested:
		return e.Reference
	case RefundOwed:
		return e.Reference
	case PaymentRefunded:
		return e.Reference
	case CancellationOwedAtProvider:
		return e.Reference
	case CancellationDoneAtProvider:
		return e.Reference
	case CancellationStillOwed:
		return e.Reference
	case RefundMadeByHand:
		return e.Reference
	case UnexpectedRefundOwed:
		return e.Reference
	case UnexpectedRefundMadeByHand:
		return e.Reference
	}
	return ""
}

// events declares the payment's events: their names, structs and decoder.
var events = eventtype.Declare[Event]("payment",
	eventtype.Of[PaymentPrepared](),
	eventtype.Of[PaymentConfirmed](),
	eventtype.Of[PaymentRejected](),
	eventtype.Of[PaymentCancelled](),
	eventtype.Of[PaymentSucceededAfterCancellation](),
	eventtype.Of[RefundRequested](),
	eventtype.Of[RefundOwed](),
	eventtype.Of[PaymentRefunded](),
	eventtype.Of[CancellationOwedAtProvider](),
	eventtype.Of[CancellationDoneAtProvider](),
	eventtype.Of[CancellationStillOwed](),
	eventtype.Of[RefundMadeByHand](),
	eventtype.Of[UnexpectedRefundOwed](),
	eventtype.Of[UnexpectedRefundMadeByHand](),
)

// EventTypes returns the type name of every event of this package, in a new slice.
func EventTypes() []string { return events.Types() }

// settlements are the events that settle a payment: every way it stops waiting for
// the renter. Everything that asks whether a payment settled asks Settles.
var settlements = []string{PaymentConfirmed{}.EventType(), PaymentRejected{}.EventType(), PaymentCancelled{}.EventType()}

// Settles reports whether an event of eventType settles a payment (it was
// confirmed, rejected or cancelled).
func Settles(eventType string) bool { return slices.Contains(settlements, eventType) }

// SettlementTypes returns the types of the events that settle a payment, in a new
// slice.
func SettlementTypes() []string { return slices.Clone(settlements) }

// DecodeEvent decodes stored JSON data into the event struct (a value, not a
// pointer) named by eventType. Unknown JSON fields are ignored so that older code
// reads newer events; invalid JSON is an error wrapping the json error. An
// unknown eventType yields an error wrapping ErrUnknownEventType.
func DecodeEvent(eventType string, data []byte) (Event, error) { return events.Decode(eventType, data) }

// Command is a request to a payment's stream. Only this package's command
// structs implement it.
type Command interface{ isCommand() }

// PreparePayment asks to record a payment of Amount minor units of Currency that the
// provider accepted under its PaymentID. It is idempotent on Reference.
type PreparePayment struct {
	Reference    string `json:"reference"`
	PaymentID    string `json:"paymentId"`
	Amount       int64  `json:"amount"`
	Currency     string `json:"currency"`
	ClientSecret string `json:"clientSecret,omitempty"`
}

// ConfirmPayment records the provider's word that the payment succeeded. For a
// payment already cancelled or rejected it records the late success instead, so
// that the money goes back. Sent for a provider's webhook event, it names the
// event (ProviderEventID) and, when the confirmation is to carry the event's
// receipt, its provider and digest.
type ConfirmPayment struct {
	Reference           string `json:"reference"`
	ProviderEventID     string `json:"providerEventId,omitempty"`
	Provider            string `json:"provider,omitempty"`
	ProviderEventDigest string `json:"providerEventDigest,omitempty"`
}

// RejectPayment records the provider's word that the payment failed; its
// provider event fields are ConfirmPayment's.
type RejectPayment struct {
	Reference           string `json:"reference"`
	Reason              string `json:"reason"`
	ProviderEventID     string `json:"providerEventId,omitempty"`
	Provider            string `json:"provider,omitempty"`
	ProviderEventDigest string `json:"providerEventDigest,omitempty"`
}

// RecordRefund records that the provider accepted the refund of a late success.
type RecordRefund struct {
	Reference string `json:"reference"`
	RefundID  string `json:"refundId"`
}

// OweRefund records that the refund of a late success is owed: the provider cannot
// refund, or refused this refund for good, for Reason (RefundRefused's, checked as
// CheckText checks an operator's words; empty for a provider that cannot refund).
type OweRefund struct {
	Reference string `json:"reference"`
	Reason    string `json:"reason,omitempty"`
}

// RecordRefundFailed records the provider's word, reported at FailedAt by its own
// clock (zero where it does not say), that its refund RefundID, which it had
// accepted (RefundRequested) and may since have reported made (PaymentRefunded: a
// provider reports a refund made when it creates it, before the bank may fail
// it), failed afterwards, for Reason (checked as OweRefund's): the refund is then
// owed (RefundOwed, with the reason, the failed refund's id and FailedAt), for
// operators to make by hand. It does nothing for another refund than the one
// recorded, once the refund is owed or made by hand, when no refund was asked for
// or made, or when the provider reported the payment refunded after FailedAt (a
// refund made after the one that failed stands; one reported in the same second
// may be the failed refund's own report, and the failure is recorded).
type RecordRefundFailed struct {
	Reference       string    `json:"reference"`
	RefundID        string    `json:"refundId"`
	Reason          string    `json:"reason"`
	ProviderEventID string    `json:"providerEventId,omitempty"`
	FailedAt        time.Time `json:"failedAt,omitzero"`
}

// ConfirmRefund records the provider's word, reported at ReportedAt by its own
// clock (zero where it does not say), that the payment was refunded. It records
// nothing when that word is not news (refundNews): a word about a refund recorded
// already, or about the refund whose failure made the refund owed.
type ConfirmRefund struct {
	Reference       string    `json:"reference"`
	ProviderEventID string    `json:"providerEventId,omitempty"`
	ReportedAt      time.Time `json:"reportedAt,omitzero"`
}

// CancelPayment asks to call off a payment that has not settled. It is declined
// with ErrPaymentAlreadyConfirmed once the payment is confirmed. UnansweredAttempts
// is set by the command handler, after asking the provider, when the provider did
// not answer after that many tries: the cancellation is then also recorded as owed
// to the provider (CancellationOwedAtProvider).
type CancelPayment struct {
	Reference          string `json:"reference"`
	UnansweredAttempts int    `json:"unansweredAttempts,omitempty"`
}

// RecordCancelledAtProvider records the provider's word that it cancelled a payment
// whose cancellation was owed to it. It does nothing when none is due.
type RecordCancelledAtProvider struct {
	Reference string `json:"reference"`
}

func (PreparePayment) isCommand() {}
func (ConfirmPayment) isCommand() {}
func (RejectPayment) isCommand()  {}
func (CancelPayment) isCommand()  {}
func (RecordRefund) isCommand()   {}
func (OweRefund) isCommand()      {}
func (ConfirmRefund) isCommand()  {}

func (RecordRefundFailed) isCommand() {}

func (RecordCancelledAtProvider) isCommand() {}

// RecordCancellationStillOwed records that the provider left the Tries-th retry of
// an owed cancellation unanswered (CancellationStillOwed): Tries is one more than
// the payment's CancellationTries as the sender read them. It does nothing when no
// cancellation is due, or when that try is recorded already (a command sent twice,
// or two senders that read the same tries).
type RecordCancellationStillOwed struct {
	Reference string `json:"reference"`
	Tries     int    `json:"tries"`
}

func (RecordCancellationStillOwed) isCommand() {}

// GiveUpUnmatchedSuccess records the provider's word (a webhook's, or its answer
// when asked) that it took Amount minor units of Currency on the payment recorded,
// where that is not what the payment was prepared for: the rental cannot have its
// bike for it, so a payment not settled yet is cancelled and what was taken goes
// back, as a late success for that amount and currency (PaymentCancelled and
// PaymentSucceededAfterCancellation, in one append), so that what is refunded or
// owed is what was taken. A payment cancelled or rejected before gets the late
// success alone; one confirmed, or whose late success is recorded, changes
// nothing. Amount must be from 1 to MaxAmount and Currency three upper-case
// letters.
type GiveUpUnmatchedSuccess struct {
	Reference string `json:"reference"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

func (GiveUpUnmatchedSuccess) isCommand() {}

// Fold applies events in order to the initial state, a Payment with StatusNone.
func Fold(events []Event) Payment {
	s := Payment{Status: StatusNone}
	for _, e := range events {
		s = Evolve(s, e)
	}
	return s
}

// Evolve returns the state after event e. It is pure, and unknown events return
// s unchanged. A PaymentPrepared for a payment that already exists changes
// nothing, so a duplicate can never reopen a settled payment.
func Evolve(s Payment, e Event) Payment {
	switch e := e.(type) {
	case PaymentPrepared:
		if !s.exists() {
			s = Payment{Reference: e.Reference, PaymentID: e.PaymentID, ClientSecret: e.ClientSecret, Amount: e.Amount, Currency: e.Currency, Status: StatusPrepared}
		}
	case PaymentConfirmed:
		s.Status = StatusConfirmed
	case PaymentRejected:
		s.Status, s.Reason = StatusRejected, e.Reason
	case PaymentCancelled:
		s.Status = StatusCancelled
	case PaymentSucceededAfterCancellation:
		if !s.LateSuccess {
			s.LateSuccess, s.Taken = true, Money{Amount: e.Amount, Currency: e.Currency}
		}
	case CancellationOwedAtProvider:
		s.CancellationOwed = true
	case CancellationDoneAtProvider:
		s.CancellationOwed = false
	case CancellationStillOwed:
		s.CancellationTries = max(s.CancellationTries, e.Tries)
	case RefundRequested:
		if !s.Refunded() {
			s.Refund, s.RefundID = RefundStatusRequested, e.RefundID
		}
	case RefundOwed:
		switch {
		case e.FailedRefundID != "" && (s.Refund == RefundStatusRequested || s.Refund == RefundStatusDone):
			// the provider's refund failed
			s.Reported.FailedAfterRefunded = s.Refund == RefundStatusDone
			s.Refund, s.RefundFailed, s.Reported.Failed = RefundStatusOwed, true, e.FailedAt
		case s.Refund == RefundStatusNone:
			s.Refund = RefundStatusOwed
		}
	case PaymentRefunded:
		if s.Refund == RefundStatusMadeByHand || s.Refund == RefundStatusTwice {
			s.Refund = RefundStatusTwice // the provider refunded what an operator paid back by hand
		} else {
			s.Refund = RefundStatusDone
		}
		if e.ReportedAt.After(s.Reported.Refunded) {
			s.Reported.Refunded = e.ReportedAt
		}
		if s.RefundFailed {
			// Recorded after a failure, it is another refund (refundNews): the
			// failure is history, and the refund that stands is one whose id the
			// provider did not say.
			s.RefundFailed, s.RefundID = false, ""
			s.Reported.Failed, s.Reported.FailedAfterRefunded = time.Time{}, false
		}
	case RefundMadeByHand:
		if !s.Refunded() {
			s.Refund = RefundStatusMadeByHand
		}
	case UnexpectedRefundOwed, UnexpectedRefundMadeByHand:
		s = evolveUnexpected(s, e)
	}
	return s
}

// String writes the payment as %+v would, its client secret left out: whoever holds
// the secret can confirm the payment, so no log line or test failure shows it.
func (s Payment) String() string {
	type fields Payment // without this method
	f := fields(s)
	f.ClientSecret = redacted(f.ClientSecret)
	return fmt.Sprintf("%+v", f)
}

// String writes the event as %+v would, its client secret left out (Payment.String).
func (e PaymentPrepared) String() string {
	type fields PaymentPrepared
	f := fields(e)
	f.ClientSecret = redacted(f.ClientSecret)
	return fmt.Sprintf("%+v", f)
}

// redacted stands for a secret in what is printed: empty stays empty.
func redacted(secret string) string {
	if secret == "" {
		return ""
	}
	return "(redacted)"
}

func (s Payment) exists() bool { return s.Status != "" && s.Status != StatusNone }

// Decide returns the events that command c produces on payment s, or the reason
// it is refused. It returns nil, nil when c finds its work already done (every
// command is safe to send twice): preparing an existing reference, in any status
// and whatever the amount, confirming a confirmed payment, rejecting a rejected
// one, and cancelling a cancelled or rejected one. Malformed commands yield an
// error wrapping ErrInvalidCommand; business refusals are the other sentinels.
func Decide(s Payment, c Command) ([]Event, error) {
	if err := validate(s, c); err != nil {
		return nil, fmt.Errorf("payment: %w: %w", ErrInvalidCommand, err)
	}
	if _, ok := c.(PreparePayment); !ok && !s.exists() {
		return nil, ErrPaymentNotFound
	}
	switch c := c.(type) {
	case GiveUpUnmatchedSuccess:
		return giveUpUnmatched(s, Money{Amount: c.Amount, Currency: c.Currency}), nil
	case RecordCancellationStillOwed:
		if !s.CancellationDue() || s.CancellationTries >= c.Tries {
			return nil, nil
		}
		return []Event{CancellationStillOwed{Reference: s.Reference, PaymentID: s.PaymentID, Tries: c.Tries}}, nil
	}
	return decide(s, c)
}

// decide is Decide for a valid command about a payment that exists, or one that
// prepares it.
func decide(s Payment, c Command) ([]Event, error) {
	switch c := c.(type) {
	case PreparePayment:
		if s.exists() {
			return nil, nil
		}
		return []Event{PaymentPrepared{PaymentID: c.PaymentID, Reference: c.Reference, Amount: c.Amount, Currency: c.Currency, ClientSecret: c.ClientSecret}}, nil

	case ConfirmPayment:
		switch s.Status {
		case StatusConfirmed:
			return nil, nil
		case StatusCancelled, StatusRejected:
			// The money arrived for a payment already given up on: the rental
			// stays ended, and what was taken must go back.
			if s.LateSuccess {
				return nil, nil
			}
			// What it took is what the payment is for: a word that says otherwise
			// does not match, and is given up on instead (GiveUpUnmatchedSuccess).
			return []Event{PaymentSucceededAfterCancellation{Reference: s.Reference, PaymentID: s.PaymentID,
				Amount: s.Amount, Currency: s.Currency, ProviderEventID: c.ProviderEventID}}, nil
		}
		return []Event{PaymentConfirmed{Reference: s.Reference, PaymentID: s.PaymentID,
			ProviderEventID: c.ProviderEventID, Provider: c.Provider, ProviderEventDigest: c.ProviderEventDigest}}, nil

	case RejectPayment:
		switch s.Status {
		case StatusRejected, StatusCancelled:
			return nil, nil
		case StatusConfirmed:
			return nil, ErrPaymentAlreadyConfirmed
		}
		return []Event{PaymentRejected{Reference: s.Reference, PaymentID: s.PaymentID, Reason: c.Reason,
			ProviderEventID: c.ProviderEventID, Provider: c.Provider, ProviderEventDigest: c.ProviderEventDigest}}, nil

	case RecordRefund, OweRefund, RecordRefundFailed, ConfirmRefund:
		return decideRefund(s, c), nil

	case CancelPayment:
		switch s.Status {
		case StatusCancelled, StatusRejected:
			return nil, nil
		case StatusConfirmed:
			return nil, ErrPaymentAlreadyConfirmed
		}
		out := []Event{PaymentCancelled{Reference: s.Reference, PaymentID: s.PaymentID}}
		if c.UnansweredAttempts > 0 {
			out = append(out, CancellationOwedAtProvider{Reference: s.Reference, PaymentID: s.PaymentID, Attempts: c.UnansweredAttempts})
		}
		return out, nil

	case RecordRefundMadeByHand:
		if c.PaymentID != "" && c.PaymentID != s.PaymentID {
			return decideUnexpectedRefundMadeByHand(s, c) // a refund owed on another provider payment
		}
		return decideRefundMadeByHand(s, c)

	case OweUnexpectedRefund:
		return decideOweUnexpected(s, c)

	case RecordCancelledAtProvider:
		if !s.CancellationDue() {
			return nil, nil
		}
		return []Event{CancellationDoneAtProvider{Reference: s.Reference, PaymentID: s.PaymentID}}, nil
	}
	return nil, fmt.Errorf("payment: %w: unknown command %T", ErrInvalidCommand, c)
}

// giveUpUnmatched is what GiveUpUnmatchedSuccess decides on s, for what the
// provider said it took.
func giveUpUnmatched(s Payment, took Money) []Event {
	late := PaymentSucceededAfterCancellation{Reference: s.Reference, PaymentID: s.PaymentID, Amount: took.Amount, Currency: took.Currency}
	switch {
	case s.Status == StatusConfirmed || s.LateSuccess:
		return nil
	case s.Status == StatusPrepared:
		return []Event{PaymentCancelled{Reference: s.Reference, PaymentID: s.PaymentID}, late}
	}
	return []Event{late}
}

func validate(s Payment, c Command) error {
	var ref string
	switch c := c.(type) {
	case PreparePayment:
		ref = c.Reference
		if c.PaymentID == "" {
			return errors.New("paymentId is required")
		}
		if err := checkMoney(c.Amount, c.Currency); err != nil {
			return err
		}
	case ConfirmPayment:
		ref = c.Reference
	case RejectPayment:
		ref = c.Reference
	case CancelPayment:
		ref = c.Reference
		if c.UnansweredAttempts < 0 {
			return fmt.Errorf("unansweredAttempts %d must not be negative", c.UnansweredAttempts)
		}
	case RecordRefund:
		ref = c.Reference
		if c.RefundID == "" {
			return errors.New("refundId is required")
		}
	case OweRefund:
		ref = c.Reference
		if c.Reason != "" {
			if err := CheckText("reason", c.Reason, MaxRefundRefusalLength); err != nil {
				return err
			}
		}
	case RecordRefundFailed:
		ref = c.Reference
		if c.RefundID == "" {
			return errors.New("refundId is required")
		}
		if err := CheckText("reason", c.Reason, MaxRefundRefusalLength); err != nil {
			return err
		}
	case ConfirmRefund:
		ref = c.Reference
	case RecordRefundMadeByHand:
		ref = c.Reference
		if err := validateRefundMadeByHand(c); err != nil {
			return err
		}
	case OweUnexpectedRefund:
		ref = c.Reference
		if err := validateOweUnexpected(c); err != nil {
			return err
		}
	case RecordCancelledAtProvider:
		ref = c.Reference
	case GiveUpUnmatchedSuccess:
		ref = c.Reference
		if err := checkMoney(c.Amount, c.Currency); err != nil {
			return err
		}
	case RecordCancellationStillOwed:
		ref = c.Reference
		if c.Tries < 1 {
			return fmt.Errorf("tries %d must be at least 1", c.Tries)
		}
	default:
		return fmt.Errorf("unknown command %T", c)
	}
	if _, err := RentalIDFor(ref); err != nil {
		return err
	}
	if s.exists() && s.Reference != ref {
		return fmt.Errorf("command for reference %q sent to reference %q", ref, s.Reference)
	}
	return nil
}

// checkMoney returns why amount and currency cannot be what a payment is for, or
// nil (CheckAmount, CheckCurrency).
func checkMoney(amount int64, currency string) error {
	if err := CheckAmount(amount); err != nil {
		return err
	}
	return CheckCurrency(currency)
}

// checkStatedMoney is checkMoney for an amount and a currency each left out (0,
// "") where not stated.
func checkStatedMoney(amount int64, currency string) error {
	if amount != 0 {
		if err := CheckAmount(amount); err != nil {
			return err
		}
	}
	if currency != "" {
		return CheckCurrency(currency)
	}
	return nil
}

// MaxAmount is the largest amount a payment may have, in minor units: eight digits,
// the most Stripe takes in one payment (999,999.99 in a two-decimal currency), and
// far below where a JSON number stops being exact.
const MaxAmount = 99_999_999

// CheckAmount returns why amount, in minor units, cannot be a payment's amount, or
// nil: it must be from 1 to MaxAmount. PreparePayment is refused for the same.
func CheckAmount(amount int64) error {
	if amount <= 0 || amount > MaxAmount {
		return fmt.Errorf("amount %d must be from 1 to %d (minor units)", amount, MaxAmount)
	}
	return nil
}

// Decimals returns how many decimals an amount in currency's minor units has, as
// payment providers take amounts (Stripe's rule, which the generic provider
// follows): none for the zero-decimal currencies (1500 JPY is 1500 yen), three for
// the three-decimal ones (1500 KWD is 1.500 dinars), and two for every other,
// including those ISO 4217 gives another number but Stripe takes in hundredths
// (ISK, IDR, HUF, TWD). Operators read amounts by it (rentalctl, the console's
// rules).
func Decimals(currency string) int {
	if d, ok := otherDecimals[currency]; ok {
		return d
	}
	return 2
}

// otherDecimals are the currencies whose amounts do not have two decimals.
var otherDecimals = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "JPY": 0, "KMF": 0, "KRW": 0, "MGA": 0,
	"PYG": 0, "RWF": 0, "UGX": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "JOD": 3, "KWD": 3, "OMR": 3, "TND": 3,
}

// NonDecimal returns the currencies whose amounts do not have two decimals, with
// their Decimals, in a new map.
func NonDecimal() map[string]int { return maps.Clone(otherDecimals) }

// CheckCurrency returns why c cannot be a payment's currency, or nil: it must be
// 3 upper-case letters (ISO 4217). PreparePayment is refused for the same.
func CheckCurrency(c string) error {
	if len(c) != 3 || strings.Trim(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return fmt.Errorf("currency %q must be 3 upper-case letters (ISO 4217)", c)
	}
	return nil
}
