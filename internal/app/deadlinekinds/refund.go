package deadlinekinds

import (
	"fmt"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Refund is the refund-owed kind's name.
const Refund = "refund"

// RefundPrefix starts the key of a refund-owed row; the rest is the rental id, so
// that the key is "refund#" and the payment's reference.
var RefundPrefix = "refund#" + PaymentPrefix

// RefundLane is the lane of the refunds owed: the partitions "refund#0",
// "refund#1", …, stamped with the time the refund became owed (the kind's After is
// zero). No sweep reads it.
var RefundLane = deadline.LaneOf(Refund)

// SettledRefunded is how a refund-owed row settles.
const SettledRefunded = "refunded"

// RefundKind is the refund owed: RefundOwed (money a provider that cannot refund
// took for a rental that did not get its bike) opens the rental's payment's row,
// due at once; PaymentRefunded or RefundMadeByHand (payment.SettlesRefund) settles
// it. Operators pay it back by hand: the kind has no command, and the sweep never
// reads its lane (deadline.ByHand). Its records are all in the payment's stream
// (Ordered): a RefundOwed later than a PaymentRefunded (the provider's refund
// failed after it reported it made) opens the row again. Its
// rows are listed by a query per shard (GET /refunds/owed, GET /deadlines), not by a
// scan of the Events table.
func RefundKind() deadline.Kind {
	return deadline.Kind{Name: Refund, Prefix: RefundPrefix, Changes: RefundChanges{}, Valid: ident.Valid, Work: deadline.ByHand{}, Ordered: true}
}

// RefundChanges reads the refund owed's records: RefundOwed opens,
// PaymentRefunded or RefundMadeByHand settles; payments of no rental are no row of
// it.
type RefundChanges struct{}

// Change implements deadline.Changes.
func (RefundChanges) Change(r eventstore.Record) (deadline.Change, bool, error) {
	if r.Type != (payment.RefundOwed{}).EventType() && !payment.SettlesRefund(r.Type) {
		return deadline.Change{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return deadline.Change{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	rentalID, err := payment.RentalIDFor(payment.ReferenceOf(e))
	if err != nil {
		return deadline.Change{}, false, nil // not a rental's payment
	}
	if payment.SettlesRefund(r.Type) { // refunded by the provider, or made by hand
		return deadline.Change{Subject: rentalID, Settled: true, How: SettledRefunded}, true, nil
	}
	return deadline.Change{Subject: rentalID}, true, nil
}
