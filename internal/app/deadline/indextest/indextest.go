// Package indextest is the contract every deadline.Index keeps, as the sweep relies
// on it: run against the Deadlines table (deadlinetable, on the emulator) and
// against memindex.Memory, so that the sweep's unit tests on Memory mean what they
// say about the service.
package indextest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Subject is an index under test, with the projection that writes it and what
// parks stream records in it and settles them.
type Subject interface {
	deadline.Index
	owed.Rows
	parked.Rows
	// The payment-due and process-stuck kinds' rows as the service read them before
	// kinds: their listings in the shape of today's operator API.
	OverduePages(ctx context.Context, shard int, cutoff time.Time, fn func([]deadlinekinds.Pending) bool) (int, error)
	Get(ctx context.Context, reference string) (deadlinekinds.Pending, bool, error)
	OpenBefore(ctx context.Context, cutoff time.Time) ([]deadlinekinds.Open, int, error)
	OwedCancellations(ctx context.Context) ([]owed.Cancellation, int, error)
	Backlog(ctx context.Context, cutoff time.Time) (deadlinekinds.Backlog, int, error)
	Apply(ctx context.Context, r eventstore.Record) error
	Park(ctx context.Context, consumer string, r eventstore.Record, due time.Time) error
}

var ctx = context.Background()

// Run runs the contract, each case on a fresh index from newSubject.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s Subject)
	}{
		{"PreparedIsOutstandingUntilSettled", preparedIsOutstandingUntilSettled},
		{"ASettlementIsFinalWhateverTheOrder", aSettlementIsFinal},
		{"OverdueIsBeforeTheCutoffOldestFirstPerShard", overdueBeforeTheCutoff},
		{"AProcessIsOpenUntilItCompletes", aProcessIsOpenUntilItCompletes},
		{"ACancellationIsOwedUntilSettled", aCancellationIsOwedUntilSettled},
		{"AnOwedRowPutOffIsReadWithEveryOtherSoonestDueFirst", anOwedRowPutOffIsRead},
		{"ARefundOwedAfterTheRefundReportedMadeFailedIsOpenedAgain", aRefundOwedAfterItsRefundFailed},
		{"OtherRecordsChangeNothingCorruptOnesAreRefused", otherRecords},
		{"AParkedRecordIsKeptUntilUnparked", aParkedRecordIsKept},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newSubject(t)) })
	}
}

func id(bike string) string { return rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA") }

func paymentRecord(t *testing.T, rentalID string, version int64, e payment.Event, at time.Time) eventstore.Record {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	ref := payment.ReferenceFor(rentalID)
	return eventstore.Record{StreamID: payment.StreamID(ref), Version: version,
		Event: eventstore.Event{ID: fmt.Sprintf("%s-%d", ref, version), Type: e.EventType(), Data: data, RecordedAt: at}}
}

func prepared(t *testing.T, rentalID string, at time.Time) eventstore.Record {
	ref := payment.ReferenceFor(rentalID)
	return paymentRecord(t, rentalID, 1, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, at)
}

func settled(t *testing.T, rentalID string, version int64, at time.Time) eventstore.Record {
	return paymentRecord(t, rentalID, version, payment.PaymentCancelled{Reference: payment.ReferenceFor(rentalID)}, at)
}

func apply(t *testing.T, s Subject, recs ...eventstore.Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Apply(ctx, r); err != nil {
			t.Fatalf("apply %s %s: %v", r.StreamID, r.Type, err)
		}
	}
}

