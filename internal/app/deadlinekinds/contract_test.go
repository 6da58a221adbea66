package deadlinekinds_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// The index contract of the service's kinds: what the sweep, the pending list and
// the operators' listings rely on of the payment due, the process stuck, the
// cancellations owed, the refunds owed and the parked records, run against the
// in-memory index (deadlines/memory) and the Deadlines table on moto
// (deadlines/dynamo), so that the sweep's unit tests on memory mean what they say
// about the service. What any kind's rows keep (the module's contract,
// deadlinestest) is the module's to prove.

func TestMemoryKeepsTheIndexContract(t *testing.T) {
	runIndexContract(t, func(*testing.T, deadlines.Kinds) deadlines.Projection { return memory.New(serviceKinds, 4) })
}

// TestTheTableKeepsTheIndexContract runs the index contract against the
// Deadlines table on the emulator, through the real SDK.
func TestTheTableKeepsTheIndexContract(t *testing.T) {
	runIndexContract(t, func(t *testing.T, kinds deadlines.Kinds) deadlines.Projection {
		client := emulatortest.DynamoDB(t)
		table, err := deadlinetable.New(client, newDeadlinesTable(t, client), kinds, deadlinetable.WithShards(4))
		if err != nil {
			t.Fatal(err)
		}
		return table
	})
}

// serviceKinds are the service's kinds as every writer declares them.
var serviceKinds = deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})

// listing reads s in the service's shapes.
func listing(s deadlines.Index) deadlinekinds.Listing {
	return deadlinekinds.Listing{Index: s, Kinds: serviceKinds}
}

func kind(name string) deadlines.Kind {
	k, ok := serviceKinds.ByName(name)
	if !ok {
		panic("no kind " + name)
	}
	return k
}

