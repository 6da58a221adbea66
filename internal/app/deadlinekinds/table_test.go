package deadlinekinds_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Tests of the service's kinds in the Deadlines table on moto (deadlines/dynamo),
// as the projector writes it and the operators' listings read it.

// newTable returns a fresh Deadlines table over the service's kinds, its rows
// spread over shards, the count recorded as the projector records it; and the
// client and name of the table, for other views of it.
func newTable(t *testing.T, shards int) (*deadlinetable.Table, *dynamodb.Client, string) {
	t.Helper()
	client := emulatortest.DynamoDB(t)
	name := newDeadlinesTable(t, client)
	table, err := deadlinetable.New(client, name, serviceKinds, deadlinetable.WithShards(shards))
	if err != nil {
		t.Fatal(err)
	}
	if err := table.CheckShards(ctx); err != nil {
		t.Fatal(err)
	}
	return table, client, name
}

// reshard returns a view of the table name under shards, after moving every
// outstanding row to its shard under that count.
func reshard(t *testing.T, client *dynamodb.Client, name string, shards int) *deadlinetable.Table {
	t.Helper()
	table, err := deadlinetable.New(client, name, serviceKinds, deadlinetable.WithShards(shards))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Reshard(ctx); err != nil {
		t.Fatal(err)
	}
	return table
}

