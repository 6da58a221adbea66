// Package owed is the part of the sweep that retries the cancellations owed to the
// payment provider (docs/decisions/0013-cancellations-owed-to-the-provider.md): a
// payment this service cancelled whose cancellation the provider has not confirmed
// (payment.CancellationOwedAtProvider) has a row of its own in the to-do table's
// owed lane (deadline.OwedLane), due at once, until the provider confirms the
// cancellation (payment.CancellationDoneAtProvider) or a success arrives meanwhile
// (payment.PaymentSucceededAfterCancellation, which is refunded). Retries reads
// that lane (Rows), sends the rows that are due to the Retrier
// (command.Handler.RetryCancellation) and counts every row still owed, due or put
// off; a retry the provider leaves unanswered (payment.CancellationStillOwed) puts
// the row's next retry off by Backoff. ChangeOf is what each record means for a
// row: the one decoder the Deadlines table and the in-memory index project with.
package owed

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Cancellation is one payment cancelled here whose cancellation the provider has
// not confirmed yet, with the time it was found owed, and the time it is due to be
// tried again.
type Cancellation struct {
	Reference string    `json:"paymentReference"`
	RentalID  string    `json:"rentalId"`
	OwedAt    time.Time `json:"owedAt"`
	Due       time.Time `json:"due"`
}

// Sort sorts owed cancellations oldest first, those found owed in the same
// millisecond by reference.
func Sort(rows []Cancellation) {
	slices.SortFunc(rows, func(a, b Cancellation) int {
		return cmp.Or(a.OwedAt.Compare(b.OwedAt), cmp.Compare(a.Reference, b.Reference))
	})
}

// Backoff of an owed cancellation whose retry the provider left unanswered: the
// tries-th such retry puts the next one off by BackoffMin doubled for each try
// before it, at most BackoffMax. With a sweep a minute, a provider that stays down
// is asked about 7 times in its first hour, then once an hour, rather than 60
// times an hour.
const (
	BackoffMin = time.Minute
	BackoffMax = time.Hour
)

// Backoff returns how long after its tries-th unanswered retry an owed
// cancellation is due again: from BackoffMin, doubling, up to BackoffMax.
func Backoff(tries int) time.Duration {
	d := BackoffMin
	for i := 1; i < tries && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// Change is what a record means for a cancellation owed to the provider: it
// became owed, or it was settled, or (Tries above 0) its Tries-th retry went
// unanswered, which puts the next one off (Backoff).
type Change struct {
	Reference string
	RentalID  string
	Settled   bool
	Tries     int
}

// ChangeOf decodes a record that makes a cancellation owed to the provider,
// settles one or puts its retry off; ok is false for every other record, and for
// payments that belong to no rental. A record of one of those types that does not
// decode is an error wrapping eventstore.ErrCorruptRecord.
func ChangeOf(r eventstore.Record) (c Change, ok bool, err error) {
	switch r.Type {
	case payment.CancellationOwedAtProvider{}.EventType(), payment.CancellationDoneAtProvider{}.EventType(),
		payment.PaymentSucceededAfterCancellation{}.EventType(), payment.CancellationStillOwed{}.EventType():
	default:
		return Change{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return Change{}, false, fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	ref := payment.ReferenceOf(e)
	rentalID, err := payment.RentalIDFor(ref)
	if err != nil {
		return Change{}, false, nil
	}
	switch e := e.(type) {
	case payment.CancellationOwedAtProvider:
		return Change{Reference: ref, RentalID: rentalID}, true, nil
	case payment.CancellationStillOwed:
		if e.Tries < 1 {
			return Change{}, false, fmt.Errorf("%w: %s version %d: tries %d", eventstore.ErrCorruptRecord, r.StreamID, r.Version, e.Tries)
		}
		return Change{Reference: ref, RentalID: rentalID, Tries: e.Tries}, true, nil
	}
	return Change{Reference: ref, RentalID: rentalID, Settled: true}, true, nil
}