// runIndexContract runs the contract, each case on a fresh projection of the
// service's kinds from newSubject.
func runIndexContract(t *testing.T, newSubject func(t *testing.T, kinds deadlines.Kinds) deadlines.Projection) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s deadlines.Projection)
	}{
		{"PreparedIsOutstandingUntilSettled", preparedIsOutstandingUntilSettled},
		{"ASettlementIsFinalWhateverTheOrder", aSettlementIsFinal},
		{"OverdueIsBeforeTheCutoffOldestFirstPerShard", overdueBeforeTheCutoff},
		{"AProcessIsOpenUntilItCompletes", aProcessIsOpenUntilItCompletes},
		{"ACancellationIsOwedUntilSettled", aCancellationIsOwedUntilSettled},
		{"AnOwedRowLeftUnansweredKeepsItsDueTimeAndIsReadWithEveryOther", anOwedRowLeftUnanswered},
		{"ARefundOwedAfterTheRefundReportedMadeFailedIsOpenedAgain", aRefundOwedAfterItsRefundFailed},
		{"OtherRecordsChangeNothingCorruptOnesAreRefused", otherRecords},
		{"AParkedRecordIsKeptUntilRedelivered", aParkedRecordIsKept},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newSubject(t, serviceKinds)) })
	}
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// overdue returns the rentals whose payment was prepared before cutoff (every
// outstanding one for a zero cutoff), from every shard, and fails unless each
// shard's are oldest first.
func overdue(t *testing.T, s deadlines.Index, cutoff time.Time) []string {
	t.Helper()
	k := kind(deadlinekinds.Payment)
	span := deadlines.Span{Kind: k}
	if !cutoff.IsZero() {
		span.Before = deadlinekinds.Policy{}.Deadline(cutoff)
	}
	var out []string
	for shard := range s.Shards() {
		span.Shard = shard
		var last time.Time
		if _, err := s.Rows(ctx, span, func(page []deadlines.Row) bool {
			for _, r := range page {
				p := deadlinekinds.PendingOf(k, r)
				if p.PreparedAt.Before(last) {
					t.Errorf("shard %d: %s prepared %v after one prepared %v", shard, p.RentalID, p.PreparedAt, last)
				}
				last = p.PreparedAt
				out = append(out, p.RentalID)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// pending returns the outstanding payment of rentalID, read consistently.
func pending(t *testing.T, s deadlines.Index, rentalID string) (deadlinekinds.Pending, bool) {
	t.Helper()
	k := kind(deadlinekinds.Payment)
	row, ok, err := s.Row(ctx, k, rentalID)
	if err != nil {
		t.Fatal(err)
	}
	p := deadlinekinds.PendingOf(k, row)
	if ok && (p.RentalID != rentalID || p.Reference != payment.ReferenceFor(rentalID)) {
		t.Errorf("the row of %s's payment reads as %+v", rentalID, p)
	}
	return p, ok
}

func preparedIsOutstandingUntilSettled(t *testing.T, s deadlines.Projection) {
	a := id("a")
	applyTo(t, s, prepared(t, a, t0))
	if _, ok := pending(t, s, a); !ok || !slices.Equal(overdue(t, s, t0.Add(time.Millisecond)), []string{a}) {
		t.Fatalf("a prepared payment is not outstanding: %v, overdue %v", ok, overdue(t, s, t0.Add(time.Millisecond)))
	}
	if got := overdue(t, s, t0); len(got) != 0 {
		t.Errorf("overdue at its preparation time exactly: %v, want none (the cutoff is exclusive)", got)
	}
	if p, _ := pending(t, s, a); !p.PreparedAt.Equal(t0) {
		t.Errorf("prepared at %v, want %v", p.PreparedAt, t0)
	}
	applyTo(t, s, prepared(t, a, t0.Add(time.Hour))) // a replay, later
	if p, _ := pending(t, s, a); !p.PreparedAt.Equal(t0) {
		t.Errorf("a replayed preparation moved the payment to %v", p.PreparedAt)
	}
	applyTo(t, s, cancelled(t, a, 2, t0.Add(time.Minute)))
	if _, ok := pending(t, s, a); ok || len(overdue(t, s, time.Time{})) != 0 {
		t.Error("a settled payment is still outstanding")
	}
}

func aSettlementIsFinal(t *testing.T, s deadlines.Projection) {
	a, b := id("a"), id("b")
	// A settlement that arrives before its preparation still wins.
	applyTo(t, s, cancelled(t, a, 2, t0.Add(time.Minute)), prepared(t, a, t0))
	// A replayed preparation after a settlement changes nothing either.
	applyTo(t, s, prepared(t, b, t0), cancelled(t, b, 2, t0.Add(time.Minute)), prepared(t, b, t0))
	for _, r := range []string{a, b} {
		if _, ok := pending(t, s, r); ok {
			t.Errorf("%s is outstanding after its settlement", r)
		}
	}
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("overdue %v, want none", got)
	}
}

func overdueBeforeTheCutoff(t *testing.T, s deadlines.Projection) {
	var want []string
	for i := range 12 {
		r := id(fmt.Sprintf("b%02d", i))
		applyTo(t, s, prepared(t, r, t0.Add(time.Duration(i)*time.Minute)))
		if i < 5 {
			want = append(want, r)
		}
	}
	slices.Sort(want)
	if got := overdue(t, s, t0.Add(4*time.Minute+time.Millisecond)); !slices.Equal(got, want) {
		t.Errorf("overdue before 4m: %v, want %v", got, want)
	}
	if got := overdue(t, s, time.Time{}); len(got) != 12 {
		t.Errorf("with a zero cutoff: %d, want all 12", len(got))
	}
}

func processRecord(t *testing.T, rentalID string, done bool, at time.Time) eventstore.Record {
	t.Helper()
	if done {
		r := completed(rentalID, at)
		r.StreamID = "s-" + rentalID
		return r
	}
	r := requested(t, rentalID, at)
	r.StreamID = "s-" + rentalID
	return r
}

// openIDs returns the rentals whose process was open before cutoff, as the
// backlog lists them, failing unless they are oldest first.
func openIDs(t *testing.T, s deadlines.Index, cutoff time.Time) []string {
	t.Helper()
	b, _, err := listing(s).Backlog(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, o := range b.Open {
		if i > 0 && o.RequestedAt.Before(b.Open[i-1].RequestedAt) {
			t.Errorf("the open processes are not oldest first: %+v", b.Open)
		}
		out = append(out, o.RentalID)
	}
	return out
}

func aProcessIsOpenUntilItCompletes(t *testing.T, s deadlines.Projection) {
	a, b, c := id("a"), id("b"), id("c")
	applyTo(t, s, processRecord(t, a, false, t0), processRecord(t, b, false, t0.Add(time.Minute)))
	applyTo(t, s, processRecord(t, c, true, t0.Add(3*time.Minute)), processRecord(t, c, false, t0.Add(2*time.Minute)))
	if got := openIDs(t, s, t0); len(got) != 0 {
		t.Errorf("open before the first request: %v", got)
	}
	if got := openIDs(t, s, t0.Add(time.Hour)); !slices.Equal(got, []string{a, b}) {
		t.Errorf("open: %v, want [%s %s]", got, a, b)
	}
	applyTo(t, s, processRecord(t, a, true, t0.Add(time.Minute)), processRecord(t, a, false, t0))
	if got := openIDs(t, s, t0.Add(time.Hour)); !slices.Equal(got, []string{b}) {
		t.Errorf("open after a's completion and a replayed request: %v, want [%s]", got, b)
	}
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("open processes listed as payments: %v", got)
	}
}

// owedRentals returns the rentals whose payment's cancellation is owed, oldest
// first.
func owedRentals(t *testing.T, s deadlines.Index) []string {
	t.Helper()
	rows, _, err := listing(s).OwedCancellations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, r := range rows {
		if i > 0 && r.OwedAt.Before(rows[i-1].OwedAt) {
			t.Errorf("%s owed at %v listed after one owed at %v", r.RentalID, r.OwedAt, rows[i-1].OwedAt)
		}
		if r.Reference != payment.ReferenceFor(r.RentalID) {
			t.Errorf("owed row %+v names another rental than its payment's", r)
		}
		out = append(out, r.RentalID)
	}
	return out
}

func aCancellationIsOwedUntilSettled(t *testing.T, s deadlines.Projection) {
	a, b, c, d := id("a"), id("b"), id("c"), id("d")
	done := func(rentalID string, at time.Time) eventstore.Record {
		return paymentRecord(t, rentalID, 4, payment.CancellationDoneAtProvider{Reference: payment.ReferenceFor(rentalID), PaymentID: "p"}, at)
	}
	late := func(rentalID string, at time.Time) eventstore.Record {
		return paymentRecord(t, rentalID, 4, payment.PaymentSucceededAfterCancellation{Reference: payment.ReferenceFor(rentalID), PaymentID: "p"}, at)
	}
	for _, r := range []string{a, b, c, d} {
		applyTo(t, s, prepared(t, r, t0), cancelled(t, r, 2, t0.Add(time.Minute)))
	}
	applyTo(t, s, owedAt(t, b, t0.Add(2*time.Minute)), owedAt(t, a, t0.Add(3*time.Minute)), owedAt(t, c, t0.Add(4*time.Minute)))
	applyTo(t, s, done(d, t0.Add(6*time.Minute)), owedAt(t, d, t0.Add(5*time.Minute))) // settled before it arrived
	if got := owedRentals(t, s); !slices.Equal(got, []string{b, a, c}) {
		t.Errorf("owed %v, want [%s %s %s], oldest first", got, b, a, c)
	}
	applyTo(t, s, done(b, t0.Add(7*time.Minute)), late(c, t0.Add(7*time.Minute)), owedAt(t, b, t0.Add(2*time.Minute)))
	if got := owedRentals(t, s); !slices.Equal(got, []string{a}) {
		t.Errorf("owed after b's was made and c succeeded meanwhile (and b's replayed): %v, want [%s]", got, a)
	}
	// Owed again after the provider confirmed one: the row opens again, due then.
	e := id("e")
	again := paymentRecord(t, e, 5, payment.CancellationOwedAtProvider{Reference: payment.ReferenceFor(e), PaymentID: "p", Attempts: 3}, t0.Add(9*time.Minute))
	applyTo(t, s, owedAt(t, e, t0.Add(time.Minute)), done(e, t0.Add(8*time.Minute)), again, owedAt(t, e, t0.Add(time.Minute)))
	if got := owedRentals(t, s); !slices.Equal(got, []string{a, e}) {
		t.Errorf("owed after e's was owed again: %v, want [%s %s]", got, a, e)
	}
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("owed cancellations listed as payments: %v", got)
	}
	if got := openIDs(t, s, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("owed cancellations listed as open processes: %v", got)
	}
	bad := deadlines.Record{Stream: "payment-x", Position: 3, Type: payment.CancellationOwedAtProvider{}.EventType(), Data: []byte(`[`), At: t0}
	if err := s.Apply(ctx, bad); !errors.Is(err, deadlines.ErrCorruptRecord) {
		t.Errorf("a corrupt CancellationOwedAtProvider: %v, want ErrCorruptRecord", err)
	}
}

// anOwedRowLeftUnanswered: a retry the provider left unanswered
// (CancellationStillOwed) changes no row: the sweep backs off from the row's own
// due time, when the cancellation became owed. The owed rows are read soonest due
// first, a page of the size asked for at a time, and listed as owed since then.
func anOwedRowLeftUnanswered(t *testing.T, s deadlines.Projection) {
	a, b, c := id("a"), id("b"), id("c")
	for i, r := range []string{a, b, c} {
		applyTo(t, s, owedAt(t, r, t0.Add(time.Duration(i)*time.Minute)))
	}
	ref := payment.ReferenceFor(a)
	applyTo(t, s, paymentRecord(t, a, 4, payment.CancellationStillOwed{Reference: ref, PaymentID: "p", Tries: 3}, t0.Add(10*time.Minute)),
		paymentRecord(t, a, 5, payment.CancellationStillOwed{Reference: ref, PaymentID: "p", Tries: 4}, t0.Add(20*time.Minute)))
	var rows []deadlines.Row
	for shard := range s.Shards() {
		var last time.Time
		if _, err := s.Rows(ctx, deadlines.Span{Kind: kind(deadlinekinds.Cancellation), Shard: shard, Page: 1}, func(page []deadlines.Row) bool {
			if len(page) != 1 || page[0].Due.Before(last) {
				t.Errorf("shard %d: a page %+v after one due %v, asked for one row at a time, soonest due first", shard, page, last)
			}
			last = page[len(page)-1].Due
			rows = append(rows, page...)
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	deadlines.SortRows(rows)
	want := []deadlines.Row{
		{Kind: deadlinekinds.Cancellation, Subject: ref, Due: t0},
		{Kind: deadlinekinds.Cancellation, Subject: payment.ReferenceFor(b), Due: t0.Add(time.Minute)},
		{Kind: deadlinekinds.Cancellation, Subject: payment.ReferenceFor(c), Due: t0.Add(2 * time.Minute)},
	}
	if !slices.EqualFunc(rows, want, func(x, y deadlines.Row) bool { return x.Kind == y.Kind && x.Subject == y.Subject && x.Due.Equal(y.Due) }) {
		t.Errorf("owed rows %+v, want %+v: each due when its cancellation became owed", rows, want)
	}
	if got := owedRentals(t, s); !slices.Equal(got, []string{a, b, c}) {
		t.Errorf("owed %v, want [%s %s %s]", got, a, b, c)
	}
}

// aRefundOwedAfterItsRefundFailed: the refund kind's records are all in the
// payment's stream. The provider reports a refund made (PaymentRefunded) when it
// creates it; when that refund fails afterwards, the RefundOwed that follows opens
// the row again, however often either is delivered again; a replayed RefundOwed
// older than a settlement never does.
func aRefundOwedAfterItsRefundFailed(t *testing.T, s deadlines.Projection) {
	a, b := id("refunda"), id("refundb")
	refunded := func(r string, v int64) eventstore.Record {
		return paymentRecord(t, r, v, payment.PaymentRefunded{Reference: payment.ReferenceFor(r), PaymentID: "p"}, t0.Add(time.Duration(v)*time.Minute))
	}
	failed := func(r string, v int64) eventstore.Record {
		return paymentRecord(t, r, v, payment.RefundOwed{Reference: payment.ReferenceFor(r), PaymentID: "p", Amount: 1, Currency: "EUR",
			Reason: "the bank refused", FailedRefundID: "re_1"}, t0.Add(time.Duration(v)*time.Minute))
	}
	byHand := func(r string, v int64) eventstore.Record {
		return paymentRecord(t, r, v, payment.RefundMadeByHand{Reference: payment.ReferenceFor(r), PaymentID: "p", Amount: 1, Currency: "EUR",
			OperatorReference: "bank-1", RecordedBy: "ann"}, t0.Add(time.Duration(v)*time.Minute))
	}
	owedRow := func(r string) bool {
		t.Helper()
		_, ok, err := s.Row(ctx, kind(deadlinekinds.Refund), r)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	applyTo(t, s, refunded(a, 5), failed(a, 6), refunded(a, 5), failed(a, 6))
	if !owedRow(a) {
		t.Fatalf("a refund owed after the refund the provider reported made failed: no row")
	}
	applyTo(t, s, byHand(a, 7), failed(a, 6), refunded(a, 5))
	if owedRow(a) {
		t.Errorf("the refund made by hand, then older records delivered again: the row is back")
	}
	// A RefundOwed older than the settlement, delivered after it: no row.
	applyTo(t, s, refunded(b, 6), failed(b, 5))
	if owedRow(b) {
		t.Errorf("a RefundOwed older than its settlement opened the row")
	}
}

func otherRecords(t *testing.T, s deadlines.Projection) {
	data, _ := json.Marshal(payment.PaymentPrepared{Reference: "not-a-rental", PaymentID: "p"})
	applyTo(t, s,
		eventstore.Record{StreamID: "bike-x", Version: 1, Event: eventstore.Event{ID: "1", Type: rental.BikeRegistered{}.EventType(), Data: []byte(`{"bikeId":"x"}`), RecordedAt: t0}},
		eventstore.Record{StreamID: "payment-not-a-rental", Version: 1, Event: eventstore.Event{ID: "2", Type: payment.PaymentPrepared{}.EventType(), Data: data, RecordedAt: t0}})
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("overdue %v after records that are not a rental's payment", got)
	}
	for _, r := range []deadlines.Record{
		{Stream: "payment-x", Position: 1, Type: payment.PaymentPrepared{}.EventType(), Data: []byte(`{`), At: t0},
		{Stream: "bike-x", Position: 2, Type: rental.BikeRequested{}.EventType(), Data: []byte(`{"rentalId":""}`), At: t0},
		{Stream: "rentalpayment-x", Position: 2, Type: rentalpayment.TypeCompleted, Data: []byte(`{"rentalId":"a b"}`), At: t0},
		{Stream: parked.StreamOf("process", "bike-x"), Position: 1, Type: parked.StreamRecordParked{}.EventType(), Data: []byte(`{"consumer":"auditor","streamId":"bike-x","version":2}`), At: t0},
	} {
		if err := s.Apply(ctx, r); !errors.Is(err, deadlines.ErrCorruptRecord) {
			t.Errorf("%s %s: %v, want ErrCorruptRecord", r.Type, r.Data, err)
		}
	}
}

// parkingRecord is a record of consumer's parking stream of stream at position:
// the record of stream at version parked, or redelivered.
func parkingRecord(t *testing.T, consumer, stream string, position, version int64, redelivered bool, at time.Time) eventstore.Record {
	t.Helper()
	var e interface{ EventType() string } = parked.StreamRecordParked{Consumer: consumer, StreamID: stream, Version: version}
	if redelivered {
		e = parked.StreamRecordRedelivered{Consumer: consumer, StreamID: stream, Version: version}
	}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.Record{StreamID: parked.StreamOf(consumer, stream), Version: position,
		Event: eventstore.Event{ID: fmt.Sprintf("%s-%d", stream, position), Type: e.EventType(), Data: data, RecordedAt: at}}
}

// aParkedRecordIsKept: a parked record is in the backlog, due since it was parked,
// until it is redelivered, however often its parking is delivered again; parked
// anew after its redelivery, it is back. It is never an open process, an owed
// cancellation or an outstanding payment.
func aParkedRecordIsKept(t *testing.T, s deadlines.Projection) {
	stream := payment.StreamID(payment.ReferenceFor(id("pk")))
	parkedNow := func() []parked.Record {
		t.Helper()
		b, _, err := listing(s).Backlog(ctx, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Open) != 0 || len(b.Owed) != 0 {
			t.Errorf("a parked record read as an open process or an owed cancellation: %+v", b)
		}
		return b.Parked
	}
	first := parkingRecord(t, "process", stream, 1, 3, false, t0)
	applyTo(t, s, first, first)
	want := parked.Record{Consumer: "process", StreamID: stream, Version: 3, Due: t0}
	if got := parkedNow(); len(got) != 1 || got[0] != want {
		t.Fatalf("parked %+v, want [%+v]", got, want)
	}
	if _, ok := pending(t, s, id("pk")); ok {
		t.Error("a parked record read as an outstanding payment")
	}
	applyTo(t, s, parkingRecord(t, "process", stream, 2, 3, true, t0.Add(time.Minute)), first)
	if got := parkedNow(); len(got) != 0 {
		t.Fatalf("redelivered, and its parking delivered again: %+v, want none", got)
	}
	later := t0.Add(5 * time.Minute)
	applyTo(t, s, parkingRecord(t, "process", stream, 3, 3, false, later))
	if got := parkedNow(); len(got) != 1 || !got[0].Due.Equal(later) {
		t.Fatalf("parked anew: %+v, want due at %s", got, later)
	}
}
