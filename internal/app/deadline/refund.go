package deadline

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// RefundOwed is one refund the service owes: money a provider that cannot refund
// took for a rental that did not get its bike (payment.RefundOwed), not refunded
// since (payment.PaymentRefunded), with the time it became owed. Operators pay it
// back by hand; the to-do table keeps it so that they find it without a scan.
type RefundOwed struct {
	Reference string    `json:"paymentReference"`
	RentalID  string    `json:"rentalId"`
	OwedSince time.Time `json:"owedSince"`
}

// RefundChange is what a record means for a refund owed: it became owed, or it
// was refunded.
type RefundChange struct {
	Reference string
	Refunded  bool
}

// RefundChangeOf decodes a record that makes a refund owed or settles one; ok is
// false for every other record, and for payments that belong to no rental. A record
// of one of those types that does not decode is an error wrapping
// eventstore.ErrCorruptRecord.
func RefundChangeOf(r eventstore.Record) (c RefundChange, ok bool, err error) {
	switch r.Type {
	case payment.RefundOwed{}.EventType(), payment.PaymentRefunded{}.EventType():
	default:
		return RefundChange{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return RefundChange{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	ref := payment.ReferenceOf(e)
	if _, err := payment.RentalIDFor(ref); err != nil {
		return RefundChange{}, false, nil
	}
	_, refunded := e.(payment.PaymentRefunded)
	return RefundChange{Reference: ref, Refunded: refunded}, true, nil
}

// SortRefunds sorts refunds owed oldest first, then by payment reference.
func SortRefunds(rows []RefundOwed) {
	slices.SortFunc(rows, func(a, b RefundOwed) int {
		return cmp.Or(a.OwedSince.Compare(b.OwedSince), cmp.Compare(a.Reference, b.Reference))
	})
}