// overdue returns the rentals outstanding before cutoff, from every shard, and
// fails unless each shard's are oldest first.
func overdue(t *testing.T, s Subject, cutoff time.Time) []string {
	t.Helper()
	var out []string
	for shard := range s.Shards() {
		var last time.Time
		if _, err := s.OverduePages(ctx, shard, cutoff, func(page []deadlinekinds.Pending) bool {
			for _, p := range page {
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

func outstanding(t *testing.T, s Subject, rentalID string) bool {
	t.Helper()
	row, ok, err := s.Get(ctx, payment.ReferenceFor(rentalID))
	if err != nil {
		t.Fatal(err)
	}
	if ok && row.RentalID != rentalID {
		t.Errorf("Get of %s's payment answered rental %s", rentalID, row.RentalID)
	}
	return ok
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func preparedIsOutstandingUntilSettled(t *testing.T, s Subject) {
	a := id("a")
	apply(t, s, prepared(t, a, t0))
	if !outstanding(t, s, a) || !slices.Equal(overdue(t, s, t0.Add(time.Millisecond)), []string{a}) {
		t.Fatalf("a prepared payment is not outstanding: Get %v, overdue %v", outstanding(t, s, a), overdue(t, s, t0.Add(time.Millisecond)))
	}
	if got := overdue(t, s, t0); len(got) != 0 {
		t.Errorf("overdue at its preparation time exactly: %v, want none (the cutoff is exclusive)", got)
	}
	row, _, _ := s.Get(ctx, payment.ReferenceFor(a))
	if !row.PreparedAt.Equal(t0) {
		t.Errorf("prepared at %v, want %v", row.PreparedAt, t0)
	}
	apply(t, s, prepared(t, a, t0.Add(time.Hour))) // a replay, later
	if row, _, _ := s.Get(ctx, payment.ReferenceFor(a)); !row.PreparedAt.Equal(t0) {
		t.Errorf("a replayed preparation moved the payment to %v", row.PreparedAt)
	}
	apply(t, s, settled(t, a, 2, t0.Add(time.Minute)))
	if outstanding(t, s, a) || len(overdue(t, s, time.Time{})) != 0 {
		t.Error("a settled payment is still outstanding")
	}
}

func aSettlementIsFinal(t *testing.T, s Subject) {
	a, b := id("a"), id("b")
	// A settlement that arrives before its preparation still wins.
	apply(t, s, settled(t, a, 2, t0.Add(time.Minute)), prepared(t, a, t0))
	// A replayed preparation after a settlement changes nothing either.
	apply(t, s, prepared(t, b, t0), settled(t, b, 2, t0.Add(time.Minute)), prepared(t, b, t0))
	for _, r := range []string{a, b} {
		if outstanding(t, s, r) {
			t.Errorf("%s is outstanding after its settlement", r)
		}
	}
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("overdue %v, want none", got)
	}
}

func overdueBeforeTheCutoff(t *testing.T, s Subject) {
	var want []string
	for i := range 12 {
		r := id(fmt.Sprintf("b%02d", i))
		apply(t, s, prepared(t, r, t0.Add(time.Duration(i)*time.Minute)))
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

func processRecord(t *testing.T, rentalID string, completed bool, at time.Time) eventstore.Record {
	t.Helper()
	bike, _ := rental.BikeIDOf(rentalID)
	var typ string
	var data []byte
	if completed {
		typ = rentalpayment.TypeCompleted
		data, _ = json.Marshal(rentalpayment.RentalPaymentProcessCompleted{RentalID: rentalID, Outcome: rentalpayment.CompletedCancelled})
	} else {
		typ = (rental.BikeRequested{}).EventType()
		data, _ = json.Marshal(rental.BikeRequested{BikeID: bike, Renter: "r", RentalID: rentalID})
	}
	return eventstore.Record{StreamID: "s-" + rentalID, Version: 2, Event: eventstore.Event{ID: typ + rentalID, Type: typ, Data: data, RecordedAt: at}}
}

func openIDs(t *testing.T, s Subject, cutoff time.Time) []string {
	t.Helper()
	open, _, err := s.OpenBefore(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, o := range open {
		if i > 0 && o.RequestedAt.Before(open[i-1].RequestedAt) {
			t.Errorf("OpenBefore not oldest first: %+v", open)
		}
		out = append(out, o.RentalID)
	}
	return out
}

func aProcessIsOpenUntilItCompletes(t *testing.T, s Subject) {
	a, b, c := id("a"), id("b"), id("c")
	apply(t, s, processRecord(t, a, false, t0), processRecord(t, b, false, t0.Add(time.Minute)))
	apply(t, s, processRecord(t, c, true, t0.Add(3*time.Minute)), processRecord(t, c, false, t0.Add(2*time.Minute)))
	if got := openIDs(t, s, t0); len(got) != 0 {
		t.Errorf("open before the first request: %v", got)
	}
	if got := openIDs(t, s, t0.Add(time.Hour)); !slices.Equal(got, []string{a, b}) {
		t.Errorf("open: %v, want [%s %s]", got, a, b)
	}
	apply(t, s, processRecord(t, a, true, t0.Add(time.Minute)), processRecord(t, a, false, t0))
	if got := openIDs(t, s, t0.Add(time.Hour)); !slices.Equal(got, []string{b}) {
		t.Errorf("open after a's completion and a replayed request: %v, want [%s]", got, b)
	}
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("open processes listed as payments: %v", got)
	}
}

// owedRefs returns the rentals whose payment's cancellation is owed, oldest first.
func owedRefs(t *testing.T, s Subject) []string {
	t.Helper()
	rows, _, err := s.OwedCancellations(ctx)
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

func aCancellationIsOwedUntilSettled(t *testing.T, s Subject) {
	a, b, c, d := id("a"), id("b"), id("c"), id("d")
	owed := func(rentalID string, at time.Time) eventstore.Record {
		return paymentRecord(t, rentalID, 3, payment.CancellationOwedAtProvider{Reference: payment.ReferenceFor(rentalID), PaymentID: "p", Attempts: 3}, at)
	}
	done := func(rentalID string, at time.Time) eventstore.Record {
		return paymentRecord(t, rentalID, 4, payment.CancellationDoneAtProvider{Reference: payment.ReferenceFor(rentalID), PaymentID: "p"}, at)
	}
	late := func(rentalID string, at time.Time) eventstore.Record {
		return paymentRecord(t, rentalID, 4, payment.PaymentSucceededAfterCancellation{Reference: payment.ReferenceFor(rentalID), PaymentID: "p"}, at)
	}
	for _, r := range []string{a, b, c, d} {
		apply(t, s, prepared(t, r, t0), settled(t, r, 2, t0.Add(time.Minute)))
	}
	apply(t, s, owed(b, t0.Add(2*time.Minute)), owed(a, t0.Add(3*time.Minute)), owed(c, t0.Add(4*time.Minute)))
	apply(t, s, done(d, t0.Add(6*time.Minute)), owed(d, t0.Add(5*time.Minute))) // settled before it arrived
	if got := owedRefs(t, s); !slices.Equal(got, []string{b, a, c}) {
		t.Errorf("owed %v, want [%s %s %s], oldest first", got, b, a, c)
	}
	apply(t, s, done(b, t0.Add(7*time.Minute)), late(c, t0.Add(7*time.Minute)), owed(b, t0.Add(2*time.Minute)))
	if got := owedRefs(t, s); !slices.Equal(got, []string{a}) {
		t.Errorf("owed after b's was made and c succeeded meanwhile (and b's replayed): %v, want [%s]", got, a)
	}
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("owed cancellations listed as payments: %v", got)
	}
	if got := openIDs(t, s, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("owed cancellations listed as open processes: %v", got)
	}
	if err := s.Apply(ctx, eventstore.Record{StreamID: "payment-x", Version: 3, Event: eventstore.Event{ID: "5", Type: payment.CancellationOwedAtProvider{}.EventType(), Data: []byte(`[`), RecordedAt: t0}}); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Errorf("a corrupt CancellationOwedAtProvider: %v, want ErrCorruptRecord", err)
	}
}

func otherRecords(t *testing.T, s Subject) {
	data, _ := json.Marshal(payment.PaymentPrepared{Reference: "not-a-rental", PaymentID: "p"})
	apply(t, s,
		eventstore.Record{StreamID: "bike-x", Version: 1, Event: eventstore.Event{ID: "1", Type: rental.BikeRegistered{}.EventType(), Data: []byte(`{"bikeId":"x"}`), RecordedAt: t0}},
		eventstore.Record{StreamID: "payment-not-a-rental", Version: 1, Event: eventstore.Event{ID: "2", Type: payment.PaymentPrepared{}.EventType(), Data: data, RecordedAt: t0}})
	if got := overdue(t, s, time.Time{}); len(got) != 0 {
		t.Errorf("overdue %v after records that are not a rental's payment", got)
	}
	for _, r := range []eventstore.Record{
		{StreamID: "payment-x", Version: 1, Event: eventstore.Event{ID: "3", Type: payment.PaymentPrepared{}.EventType(), Data: []byte(`{`), RecordedAt: t0}},
		{StreamID: "bike-x", Version: 2, Event: eventstore.Event{ID: "4", Type: rental.BikeRequested{}.EventType(), Data: []byte(`{"rentalId":""}`), RecordedAt: t0}},
	} {
		if err := s.Apply(ctx, r); !errors.Is(err, eventstore.ErrCorruptRecord) {
			t.Errorf("%s %s: %v, want ErrCorruptRecord", r.Type, r.Data, err)
		}
	}
}

// aParkedRecordIsKept: a parked record is in the backlog, with the due time it was
// first parked with, until it is unparked; postponed, it is due later; parked anew
// after its redelivery, it is back. It is never an open process, an owed
// cancellation or an outstanding payment.
func aParkedRecordIsKept(t *testing.T, s Subject) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := eventstore.Record{StreamID: payment.StreamID(payment.ReferenceFor(id("pk"))), Version: 3,
		Event: eventstore.Event{ID: "pk-3", Type: payment.PaymentConfirmed{}.EventType(), Data: []byte(`{}`), RecordedAt: at}}
	parkedNow := func() []parked.Record {
		t.Helper()
		b, _, err := s.Backlog(ctx, at.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Open) != 0 || len(b.Owed) != 0 {
			t.Errorf("a parked record read as an open process or an owed cancellation: %+v", b)
		}
		return b.Parked
	}
	for _, due := range []time.Time{at, at.Add(time.Minute)} {
		if err := s.Park(ctx, "process", r, due); err != nil {
			t.Fatal(err)
		}
	}
	want := parked.Record{Consumer: "process", StreamID: r.StreamID, Version: 3, Due: at}
	if got := parkedNow(); len(got) != 1 || got[0] != want {
		t.Fatalf("parked %+v, want [%+v]", got, want)
	}
	if _, ok, err := s.Get(ctx, payment.ReferenceFor(id("pk"))); err != nil || ok {
		t.Errorf("a parked record read as an outstanding payment: %v, %v", ok, err)
	}
	later := at.Add(5 * time.Minute)
	if err := s.Postpone(ctx, want, later); err != nil {
		t.Fatal(err)
	}
	if got := parkedNow(); len(got) != 1 || !got[0].Due.Equal(later) {
		t.Fatalf("postponed: %+v, want due at %s", got, later)
	}
	if err := s.Unpark(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got := parkedNow(); len(got) != 0 {
		t.Fatalf("unparked: %+v, want none", got)
	}
	if err := s.Park(ctx, "process", r, later); err != nil {
		t.Fatal(err)
	}
	if got := parkedNow(); len(got) != 1 || !got[0].Due.Equal(later) {
		t.Fatalf("parked anew: %+v, want due at %s", got, later)
	}
}

// anOwedRowPutOffIsRead: the owed lane's pages hold every owed cancellation, due
// or put off by an unanswered retry (owed.Backoff after it), soonest due first, at
// most the page asked for at a time; a retry recorded late does not bring the due
// time back.
func anOwedRowPutOffIsRead(t *testing.T, s Subject) {
	a, b, c := id("a"), id("b"), id("c")
	ref := payment.ReferenceFor
	for i, r := range []string{a, b, c} {
		apply(t, s, paymentRecord(t, r, 3, payment.CancellationOwedAtProvider{Reference: ref(r), PaymentID: "p", Attempts: 3}, t0.Add(time.Duration(i)*time.Minute)))
	}
	apply(t, s, paymentRecord(t, a, 4, payment.CancellationStillOwed{Reference: ref(a), PaymentID: "p", Tries: 3}, t0.Add(10*time.Minute)),
		paymentRecord(t, a, 4, payment.CancellationStillOwed{Reference: ref(a), PaymentID: "p", Tries: 1}, t0.Add(5*time.Minute)))
	var rows []owed.Cancellation
	for shard := range s.Shards() {
		pages := 0
		if _, err := s.OwedPages(ctx, shard, 1, func(page []owed.Cancellation) bool {
			pages++
			if len(page) > 1 {
				t.Errorf("shard %d: a page of %d rows, asked for 1", shard, len(page))
			}
			rows = append(rows, page...)
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(rows, func(x, y owed.Cancellation) int { return x.Due.Compare(y.Due) })
	wantDue := t0.Add(10 * time.Minute).Add(owed.Backoff(3))
	if len(rows) != 3 || rows[0].RentalID != b || rows[1].RentalID != c || rows[2].RentalID != a || !rows[2].Due.Equal(wantDue) {
		t.Fatalf("owed rows %+v: want %s, %s due at once and %s put off until %s", rows, b, c, a, wantDue)
	}
	// Listed, a row put off still says when its cancellation became owed.
	listed, _, err := s.OwedCancellations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{a: t0, b: t0.Add(time.Minute), c: t0.Add(2 * time.Minute)}
	if len(listed) != 3 {
		t.Fatalf("listed %+v, want the three owed", listed)
	}
	for _, o := range listed {
		if !o.OwedAt.Equal(want[o.RentalID]) || (o.RentalID == a) != !o.Due.Equal(o.OwedAt) {
			t.Errorf("%s listed owed at %v, due %v; want owed at %v", o.RentalID, o.OwedAt, o.Due, want[o.RentalID])
		}
	}
}

// aRefundOwedAfterItsRefundFailed: the refund kind's records are all in the
// payment's stream. The provider reports a refund made (PaymentRefunded) when it
// creates it; when that refund fails afterwards, the RefundOwed that follows opens
// the row again, however often either is delivered again; a replayed RefundOwed
// older than a settlement never does.
func aRefundOwedAfterItsRefundFailed(t *testing.T, s Subject) {
	a, b := id("refunda"), id("refundb")
	kind := deadlinekinds.RefundKind()
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
		_, ok, err := s.Row(ctx, kind, r)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	apply(t, s, refunded(a, 5), failed(a, 6), refunded(a, 5), failed(a, 6))
	if !owedRow(a) {
		t.Fatalf("a refund owed after the refund the provider reported made failed: no row")
	}
	apply(t, s, byHand(a, 7), failed(a, 6), refunded(a, 5))
	if owedRow(a) {
		t.Errorf("the refund made by hand, then older records delivered again: the row is back")
	}
	// A RefundOwed older than the settlement, delivered after it: no row.
	apply(t, s, refunded(b, 6), failed(b, 5))
	if owedRow(b) {
		t.Errorf("a RefundOwed older than its settlement opened the row")
	}
}
