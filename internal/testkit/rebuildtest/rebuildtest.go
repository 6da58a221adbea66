// Package rebuildtest builds, for tests of the rebuild tooling, a world on the local
// emulator: an Events table holding payments in every state, with the process that
// started them, and an empty Deadlines table to rebuild.
package rebuildtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Settlement says how a payment of the world ends; Outstanding leaves it waiting.
type Settlement string

// The settlements Settle knows.
const (
	Outstanding Settlement = ""
	Confirmed   Settlement = "confirmed"
	Rejected    Settlement = "rejected"
	Cancelled   Settlement = "cancelled"
)

// World is an Events table and an empty Deadlines table of its own on the
// emulator, with the command handler and the rental-payment process on them, and
// the service's kinds of deadline under the default policy.
type World struct {
	T           testing.TB
	Client      *dynamodb.Client
	EventsTable string
	// DeadlinesTable is empty until something rebuilds or projects into it.
	DeadlinesTable string
	Store          *dynamo.Store
	Commands       *command.Handler
	Process        *process.Process
	// Kinds are the service's kinds of deadline under the default policy
	// (PAYMENT_TIMEOUT, STUCK_GRACE and RENTAL_PERIOD unset), without commands.
	Kinds deadlines.Kinds
}

// NewWorld creates the tables, deleted when the test ends, and the parts on them.
func NewWorld(t testing.TB) *World {
	t.Helper()
	client, events := emulatortest.EventsTable(t)
	w := &World{
		T: t, Client: client, EventsTable: events,
		DeadlinesTable: emulatortest.CreateTable(t, client, deadlinetable.Definition, "deadlines"),
		Store:          dynamo.New(client, events),
		Kinds:          deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{}),
	}
	w.Commands = command.New(w.Store, command.WithProvider(generic.Provider{}))
	var err error
	w.Process, err = process.New(process.Config{
		Store: w.Store, Commands: w.Commands, Mode: process.RecordByAppend,
		Price: process.Price{Amount: 1500, Currency: "EUR"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Projection returns the world's Deadlines table over its kinds, its rows spread
// over shards; it does not check or record the table's shard count.
func (w *World) Projection(shards int) *deadlinetable.Table {
	w.T.Helper()
	p, err := deadlinetable.New(w.Client, w.DeadlinesTable, w.Kinds, deadlinetable.WithShards(shards))
	if err != nil {
		w.T.Fatal(err)
	}
	return p
}

// Projector returns p as the projector's handler of the event store's records, as
// the projector function and a repair give them: p.Apply of dynamo.RecordOf.
func Projector(p deadlines.Projection) func(context.Context, eventstore.Record) error {
	return func(ctx context.Context, r eventstore.Record) error { return p.Apply(ctx, dynamo.RecordOf(r)) }
}

// Project applies records to p, in order, as the projector would.
func (w *World) Project(p deadlines.Projection, records ...eventstore.Record) {
	w.T.Helper()
	for _, r := range records {
		if err := p.Apply(context.Background(), dynamo.RecordOf(r)); err != nil {
			w.T.Fatalf("project %s version %d (%s): %v", r.StreamID, r.Version, r.Type, err)
		}
	}
}

// Rent registers bikeID, requests it, and lets the process react to the request as
// its stream consumer would: the process prepares the payment and records
// RentalPaymentRequested. It then settles the payment as how says, and lets the
// process react to that too. It returns the rental id.
func (w *World) Rent(bikeID string, how Settlement) string {
	w.T.Helper()
	ctx := context.Background()
	rentalID := rental.NewRentalID(bikeID, "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{
		rental.RegisterBike{BikeID: bikeID},
		rental.RequestBike{BikeID: bikeID, Renter: "renter-" + bikeID, RentalID: rentalID}, // one renter per bike: a renter may have one outstanding request
	} {
		if _, err := w.Commands.Bike(ctx, c, command.Meta{}); err != nil {
			w.T.Fatal(err)
		}
	}
	w.handle(rental.StreamID(bikeID), rental.BikeRequested{}.EventType())

	ref := payment.ReferenceFor(rentalID)
	var settle payment.Command
	switch how {
	case Outstanding:
		return rentalID
	case Confirmed:
		settle = payment.ConfirmPayment{Reference: ref}
	case Rejected:
		settle = payment.RejectPayment{Reference: ref, Reason: "card declined"}
	case Cancelled:
		settle = payment.CancelPayment{Reference: ref}
	default:
		w.T.Fatalf("unknown settlement %q", how)
	}
	res, err := w.Commands.Payment(ctx, settle, command.Meta{})
	if err != nil {
		w.T.Fatal(err)
	}
	if len(res.Appended) != 1 {
		w.T.Fatalf("%T appended %d events, want 1", settle, len(res.Appended))
	}
	w.handle(payment.StreamID(ref), res.Appended[0].Type)
	return rentalID
}

// handle gives the process the last record of type typ in stream.
func (w *World) handle(stream, typ string) {
	w.T.Helper()
	records := w.Read(stream)
	for j := len(records) - 1; j >= 0; j-- {
		if records[j].Type == typ {
			if err := w.Process.Handle(context.Background(), records[j]); err != nil {
				w.T.Fatalf("process %s %s: %v", stream, typ, err)
			}
			return
		}
	}
	w.T.Fatalf("no %s in %s", typ, stream)
}

// Read returns a stream's records.
func (w *World) Read(stream string) []eventstore.Record {
	w.T.Helper()
	records, err := w.Store.Read(context.Background(), stream, 0)
	if err != nil {
		w.T.Fatal(err)
	}
	return records
}

// PaymentOf returns the records of a rental's payment stream.
func (w *World) PaymentOf(rentalID string) []eventstore.Record {
	w.T.Helper()
	return w.Read(payment.StreamID(payment.ReferenceFor(rentalID)))
}

// Pending returns the rental ids the index lists as outstanding payments, sorted,
// and checks that each row is due the payment timeout after its PaymentPrepared
// was recorded.
func (w *World) Pending(idx deadlines.Index) []string {
	w.T.Helper()
	rows, more, err := deadlinekinds.Listing{Index: idx, Kinds: w.Kinds}.Payments(context.Background(), false, time.Time{}, deadlines.MaxLimit)
	if err != nil || more {
		w.T.Fatalf("pending payments: %v (more than %d: %v)", err, deadlines.MaxLimit, more)
	}
	var ids []string
	for _, r := range rows {
		prepared := w.PaymentOf(r.RentalID)
		if len(prepared) == 0 || prepared[0].Type != (payment.PaymentPrepared{}).EventType() {
			w.T.Fatalf("row %s: no PaymentPrepared in its stream", r.Reference)
		}
		if want := prepared[0].RecordedAt.Truncate(time.Millisecond); !r.PreparedAt.Equal(want) {
			w.T.Errorf("row %s prepared at %s, want the event's time %s", r.Reference, r.PreparedAt, want)
		}
		ids = append(ids, r.RentalID)
	}
	slices.Sort(ids)
	return ids
}

// Name returns a name no other test uses, short enough for a schedule's (at most 64
// characters of A-Z, a-z, 0-9, ".", "_" and "-").
func Name(kind string) string { return kind + "-" + ident.Random(12) }
