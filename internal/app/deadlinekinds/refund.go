package deadlinekinds

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Refund is the refund-owed kind's name.
const Refund = "refund"

// RefundPrefix starts the key of a refund-owed row; the rest is its subject: the
// rental id, so that the key is "refund#" and the payment's reference, or for a
// refund owed on another provider payment the rental id and that payment's digest
// (UnexpectedRefundSubject).
var RefundPrefix = "refund#" + PaymentPrefix

// RefundLane is the lane of the refunds owed: the partitions "refund#0",
// "refund#1", …, stamped with the time the refund became owed (the kind's After is
// zero). No sweep reads it.
var RefundLane = deadline.LaneOf(Refund)

// SettledRefunded is how a refund-owed row settles.
const SettledRefunded = "refunded"

// RefundKind is the refund owed: each refund a payment owes has a row of its own,
// due at once, whose subject is the rental's id for the refund of its own late
// success (RefundOwed opens it; PaymentRefunded or RefundMadeByHand settles it)
// and the rental's id and the provider payment's (UnexpectedRefundSubject) for the
// refund owed on another provider payment (UnexpectedRefundOwed opens it;
// UnexpectedRefundMadeByHand settles it): payment.RefundOwedChangeOf says which.
// A rental that owes two lists two rows, each settled on its own
// (docs/decisions/0033-every-debt-is-listed-until-paid-back.md). Operators pay
// them back by hand: the kind has no command, and the sweep never reads its lane
// (deadline.ByHand). Its records are all in the payment's stream (Ordered): a
// RefundOwed later than a PaymentRefunded (the provider's refund failed after it
// reported it made) opens the row again. Its rows are listed by a query per shard
// (GET /refunds/owed, GET /deadlines), not by a scan of the Events table.
func RefundKind() deadline.Kind {
	return deadline.Kind{Name: Refund, Prefix: RefundPrefix, Changes: RefundChanges{}, Valid: validRefundSubject, Work: deadline.ByHand{}, Ordered: true}
}

// RefundChanges reads the refund owed's records (payment.RefundOwedChangeOf):
// what opens a refund owed opens its row, what settles it settles it; payments of
// no rental are no row of it.
type RefundChanges struct{}

// Change implements deadline.Changes.
func (RefundChanges) Change(r eventstore.Record) (deadline.Change, bool, error) {
	if !slices.Contains(payment.RefundOwedTypes(), r.Type) {
		return deadline.Change{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return deadline.Change{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	c, _ := payment.RefundOwedChangeOf(e)
	rentalID, err := payment.RentalIDFor(c.Reference)
	if err != nil {
		return deadline.Change{}, false, nil // not a rental's payment
	}
	subject := rentalID
	if c.PaymentID != "" {
		subject = UnexpectedRefundSubject(rentalID, c.PaymentID)
	}
	if c.Settled { // refunded by the provider, or made by hand
		return deadline.Change{Subject: subject, Settled: true, How: SettledRefunded}, true, nil
	}
	return deadline.Change{Subject: subject}, true, nil
}

// unexpectedSeparator separates, in the subject of a refund owed on another
// provider payment, the rental's id from the digest of the provider payment's: no
// rental id holds it (ident.Pattern).
const unexpectedSeparator = "/"

// paymentDigestLength is the length of the provider payment's digest in a refund
// row's subject.
const paymentDigestLength = 22

// UnexpectedRefundSubject returns the subject of the refund row owed on the
// provider payment paymentID for rentalID: the rental's id, "/" and a digest of the
// provider payment's id (ident.Derived), which fits the table's keys whatever a
// provider's ids are made of. A rental's own refund's subject is its id alone.
func UnexpectedRefundSubject(rentalID, paymentID string) string {
	return rentalID + unexpectedSeparator + ident.Derived(paymentDigestLength, paymentID)
}

// RefundRental returns the rental a refund row's subject is about: the rental's id,
// for its own refund's row and the one owed on another provider payment alike.
func RefundRental(subject string) string {
	rentalID, _, _ := strings.Cut(subject, unexpectedSeparator)
	return rentalID
}

// RefundOnRecordedPayment reports whether a refund row's subject is the rental's
// own refund's (on the payment recorded), not one owed on another provider payment.
func RefundOnRecordedPayment(subject string) bool {
	return !strings.Contains(subject, unexpectedSeparator)
}

// validRefundSubject reports whether s is a refund row's subject: a rental id, or
// one with the digest of a provider payment's id (UnexpectedRefundSubject).
func validRefundSubject(s string) bool {
	rentalID, digest, unexpected := strings.Cut(s, unexpectedSeparator)
	if !unexpected {
		return ident.Valid(s)
	}
	return ident.Valid(rentalID) && len(digest) == paymentDigestLength && ident.Alphanumeric(digest)
}

// RefundOwed is what a refund row is about, as operators' listings show it (GET
// /refunds/owed, GET /deadlines, the console): the rental, the provider payment
// the money was taken on, what was taken and why no provider refunded it.
type RefundOwed struct {
	RentalID string
	// PaymentID is the provider payment the refund is owed on: the one recorded for
	// the rental's payment (OnRecordedPayment), or another.
	PaymentID         string
	OnRecordedPayment bool
	// Amount and Currency are what the provider said it took: 0 and "" where it
	// did not say (money taken on another provider payment, reported by a generic
	// event that named no amount or currency).
	Amount   int64
	Currency string
	// Reason is the provider's refusal; empty for a provider that cannot refund.
	Reason string
}

// The causes of a refund owed, as operators' listings name them.
const (
	// CauseLateSuccess: the provider took the money on the rental's own payment
	// after it was given up on.
	CauseLateSuccess = "late-success"
	// CauseOtherPayment: the provider reported money taken under the rental's
	// payment reference on another provider payment than the one recorded.
	CauseOtherPayment = "other-payment"
)

// Cause returns why the refund is owed: CauseLateSuccess or CauseOtherPayment.
func (r RefundOwed) Cause() string {
	if r.OnRecordedPayment {
		return CauseLateSuccess
	}
	return CauseOtherPayment
}

// RefundOf returns what the refund row of subject is about, read from the
// payment's state and records as command.Handler.LoadPayment returns them; ok is
// false when they record no refund owed for it (a row the auditor reports stale).
// For the rental's own payment it is the last RefundOwed's, settled or not: a row
// the projector has not yet taken off is still shown for what it was.
func RefundOf(subject string, s payment.Payment, records []eventstore.Record) (r RefundOwed, ok bool, err error) {
	r.RentalID = RefundRental(subject)
	if !RefundOnRecordedPayment(subject) {
		for _, u := range s.Unexpected {
			if UnexpectedRefundSubject(r.RentalID, u.PaymentID) == subject {
				r.PaymentID, r.Amount, r.Currency, r.Reason = u.PaymentID, u.Amount, u.Currency, u.Reason
				return r, true, nil
			}
		}
		return r, false, nil
	}
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].Type != (payment.RefundOwed{}).EventType() {
			continue
		}
		o, err := eventstore.Decode[payment.RefundOwed](records[i], payment.DecodeEvent)
		if err != nil {
			return r, false, err
		}
		r.PaymentID, r.OnRecordedPayment, r.Amount, r.Currency, r.Reason = o.PaymentID, true, o.Amount, o.Currency, o.Reason
		return r, true, nil
	}
	return r, false, nil
}
