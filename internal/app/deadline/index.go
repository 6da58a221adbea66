package deadline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Index is what the sweep reads: the projection of outstanding payments and of open
// processes, by the time they began, in partitions that are queried one by one.
// The PendingPayments table (package pendingtable) is the service's; Memory is one
// for tests. indextest holds the contract both keep.
type Index interface {
	// Shards returns how many partitions the index is read by.
	Shards() int
	// OverduePages calls fn with the outstanding payments of shard prepared before
	// cutoff, oldest first, a page at a time, until fn returns false or none are
	// left, and returns how many items it read. It never scans.
	OverduePages(ctx context.Context, shard int, cutoff time.Time, fn func([]Pending) bool) (int, error)
	// OpenBefore returns every rental whose process has been open since before the
	// cutoff, oldest first, and how many items it read.
	OpenBefore(ctx context.Context, cutoff time.Time) ([]Open, int, error)
	// OpenAndOwed is OpenBefore, and also returns every cancellation owed to the
	// provider (OwedCancellations), from the same reads: the sweep's one look at
	// both, which reads nothing more than OpenBefore when nothing is owed.
	OpenAndOwed(ctx context.Context, cutoff time.Time) ([]Open, []OwedCancellation, int, error)
	// Get returns the outstanding payment with the given reference; ok is false when
	// it is not outstanding (never projected, or settled).
	Get(ctx context.Context, reference string) (row Pending, ok bool, err error)
	// Row returns the outstanding row of kind k about subject, with a strongly
	// consistent read; ok is false when it is not outstanding (never opened, or
	// settled).
	Row(ctx context.Context, k Kind, subject string) (row Row, ok bool, err error)
	// OwedCancellations returns every payment whose cancellation is owed to the
	// provider, oldest first, and how many items it read. It never scans, and
	// reads no open process.
	OwedCancellations(ctx context.Context) ([]OwedCancellation, int, error)
	// Backlog is OpenAndOwed, and also returns every parked stream record
	// (Parked), from the same reads: it reads nothing more than OpenBefore when
	// nothing is owed and nothing parked.
	Backlog(ctx context.Context, cutoff time.Time) (Backlog, int, error)
}

// Backlog is what the sweep's one look at the open processes' partitions finds.
type Backlog struct {
	Open   []Open
	Owed   []OwedCancellation
	Parked []Parked
}

// Parked is one record of the Events table's stream that a consumer could not
// handle when it came, kept for delivery again to that consumer (Consumer, an
// eventfilter name) by the sweep, from Due on, rather than holding up the records
// behind it (docs/decisions/0017-parked-stream-records.md).
type Parked struct {
	Consumer string    `json:"consumer"`
	StreamID string    `json:"streamId"`
	Version  int64     `json:"version"`
	Due      time.Time `json:"due"`
}

// SortParked sorts parked records by due time, then by consumer, stream and
// version.
func SortParked(rows []Parked) {
	slices.SortFunc(rows, func(a, b Parked) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.StreamID, b.StreamID), cmp.Compare(a.Version, b.Version))
	})
}

// OwedCancellation is one payment cancelled here whose cancellation the provider
// has not confirmed yet (payment.CancellationOwedAtProvider), with the time it was
// found owed. Every sweep tries it again until it is settled: by the provider's
// confirmation (payment.CancellationDoneAtProvider) or by a success meanwhile
// (payment.PaymentSucceededAfterCancellation), which is refunded.
type OwedCancellation struct {
	Reference string    `json:"paymentReference"`
	RentalID  string    `json:"rentalId"`
	OwedAt    time.Time `json:"owedAt"`
}

// CancellationChange is what a record means for a cancellation owed to the
// provider: it became owed, or it was settled.
type CancellationChange struct {
	Reference string
	Settled   bool
}

// CancellationChangeOf decodes a record that makes a cancellation owed to the
// provider or settles one; ok is false for every other record, and for payments
// that belong to no rental. A record of one of those types that does not decode is
// an error wrapping eventstore.ErrCorruptRecord.
func CancellationChangeOf(r eventstore.Record) (c CancellationChange, ok bool, err error) {
	switch r.Type {
	case payment.CancellationOwedAtProvider{}.EventType(), payment.CancellationDoneAtProvider{}.EventType(),
		payment.PaymentSucceededAfterCancellation{}.EventType():
	default:
		return CancellationChange{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return CancellationChange{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	ref := payment.ReferenceOf(e)
	if _, err := payment.RentalIDFor(ref); err != nil {
		return CancellationChange{}, false, nil
	}
	_, owed := e.(payment.CancellationOwedAtProvider)
	return CancellationChange{Reference: ref, Settled: !owed}, true, nil
}

// Pending is one outstanding payment.
type Pending struct {
	Reference  string    `json:"paymentReference"`
	RentalID   string    `json:"rentalId"`
	PreparedAt time.Time `json:"preparedAt"`
}

// Open is one rental whose process has not completed, with the time its bike was
// requested.
type Open struct {
	RentalID    string    `json:"rentalId"`
	RequestedAt time.Time `json:"requestedAt"`
}

// PaymentChange is what a record of the Events table means for a payment's deadline:
// the payment was prepared (Settled is empty), or it settled, and how ("confirmed",
// "rejected" or "cancelled").
type PaymentChange struct {
	Reference string
	Settled   string
}

// PaymentChangeOf decodes the record of a payment event that starts or ends a
// payment's wait; ok is false for every other record. A record of one of those types
// that does not decode is an error wrapping eventstore.ErrCorruptRecord.
func PaymentChangeOf(r eventstore.Record) (c PaymentChange, ok bool, err error) {
	if r.Type != (payment.PaymentPrepared{}).EventType() && !payment.Settles(r.Type) {
		return PaymentChange{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return PaymentChange{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	switch e := e.(type) {
	case payment.PaymentPrepared:
		return PaymentChange{Reference: e.Reference}, true, nil
	case payment.PaymentConfirmed:
		return PaymentChange{Reference: e.Reference, Settled: string(payment.StatusConfirmed)}, true, nil
	case payment.PaymentRejected:
		return PaymentChange{Reference: e.Reference, Settled: string(payment.StatusRejected)}, true, nil
	case payment.PaymentCancelled:
		return PaymentChange{Reference: e.Reference, Settled: string(payment.StatusCancelled)}, true, nil
	}
	return PaymentChange{}, false, nil
}

// ProcessChange is what a record means for a rental's open process: it opened (the
// bike was requested) or it completed.
type ProcessChange struct {
	RentalID  string
	Completed bool
}

// ProcessChangeOf decodes a record that opens or completes a rental's process; ok is
// false for every other record. A record of one of those types that does not decode,
// or names no valid rental, is an error wrapping eventstore.ErrCorruptRecord.
func ProcessChangeOf(r eventstore.Record) (c ProcessChange, ok bool, err error) {
	var id string
	switch r.Type {
	case rental.BikeRequested{}.EventType():
		var e rental.Event
		if e, err = rental.DecodeEvent(r.Type, r.Data); err == nil {
			id = e.(rental.BikeRequested).RentalID
		}
	case rentalpayment.TypeCompleted:
		var e rentalpayment.Event
		if e, err = rentalpayment.DecodeEvent(r.Type, r.Data); err == nil {
			id, c.Completed = e.(rentalpayment.RentalPaymentProcessCompleted).RentalID, true
		}
	default:
		return ProcessChange{}, false, nil
	}
	if err == nil && !ident.Valid(id) {
		err = fmt.Errorf("rental id %q", id)
	}
	if err != nil {
		return ProcessChange{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	c.RentalID = id
	return c, true, nil
}
