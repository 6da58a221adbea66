package deadlinekinds

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bikerental/bikerental/deadlines"
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
// (deadlines.ByHand). Its records are all in the payment's stream (Ordered): a
// RefundOwed later than a PaymentRefunded (the provider's refund failed after it
// reported it made) opens the row again. Its rows are listed by a query per shard
// (GET /refunds/owed, GET /deadlines), not by a scan of the Events table.
func RefundKind() deadlines.Kind {
	return deadlines.Kind{Name: Refund, Prefix: RefundPrefix, Changes: RefundChanges{}, Valid: validRefundSubject, Work: deadlines.ByHand{}, Ordered: true}
}

// RefundChanges reads the refund owed's records (payment.RefundOwedChangeOf):
// what opens a refund owed opens its row, what settles it settles it; payments of
// no rental are no row of it.
type RefundChanges struct{}

// Change implements deadlines.Changes.
func (RefundChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	if !slices.Contains(payment.RefundOwedTypes(), r.Type) {
		return deadlines.Change{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return deadlines.Change{}, false, fmt.Errorf("%w: %s version %d: %w", deadlines.ErrCorruptRecord, r.Stream, r.Position, err)
	}
	c, _ := payment.RefundOwedChangeOf(e)
	rentalID, err := payment.RentalIDFor(c.Reference)
	if err != nil {
		return deadlines.Change{}, false, nil // not a rental's payment
	}
	subject := refundSubject(rentalID, c)
	if c.Settled { // refunded by the provider, or made by hand
		return deadlines.Change{Subject: subject, Settled: true, How: SettledRefunded}, true, nil
	}
	return deadlines.Change{Subject: subject}, true, nil
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

// refundSubject is the subject of the row of the refund owed that c opens or
// settles, of rentalID's payment.
func refundSubject(rentalID string, c payment.RefundOwedChange) string {
	if c.PaymentID == "" {
		return rentalID
	}
	return UnexpectedRefundSubject(rentalID, c.PaymentID)
}

// RentalOf returns the rental a row of the kind named kind is about: its subject,
// but for a refund owed (RefundRental), whose subject may also name the provider
// payment the money was taken on, for an owed cancellation, whose subject is its
// payment's reference, and for a parked record, which is about a stream record
// and names no rental (""). Listings show it, and a repair mends it.
func RentalOf(kind, subject string) string {
	switch kind {
	case Refund:
		return RefundRental(subject)
	case Cancellation:
		rentalID, _ := payment.RentalIDFor(subject)
		return rentalID
	case Redelivery:
		return ""
	}
	return subject
}

// RefundRental returns the rental a refund row's subject is about: the rental's id,
// for its own refund's row and the one owed on another provider payment alike.
func RefundRental(subject string) string {
	rentalID, _, _ := strings.Cut(subject, unexpectedSeparator)
	return rentalID
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

// OwedRefund is what a refund row is about, as operators' listings show it (GET
// /refunds/owed, GET /deadlines, the console): the rental, why the refund is owed
// (CauseLateSuccess, CauseOtherPayment), and what the event that opened it says it
// owes (payment.Owed).
type OwedRefund struct {
	RentalID string
	Cause    string
	payment.Owed
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

// CauseOf returns why the refund owed that c opens or settles is owed:
// CauseLateSuccess for the payment's own, CauseOtherPayment for one on another
// provider payment.
func CauseOf(c payment.RefundOwedChange) string {
	if c.PaymentID == "" {
		return CauseLateSuccess
	}
	return CauseOtherPayment
}

// RefundOf returns what the refund row of subject is about, read from its
// payment's records (as command.Handler.LoadPayment returns them): what the last
// event that opened it says, settled or not, so that a row the projector has not
// yet taken off is still shown for what it was; ok is false when they record no
// refund owed for it (a row the auditor reports stale).
func RefundOf(subject string, records []eventstore.Record) (r OwedRefund, ok bool, err error) {
	r.RentalID = RefundRental(subject)
	for i := len(records) - 1; i >= 0; i-- {
		if !slices.Contains(payment.RefundOwedTypes(), records[i].Type) {
			continue
		}
		e, err := payment.DecodeEvent(records[i].Type, records[i].Data)
		if err != nil {
			return r, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, records[i].StreamID, records[i].Version, err)
		}
		c, _ := payment.RefundOwedChangeOf(e)
		if c.Settled || refundSubject(r.RentalID, c) != subject {
			continue
		}
		r.Cause, r.Owed = CauseOf(c), c.Owed
		return r, true, nil
	}
	return r, false, nil
}
