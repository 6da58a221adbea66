package httpapi_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"

	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// toDo is a to-do list in memory over the service's kinds (the default policy and
// rental period), filled by the records that open its rows, whose reads it counts.
type toDo struct {
	t     *testing.T
	index *memory.Index
	kinds deadlines.Kinds
	// calls and read count the index's reads (Index.Rows) and the items they read.
	calls, read atomic.Int64
	position    int64
}

func newToDo(t *testing.T, shards int) *toDo {
	kinds := deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})
	return &toDo{t: t, index: memory.New(kinds, shards), kinds: kinds}
}

// listing is the to-do list as the API reads it, its reads counted.
func (d *toDo) listing() *deadlinekinds.Listing {
	return &deadlinekinds.Listing{Index: countedIndex{d.index, d}, Kinds: d.kinds}
}

// countedIndex counts the reads of an index.
type countedIndex struct {
	deadlines.Index
	d *toDo
}

func (c countedIndex) Rows(ctx context.Context, span deadlines.Span, fn func([]deadlines.Row) bool) (int, error) {
	n, err := c.Index.Rows(ctx, span, fn)
	c.d.calls.Add(1)
	c.d.read.Add(int64(n))
	return n, err
}

// open projects the record that opens the row of kind (a payment's, a stuck
// process's, a return's, a flagged overdue return's, a rental's own refund's)
// about the rental subject, due at due: the record's time is its kind's After
// before.
func (d *toDo) open(kind, subject string, due time.Time) {
	d.t.Helper()
	k, ok := d.kinds.ByName(kind)
	if !ok {
		d.t.Fatalf("no kind %s", kind)
	}
	bike, err := rental.BikeIDOf(subject)
	if err != nil {
		d.t.Fatal(err)
	}
	ref := payment.ReferenceFor(subject)
	var e interface{ EventType() string }
	stream := payment.StreamID(ref)
	switch kind {
	case deadlinekinds.Payment:
		e = payment.PaymentPrepared{PaymentID: "pay-" + subject, Reference: ref, Amount: 1500, Currency: "EUR"}
	case deadlinekinds.Refund:
		e = payment.RefundOwed{Reference: ref, PaymentID: "pay-" + subject, Amount: 1500, Currency: "EUR"}
	case deadlinekinds.Stuck:
		e, stream = rental.BikeRequested{BikeID: bike, Renter: "alice", RentalID: subject}, rental.StreamID(bike)
	case deadlinekinds.Return:
		e, stream = rental.RequestApproved{BikeID: bike, Renter: "alice", RentalID: subject}, rental.StreamID(bike)
	case deadlinekinds.Overdue:
		e, stream = rental.ReturnOverdue{BikeID: bike, Renter: "alice", RentalID: subject, ApprovedAt: due.Add(-k.After), DueAt: due, FlaggedAt: due}, rental.StreamID(bike)
	default:
		d.t.Fatalf("toDo.open: no record opens a %s row here", kind)
	}
	data, err := json.Marshal(e)
	if err != nil {
		d.t.Fatal(err)
	}
	d.position++
	d.apply(deadlines.Record{Stream: stream, Position: d.position, Type: e.EventType(), At: due.Add(-k.After), Data: data})
}

// settle projects the record that settles the row of kind (a payment's, a stuck
// process's) about the rental subject.
func (d *toDo) settle(kind, subject string) {
	d.t.Helper()
	var e interface{ EventType() string }
	stream := payment.StreamID(payment.ReferenceFor(subject))
	switch kind {
	case deadlinekinds.Payment:
		e = payment.PaymentConfirmed{Reference: payment.ReferenceFor(subject), PaymentID: "pay-" + subject}
	case deadlinekinds.Stuck:
		e, stream = rentalpayment.RentalPaymentProcessCompleted{RentalID: subject, Outcome: rentalpayment.CompletedRejected}, rentalpayment.StreamID(subject)
	default:
		d.t.Fatalf("toDo.settle: no record settles a %s row here", kind)
	}
	data, err := json.Marshal(e)
	if err != nil {
		d.t.Fatal(err)
	}
	d.position++
	d.apply(deadlines.Record{Stream: stream, Position: d.position, Type: e.EventType(), At: time.Now(), Data: data})
}

// project projects every record of streams in store, as the projector would.
func (d *toDo) project(store eventstore.Store, streams ...string) {
	d.t.Helper()
	for _, s := range streams {
		records, err := store.Read(context.Background(), s, 0)
		if err != nil {
			d.t.Fatal(err)
		}
		for _, r := range records {
			d.apply(deadlines.Record{Stream: r.StreamID, Position: r.Version, Type: r.Type, At: r.RecordedAt, Data: r.Data, Source: r})
		}
	}
}

func (d *toDo) apply(r deadlines.Record) {
	d.t.Helper()
	if err := d.index.Apply(context.Background(), r); err != nil {
		d.t.Fatal(err)
	}
}

// reads returns how many reads of the index and items read there were so far.
func (d *toDo) reads() (calls, items int64) { return d.calls.Load(), d.read.Load() }
