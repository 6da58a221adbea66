package deadlinecost

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

// appended is one event of a rental, in the stream it is appended to.
type appended struct {
	stream string
	event  any
}

// eventsOf returns the events of rental id's path that its three streams hold, in the
// order the service appends them: the bike's (BikeRequested, the approval or
// rejection, BikeReturned), the payment's (PaymentPrepared and how it settled) and
// the process's (RentalPaymentRequested, its completion). Records of other streams
// (the renter's) open and settle no deadline.
func eventsOf(path rentalcost.Path, bike, id string) []appended {
	ref := payment.ReferenceFor(id)
	bikeStream, payStream, procStream := rental.StreamID(bike), payment.StreamID(ref), rentalpayment.StreamID(id)
	out := []appended{
		{bikeStream, rental.BikeRequested{BikeID: bike, Renter: "renter", RentalID: id}},
		{payStream, payment.PaymentPrepared{PaymentID: "pay-" + id, Reference: ref, Amount: 1500, Currency: "EUR"}},
		{procStream, rentalpayment.RentalPaymentRequested{RentalID: id, BikeID: bike, Renter: "renter", Amount: 1500, Currency: "EUR", BikeVersion: 1}},
	}
	if path == rentalcost.Approved {
		return append(out,
			appended{payStream, payment.PaymentConfirmed{Reference: ref, PaymentID: "pay-" + id}},
			appended{bikeStream, rental.RequestApproved{BikeID: bike, Renter: "renter", RentalID: id}},
			appended{procStream, rentalpayment.RentalPaymentProcessCompleted{RentalID: id, Outcome: rentalpayment.CompletedApproved}},
			appended{bikeStream, rental.BikeReturned{BikeID: bike, Renter: "renter", RentalID: id}},
		)
	}
	settled, outcome := any(payment.PaymentCancelled{Reference: ref, PaymentID: "pay-" + id}), rentalpayment.CompletedCancelled
	if path == rentalcost.Rejected {
		settled, outcome = payment.PaymentRejected{Reference: ref, PaymentID: "pay-" + id, Reason: "declined"}, rentalpayment.CompletedRejected
	}
	return append(out,
		appended{payStream, settled},
		appended{bikeStream, rental.RequestRejected{BikeID: bike, Renter: "renter", RentalID: id}},
		appended{procStream, rentalpayment.RentalPaymentProcessCompleted{RentalID: id, Outcome: outcome}},
	)
}

// typed is an event that names its stored type.
type typed interface{ EventType() string }

// appender appends a rental's events to the event store, each at the version its
// stream has reached.
type appender struct {
	store    eventstore.Store
	versions map[string]int64
}

func newAppender(store eventstore.Store) *appender {
	return &appender{store: store, versions: map[string]int64{}}
}

// add appends events one at a time, calling then, if it is not nil, with each
// record as stored before the next is appended; it returns the records, in order.
func (ap *appender) add(ctx context.Context, events []appended, then func(eventstore.Record) error) ([]eventstore.Record, error) {
	var out []eventstore.Record
	for _, a := range events {
		r, err := appendOne(ctx, ap.store, a, ap.versions[a.stream])
		if err != nil {
			return nil, err
		}
		ap.versions[a.stream]++
		out = append(out, r)
		if then != nil {
			if err := then(r); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func appendOne(ctx context.Context, store eventstore.Store, a appended, version int64) (eventstore.Record, error) {
	e, ok := a.event.(typed)
	if !ok {
		return eventstore.Record{}, fmt.Errorf("deadlinecost: %T names no event type", a.event)
	}
	typ := e.EventType()
	data, err := json.Marshal(a.event)
	if err != nil {
		return eventstore.Record{}, err
	}
	recs, err := store.Append(ctx, a.stream, version, eventstore.Event{ID: fmt.Sprintf("%s-%d", a.stream, version+1), Type: typ, Data: data})
	if err != nil {
		return eventstore.Record{}, fmt.Errorf("deadlinecost: append %s to %s: %w", typ, a.stream, err)
	}
	return recs[0], nil
}
