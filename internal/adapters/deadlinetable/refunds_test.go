package deadlinetable_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func refundRecord(t *testing.T, ref string, version int64, e payment.Event, at time.Time) eventstore.Record {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.Record{StreamID: payment.StreamID(ref), Version: version,
		Event: eventstore.Event{ID: ref + "-" + e.EventType(), Type: e.EventType(), Data: data, RecordedAt: at}}
}

// refundsOwed lists the refund kind's rows, as GET /refunds/owed reads them.
func refundsOwed(t *testing.T, p *deadlinetable.Projection, now time.Time) []deadline.Row {
	t.Helper()
	rows, err := p.Deadlines(context.Background(), deadline.Query{Kind: deadlinekinds.Refund, Now: now, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRefundsOwedAreListedUntilRefunded: a RefundOwed opens a row of the refund
// kind, due at once (overdue from then on), listed with the time it became owed,
// oldest first, under any shard count; its PaymentRefunded takes it off, for good (a
// replayed RefundOwed does not bring it back, nor does one whose refund's record
// came first); no query of the sweep or the pending list reads a refund's row, nor
// does the sweep's look at its lanes; and resharding keeps them listed.
func TestRefundsOwedAreListedUntilRefunded(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
	p, err := deadlinetable.New(client, table, 4, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var refs []string
	for i, bike := range []string{"a", "b", "c", "d", "e"} {
		ref := payment.ReferenceFor(rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA"))
		refs = append(refs, ref)
		owed := refundRecord(t, ref, 5, payment.RefundOwed{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at.Add(time.Duration(-i)*time.Minute))
		for range 2 { // delivered twice
			if err := p.Apply(ctx, owed); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := at.Add(time.Hour)
	got := refundsOwed(t, p, now)
	if len(got) != len(refs) {
		t.Fatalf("refunds owed %+v, want %d", got, len(refs))
	}
	for i, o := range got { // oldest first: the last bike's
		want, _ := payment.RentalIDFor(refs[len(refs)-1-i])
		owed := at.Add(time.Duration(-(len(refs) - 1 - i)) * time.Minute)
		if o.Kind != deadlinekinds.Refund || o.Subject != want || !o.Since.Equal(owed) || !o.Due.Equal(owed) {
			t.Errorf("refund %d = %+v, want %s owed and due at %s", i, o, want, owed)
		}
	}
	// Refunded: off the list; a replayed RefundOwed does not bring it back.
	refunded := refundRecord(t, refs[0], 6, payment.PaymentRefunded{Reference: refs[0], PaymentID: "pay_1"}, at.Add(time.Hour))
	if err := p.Apply(ctx, refunded); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx, refundRecord(t, refs[0], 5, payment.RefundOwed{Reference: refs[0], PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at)); err != nil {
		t.Fatal(err)
	}
	// A refund whose PaymentRefunded is projected before its RefundOwed is never listed.
	late := payment.ReferenceFor(rental.NewRentalID("z", "AAAAAAAAAAAAAAAAAAAAAA"))
	for _, r := range []eventstore.Record{
		refundRecord(t, late, 6, payment.PaymentRefunded{Reference: late, PaymentID: "pay_2"}, at),
		refundRecord(t, late, 5, payment.RefundOwed{Reference: late, PaymentID: "pay_2", Amount: 1500, Currency: "EUR"}, at),
	} {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got = refundsOwed(t, p, now); len(got) != len(refs)-1 {
		t.Fatalf("after one refund: %+v; want %d", got, len(refs)-1)
	}
	for _, o := range got {
		if ref := payment.ReferenceFor(o.Subject); ref == refs[0] || ref == late {
			t.Errorf("%s is listed, refunded", ref)
		}
	}
	overdue := true
	if rows, err := p.Deadlines(ctx, deadline.Query{Kind: deadlinekinds.Refund, Overdue: &overdue, Now: now, Limit: 100}); err != nil || len(rows) != len(refs)-1 {
		t.Errorf("overdue refunds %+v, %v; want every one owed, due at once", rows, err)
	}
	// Nothing the sweep or the pending list reads holds a refund.
	far := at.Add(24 * time.Hour)
	if b, _, err := p.Backlog(ctx, far); err != nil || len(b.Open)+len(b.Owed)+len(b.Parked) != 0 {
		t.Errorf("the sweep's backlog reads refunds: %+v, %v", b, err)
	}
	if rows, err := p.List(ctx, 100); err != nil || len(rows) != 0 {
		t.Errorf("the pending list reads refunds: %+v, %v", rows, err)
	}
	if rows, err := p.Overdue(ctx, far, 100); err != nil || len(rows) != 0 {
		t.Errorf("the overdue payments hold refunds: %+v, %v", rows, err)
	}
	for _, lane := range p.Kinds().Swept().Lanes() {
		for s := range p.Shards() {
			if _, err := p.LanePages(ctx, lane, s, far, func(page []deadline.Row) bool {
				if len(page) != 0 {
					t.Errorf("lane %q shard %d holds %+v", lane.Prefix, s, page)
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Resharding keeps them listed.
	one, err := deadlinetable.New(client, table, 1, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs[1:] {
		if err := one.Reshard(ctx, refundRecord(t, ref, 5, payment.RefundOwed{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at.Add(time.Duration(-i-1)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if got := refundsOwed(t, one, now); len(got) != len(refs)-1 {
		t.Errorf("under 1 shard: %+v; want %d", got, len(refs)-1)
	}
}

// TestARefundMadeByHandSettlesItsRow: RefundMadeByHand takes a refund owed off the
// list, for good, as the provider's PaymentRefunded does; delivered twice, or
// before its RefundOwed, it leaves nothing listed.
func TestARefundMadeByHandSettlesItsRow(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
	p, err := deadlinetable.New(client, table, 4, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	owed := func(ref string) eventstore.Record {
		return refundRecord(t, ref, 5, payment.RefundOwed{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at)
	}
	byHand := func(ref string) eventstore.Record {
		return refundRecord(t, ref, 6, payment.RefundMadeByHand{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"}, at.Add(time.Minute))
	}
	first, second := payment.ReferenceFor(rental.NewRentalID("a", "AAAAAAAAAAAAAAAAAAAAAA")), payment.ReferenceFor(rental.NewRentalID("b", "AAAAAAAAAAAAAAAAAAAAAA"))
	for _, r := range []eventstore.Record{owed(first), owed(second)} {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := refundsOwed(t, p, at.Add(time.Hour)); len(got) != 2 {
		t.Fatalf("owed: %+v", got)
	}
	// The first made by hand, delivered twice, then its RefundOwed replayed; the
	// second's RefundMadeByHand projected before its RefundOwed is (in another order).
	third := payment.ReferenceFor(rental.NewRentalID("c", "AAAAAAAAAAAAAAAAAAAAAA"))
	for _, r := range []eventstore.Record{byHand(first), byHand(first), owed(first), byHand(third), owed(third)} {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got := refundsOwed(t, p, at.Add(time.Hour))
	secondID, _ := payment.RentalIDFor(second)
	if len(got) != 1 || got[0].Subject != secondID {
		t.Fatalf("after the refunds made by hand: %+v; want only %s", got, secondID)
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
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
	p, err := deadlinetable.New(client, table, 4, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	id := rental.NewRentalID("a", "AAAAAAAAAAAAAAAAAAAAAA")
	ref := payment.ReferenceFor(id)
	owedOn := func(paymentID string) payment.UnexpectedRefundOwed {
		return payment.UnexpectedRefundOwed{Reference: ref, PaymentID: paymentID, Amount: 700, Currency: "USD"}
	}
	madeOn := func(paymentID string) payment.UnexpectedRefundMadeByHand {
		return payment.UnexpectedRefundMadeByHand{Reference: ref, PaymentID: paymentID, Amount: 700, Currency: "USD", OperatorReference: "bank-2", RecordedBy: "ann"}
	}
	stream := []eventstore.Record{
		refundRecord(t, ref, 4, payment.RefundOwed{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at),
		refundRecord(t, ref, 5, owedOn("pi_other"), at.Add(time.Minute)),
		refundRecord(t, ref, 6, owedOn("pi_third"), at.Add(2*time.Minute)),
		refundRecord(t, ref, 7, madeOn("pi_other"), at.Add(3*time.Minute)),
		refundRecord(t, ref, 8, payment.RefundMadeByHand{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"}, at.Add(4*time.Minute)),
	}
	subjects := func(p *deadlinetable.Projection) []string {
		var out []string
		for _, r := range refundsOwed(t, p, at.Add(time.Hour)) {
			out = append(out, r.Subject)
		}
		return out
	}
	own, other, third := id, deadlinekinds.UnexpectedRefundSubject(id, "pi_other"), deadlinekinds.UnexpectedRefundSubject(id, "pi_third")
	if other == third || deadlinekinds.RefundRental(other) != id || other == own || deadlinekinds.RefundRental(own) != own {
		t.Fatalf("subjects %q, %q, %q", own, other, third)
	}
	apply := func(p *deadlinetable.Projection, recs ...eventstore.Record) {
		t.Helper()
		for _, r := range recs {
			if err := p.Apply(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(p, stream[:3]...)
	apply(p, stream[1]) // redelivered
	if got := subjects(p); !slices.Equal(got, []string{own, other, third}) {
		t.Fatalf("three refunds owed: %q", got)
	}
	apply(p, stream[3])
	if got := subjects(p); !slices.Equal(got, []string{own, third}) {
		t.Fatalf("the other payment's made by hand: %q", got)
	}
	apply(p, stream[4], stream[1], stream[0]) // the own one made by hand; openings replayed after
	if got := subjects(p); !slices.Equal(got, []string{third}) {
		t.Fatalf("the own one made by hand, openings replayed: %q", got)
	}
	// A rebuild replays the stream over the table, and into an empty one under
	// another shard count; the opening of a settled one projected after its
	// settlement (records of a stream out of order) opens nothing either.
	apply(p, stream...)
	empty, err := deadlinetable.New(client, emulatortest.CreateTable(t, client, schema.Deadlines, "pending"), 1, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	apply(empty, stream[3], stream[4])
	apply(empty, stream...)
	for name, q := range map[string]*deadlinetable.Projection{"over the table": p, "into an empty one": empty} {
		if got := subjects(q); !slices.Equal(got, []string{third}) {
			t.Errorf("a rebuild %s: %q", name, got)
		}
	}
}