// refundsOwed lists the refund kind's rows, as GET /refunds/owed reads them.
func refundsOwed(t *testing.T, idx deadlines.Index) []deadlines.Row {
	t.Helper()
	page, err := deadlines.List(ctx, idx, serviceKinds, deadlines.Query{Kind: deadlinekinds.Refund, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Rows
}

func refundOwed(t *testing.T, rentalID string, version int64, at time.Time) eventstore.Record {
	return paymentRecord(t, rentalID, version, payment.RefundOwed{Reference: payment.ReferenceFor(rentalID), PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at)
}

// TestRefundsOwedAreListedUntilRefunded: a RefundOwed opens a row of the refund
// kind, due at once (overdue from then on), listed due when it became owed,
// oldest first; its PaymentRefunded takes it off, for good (a replayed RefundOwed
// does not bring it back, nor does one whose refund's record came first); no
// query of the sweep or the pending list reads a refund's row; and resharding
// keeps them listed.
func TestRefundsOwedAreListedUntilRefunded(t *testing.T) {
	p, client, name := newTable(t, 4)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i, bike := range []string{"a", "b", "c", "d", "e"} {
		ids = append(ids, id(bike))
		owed := refundOwed(t, id(bike), 5, at.Add(time.Duration(-i)*time.Minute))
		applyTo(t, p, owed, owed) // delivered twice
	}
	got := refundsOwed(t, p)
	if len(got) != len(ids) {
		t.Fatalf("refunds owed %+v, want %d", got, len(ids))
	}
	for i, o := range got { // oldest first: the last bike's
		want, owed := ids[len(ids)-1-i], at.Add(time.Duration(-(len(ids)-1-i))*time.Minute)
		if o.Kind != deadlinekinds.Refund || o.Subject != want || !o.Due.Equal(owed) {
			t.Errorf("refund %d = %+v, want %s owed and due at %s", i, o, want, owed)
		}
	}
	// Refunded: off the list; a replayed RefundOwed does not bring it back.
	applyTo(t, p, paymentRecord(t, ids[0], 6, payment.PaymentRefunded{Reference: payment.ReferenceFor(ids[0]), PaymentID: "pay_1"}, at.Add(time.Hour)), refundOwed(t, ids[0], 5, at))
	// A refund whose PaymentRefunded is projected before its RefundOwed is never listed.
	late := id("z")
	applyTo(t, p, paymentRecord(t, late, 6, payment.PaymentRefunded{Reference: payment.ReferenceFor(late), PaymentID: "pay_2"}, at), refundOwed(t, late, 5, at))
	if got = refundsOwed(t, p); len(got) != len(ids)-1 || slices.ContainsFunc(got, func(r deadlines.Row) bool { return r.Subject == ids[0] || r.Subject == late }) {
		t.Fatalf("after one refund: %+v; want %d, neither %s nor %s", got, len(ids)-1, ids[0], late)
	}
	yes := true
	if page, err := deadlines.List(ctx, p, serviceKinds, deadlines.Query{Kind: deadlinekinds.Refund, Overdue: &yes, Now: at.Add(time.Millisecond), Limit: 100}); err != nil || len(page.Rows) != len(ids)-1 {
		t.Errorf("overdue refunds %+v, %v; want every one owed, due at once", page.Rows, err)
	}
	// Nothing the sweep or the pending list reads holds a refund.
	far := at.Add(24 * time.Hour)
	if b, _, err := listing(p).Backlog(ctx, far); err != nil || len(b.Open)+len(b.Owed)+len(b.Parked) != 0 {
		t.Errorf("the sweep's backlog reads refunds: %+v, %v", b, err)
	}
	if rows, _, err := listing(p).Payments(ctx, false, time.Time{}, 100); err != nil || len(rows) != 0 {
		t.Errorf("the pending list reads refunds: %+v, %v", rows, err)
	}
	for _, k := range serviceKinds.Swept() {
		for s := range p.Shards() {
			if _, err := p.Rows(ctx, deadlines.Span{Kind: k, Shard: s, Before: far}, func(page []deadlines.Row) bool {
				t.Errorf("kind %s shard %d holds %+v", k.Name, s, page)
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Resharding keeps them listed.
	if got := refundsOwed(t, reshard(t, client, name, 1)); len(got) != len(ids)-1 {
		t.Errorf("under 1 shard: %+v; want %d", got, len(ids)-1)
	}
}

// TestARefundMadeByHandSettlesItsRow: RefundMadeByHand takes a refund owed off the
// list, for good, as the provider's PaymentRefunded does; delivered twice, or
// before its RefundOwed, it leaves nothing listed.
func TestARefundMadeByHandSettlesItsRow(t *testing.T) {
	p, _, _ := newTable(t, 4)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	byHand := func(rentalID string) eventstore.Record {
		return paymentRecord(t, rentalID, 6, payment.RefundMadeByHand{Reference: payment.ReferenceFor(rentalID), PaymentID: "pay_1", Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"}, at.Add(time.Minute))
	}
	first, second, third := id("a"), id("b"), id("c")
	applyTo(t, p, refundOwed(t, first, 5, at), refundOwed(t, second, 5, at))
	if got := refundsOwed(t, p); len(got) != 2 {
		t.Fatalf("owed: %+v", got)
	}
	// The first made by hand, delivered twice, then its RefundOwed replayed; the
	// third's RefundMadeByHand projected before its RefundOwed is (in another order).
	applyTo(t, p, byHand(first), byHand(first), refundOwed(t, first, 5, at), byHand(third), refundOwed(t, third, 5, at))
	if got := refundsOwed(t, p); len(got) != 1 || got[0].Subject != second {
		t.Fatalf("after the refunds made by hand: %+v; want only %s", got, second)
	}
}

// TestEachRefundOwedOfARentalIsARowOfItsOwn: a rental that owes its own refund and
// one on each of two other provider payments has three rows of the refund kind,
// listed apart under any shard count, each settled by its own refund made by hand
// and by nothing else (the own one's settlement leaves the others, and one other's
// the rest); a replayed opening, before or after, never brings a settled one back,
// and a rebuild's replay of the whole stream, over the table or into an empty one,
// leaves exactly the one still owed.
func TestEachRefundOwedOfARentalIsARowOfItsOwn(t *testing.T) {
	p, _, _ := newTable(t, 4)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rentalID := id("a")
	ref := payment.ReferenceFor(rentalID)
	owedOn := func(paymentID string) payment.UnexpectedRefundOwed {
		return payment.UnexpectedRefundOwed{Reference: ref, PaymentID: paymentID, Amount: 700, Currency: "USD"}
	}
	madeOn := func(paymentID string) payment.UnexpectedRefundMadeByHand {
		return payment.UnexpectedRefundMadeByHand{Reference: ref, PaymentID: paymentID, Amount: 700, Currency: "USD", OperatorReference: "bank-2", RecordedBy: "ann"}
	}
	stream := []eventstore.Record{
		refundOwed(t, rentalID, 4, at),
		paymentRecord(t, rentalID, 5, owedOn("pi_other"), at.Add(time.Minute)),
		paymentRecord(t, rentalID, 6, owedOn("pi_third"), at.Add(2*time.Minute)),
		paymentRecord(t, rentalID, 7, madeOn("pi_other"), at.Add(3*time.Minute)),
		paymentRecord(t, rentalID, 8, payment.RefundMadeByHand{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"}, at.Add(4*time.Minute)),
	}
	subjects := func(idx deadlines.Index) []string {
		var out []string
		for _, r := range refundsOwed(t, idx) {
			out = append(out, r.Subject)
		}
		return out
	}
	own, other, third := rentalID, deadlinekinds.UnexpectedRefundSubject(rentalID, "pi_other"), deadlinekinds.UnexpectedRefundSubject(rentalID, "pi_third")
	if other == third || deadlinekinds.RefundRental(other) != rentalID || other == own || deadlinekinds.RefundRental(own) != own {
		t.Fatalf("subjects %q, %q, %q", own, other, third)
	}
	applyTo(t, p, stream[:3]...)
	applyTo(t, p, stream[1]) // redelivered
	if got := subjects(p); !slices.Equal(got, []string{own, other, third}) {
		t.Fatalf("three refunds owed: %q", got)
	}
	applyTo(t, p, stream[3])
	if got := subjects(p); !slices.Equal(got, []string{own, third}) {
		t.Fatalf("the other payment's made by hand: %q", got)
	}
	applyTo(t, p, stream[4], stream[1], stream[0]) // the own one made by hand; openings replayed after
	if got := subjects(p); !slices.Equal(got, []string{third}) {
		t.Fatalf("the own one made by hand, openings replayed: %q", got)
	}
	// A rebuild replays the stream over the table, and into an empty one under
	// another shard count; the opening of a settled one projected after its
	// settlement (records of a stream out of order) opens nothing either.
	applyTo(t, p, stream...)
	empty, _, _ := newTable(t, 1)
	applyTo(t, empty, stream[3], stream[4])
	applyTo(t, empty, stream...)
	for name, q := range map[string]*deadlinetable.Table{"over the table": p, "into an empty one": empty} {
		if got := subjects(q); !slices.Equal(got, []string{third}) {
			t.Errorf("a rebuild %s: %q", name, got)
		}
	}
}

// TestAParkedRecordIsKeptUntilRedelivered: parking a record (parked.Parker, as the
// stream functions park) appends one record to its parking stream of the Events
// table, however often it is parked, and the projector's row of it is listed
// parked, due since it was parked, and read by no other listing; its redelivery
// takes it off, and a record parked again after its redelivery is parked anew. A
// backlog with nothing parked reads nothing more than its open processes.
func TestAParkedRecordIsKeptUntilRedelivered(t *testing.T) {
	p, client, _ := newTable(t, 2)
	_, events := emulatortest.EventsTable(t)
	store := dynamo.New(client, events)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rentalID := id("a")
	applyTo(t, p, requested(t, rentalID, at))
	b, read, err := listing(p).Backlog(ctx, at.Add(time.Hour))
	if err != nil || len(b.Open) != 1 || len(b.Parked) != 0 || read != 1 {
		t.Fatalf("backlog with nothing parked: %+v, %d read, %v; want the open process alone", b, read, err)
	}

	settled := eventstore.Record{StreamID: payment.StreamID(payment.ReferenceFor(rentalID)), Version: 3}
	stream := parked.StreamOf(eventfilter.Process, settled.StreamID)
	parker := &parked.Parker{Store: store, Consumer: eventfilter.Process, NewID: ident.UUID, Known: eventfilter.Known}
	projected := int64(0)
	project := func() []eventstore.Record {
		t.Helper()
		records, err := store.Read(ctx, stream, projected+1)
		if err != nil {
			t.Fatal(err)
		}
		applyTo(t, p, records...)
		projected += int64(len(records))
		return records
	}
	parkedNow := func() []parked.Record {
		t.Helper()
		b, _, err := listing(p).Backlog(ctx, time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Open) != 0 || len(b.Owed) != 0 {
			t.Errorf("a parked record read as an open process or an owed cancellation: %+v", b)
		}
		return b.Parked
	}
	for range 2 {
		if err := parker.Park(ctx, settled); err != nil {
			t.Fatal(err)
		}
	}
	records := project()
	if len(records) != 1 {
		t.Fatalf("parking twice appended %d records, want 1", len(records))
	}
	want := parked.Record{Consumer: eventfilter.Process, StreamID: settled.StreamID, Version: 3, Due: records[0].RecordedAt.Truncate(time.Millisecond)}
	if got := parkedNow(); len(got) != 1 || got[0].Consumer != want.Consumer || got[0].StreamID != want.StreamID || got[0].Version != want.Version || !got[0].Due.Equal(want.Due) {
		t.Fatalf("parked %+v, want %+v, due since it was parked", got, want)
	}
	if rows, _, err := listing(p).Payments(ctx, false, time.Time{}, 100); err != nil || len(rows) != 0 {
		t.Errorf("the payments' listing reads a parked record: %+v, %v", rows, err)
	}

	redeliver := parked.Redeliver{Store: store, Redeliverer: &redeliveries{}, NewID: ident.UUID, Known: eventfilter.Known}
	row := deadlines.Row{Kind: deadlinekinds.Redelivery, Subject: parked.Subject(eventfilter.Process, settled.StreamID, 3)}
	if outcome, err := redeliver.Send(ctx, row, "sweep:test"); err != nil || outcome != deadlines.Acted {
		t.Fatalf("the redelivery: %s, %v", outcome, err)
	}
	project()
	if got := parkedNow(); len(got) != 0 {
		t.Fatalf("after its redelivery: %+v, want none", got)
	}
	if outcome, err := redeliver.Send(ctx, row, "sweep:test"); err != nil || outcome != deadlines.NothingToDo {
		t.Errorf("redelivering it again: %s, %v; want nothing to do", outcome, err)
	}
	if err := parker.Park(ctx, settled); err != nil {
		t.Fatal(err)
	}
	again := project()
	if got := parkedNow(); len(again) != 1 || len(got) != 1 || !got[0].Due.Equal(again[0].RecordedAt.Truncate(time.Millisecond)) {
		t.Fatalf("parked again after its redelivery: %+v, want it due since then", got)
	}
}

// TestAnOwedCancellationMovesWithTheShards: resharding moves an owed
// cancellation's row to its shard under the new count, where the sweep's query
// finds it, still owed since it became owed.
func TestAnOwedCancellationMovesWithTheShards(t *testing.T) {
	before, client, name := newTable(t, 16)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var rentals []string
	for _, bike := range []string{"a", "b", "c", "d", "e", "f"} {
		applyTo(t, before, owedAt(t, id(bike), at))
		rentals = append(rentals, id(bike))
	}
	after := reshard(t, client, name, 1)
	owed, _, err := listing(after).OwedCancellations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) != len(rentals) {
		t.Fatalf("under 1 shard: %+v, want all %d owed cancellations", owed, len(rentals))
	}
	for _, o := range owed {
		if !o.OwedAt.Equal(at) {
			t.Errorf("%s owed at %v, want %v", o.Reference, o.OwedAt, at)
		}
	}
	if b, _, err := listing(after).Backlog(ctx, time.Now()); err != nil || len(b.Open) != 0 {
		t.Errorf("owed cancellations read as open processes: %+v, %v", b.Open, err)
	}
}

// TestParkedRecordsMoveWithTheShards: resharding moves every record still parked
// to its shard under the new count, where the sweep's query of that shard finds
// it, due since it was parked, and leaves a redelivered one's marker where it is.
func TestParkedRecordsMoveWithTheShards(t *testing.T) {
	before, client, name := newTable(t, 16)
	due := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var streams []string
	for i := range 12 {
		stream := fmt.Sprintf("bike-parked-%d", i)
		applyTo(t, before, parkingRecord(t, eventfilter.Process, stream, 1, 2, false, due))
		streams = append(streams, stream)
	}
	// One was redelivered before the reshard: its marker is no parked record.
	applyTo(t, before, parkingRecord(t, eventfilter.Process, streams[0], 2, 2, true, due))
	found := func(idx deadlines.Index) map[string]time.Time {
		t.Helper()
		out := map[string]time.Time{}
		for s := range idx.Shards() {
			if _, err := idx.Rows(ctx, deadlines.Span{Kind: kind(deadlinekinds.Redelivery), Shard: s}, func(page []deadlines.Row) bool {
				for _, r := range page {
					p, _ := deadlinekinds.ParkedOf(r)
					out[p.StreamID] = r.Due
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	two, err := deadlinetable.New(client, name, serviceKinds, deadlinetable.WithShards(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := found(two); len(got) == 11 {
		t.Fatalf("all %d parked records are on two shards already: the test moves nothing", len(got))
	}
	moved, err := two.Reshard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := found(two)
	if len(got) != 11 || moved == 0 || moved > 11 {
		t.Fatalf("after the reshard %d parked records on the two shards (%d moved), want the 11 still parked", len(got), moved)
	}
	for _, s := range streams[1:] {
		if d, ok := got[s]; !ok || !d.Equal(due) {
			t.Errorf("%s: due %v, found %v; want it parked, due %v", s, d, ok, due)
		}
	}
	if _, ok := got[streams[0]]; ok {
		t.Errorf("the redelivered record is parked again")
	}
	if again, err := two.Reshard(ctx); err != nil || again != 0 {
		t.Errorf("a second reshard moved %d, %v; want none", again, err)
	}
}

// TestReshardKeepsATakenRowInItsLane: the return due takes the rental's
// process-stuck row over, and the overdue return takes it over from the return
// due; resharding moves the row to its shard under the new count among the overdue
// returns', where the listing finds it, and a rebuild's replay of the openings
// after it moves it back into no swept kind's rows.
func TestReshardKeepsATakenRowInItsLane(t *testing.T) {
	before, client, name := newTable(t, 16)
	rentalID := id("x")
	dueBack := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	approvedAt := dueBack.Add(-rental.DefaultPeriod)
	data, _ := json.Marshal(rental.ReturnOverdue{BikeID: "x", Renter: "r", RentalID: rentalID, ApprovedAt: approvedAt, DueAt: dueBack, FlaggedAt: dueBack.Add(time.Minute)})
	flagged := eventstore.Record{StreamID: rental.StreamID("x"), Version: 5, Event: eventstore.Event{ID: "flag", Type: "ReturnOverdue", Data: data, RecordedAt: dueBack.Add(time.Minute)}}
	openings := []eventstore.Record{requested(t, rentalID, approvedAt.Add(-time.Minute)), approved(t, rentalID, approvedAt), flagged}
	applyTo(t, before, openings...)
	after := reshard(t, client, name, 1)
	// The openings again, the stuck one last, as a rebuild interrupted and run again.
	applyTo(t, after, openings[2], openings[1], openings[0])
	for _, k := range []string{deadlinekinds.Stuck, deadlinekinds.Return} {
		if _, ok, err := after.Row(ctx, kind(k), rentalID); err != nil || ok {
			t.Errorf("the %s row after resharding: %v, %v; want none: the overdue return took it over", k, ok, err)
		}
	}
	row, ok, err := after.Row(ctx, kind(deadlinekinds.Overdue), rentalID)
	if err != nil || !ok || !row.Due.Equal(dueBack) {
		t.Fatalf("the overdue return after resharding: %+v, %v, %v; want it due when the bike was", row, ok, err)
	}
	yes := true
	page, err := deadlines.List(ctx, after, serviceKinds, deadlines.Query{Kind: deadlinekinds.Return, Overdue: &yes, Now: dueBack.Add(time.Hour), Limit: 10})
	if err != nil || len(page.Rows) != 1 || page.Rows[0].Subject != rentalID || page.Rows[0].Kind != deadlinekinds.Return {
		t.Errorf("the overdue returns under one shard: %+v, %v; want the rental, listed as a return", page.Rows, err)
	}
}
