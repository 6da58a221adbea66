package pendingtable_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/pendingtable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
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

// TestRefundsOwedAreListedUntilRefunded: a RefundOwed adds the refund to the list,
// with the time it became owed, oldest first, under any shard count; its
// PaymentRefunded takes it off, for good (a replayed RefundOwed does not bring it
// back, nor does one whose refund's record came first); and no query of the sweep
// or the pending list reads a refund's row.
func TestRefundsOwedAreListedUntilRefunded(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.PendingPayments, "pending")
	p, err := pendingtable.New(client, table, 4, pendingtable.DefaultMarkerTTL)
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
	got, _, err := p.RefundsOwed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(refs) {
		t.Fatalf("refunds owed %+v, want %d", got, len(refs))
	}
	for i, o := range got { // oldest first: the last bike's
		want := refs[len(refs)-1-i]
		if o.Reference != want || !o.OwedSince.Equal(at.Add(time.Duration(-(len(refs)-1-i))*time.Minute)) {
			t.Errorf("refund %d = %+v, want %s", i, o, want)
		}
		if id, _ := payment.RentalIDFor(want); o.RentalID != id {
			t.Errorf("refund %s names rental %s, want %s", o.Reference, o.RentalID, id)
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
	if got, _, err = p.RefundsOwed(ctx); err != nil || len(got) != len(refs)-1 {
		t.Fatalf("after one refund: %+v, %v; want %d", got, err, len(refs)-1)
	}
	for _, o := range got {
		if o.Reference == refs[0] || o.Reference == late {
			t.Errorf("%s is listed, refunded", o.Reference)
		}
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
	// Resharding keeps them listed.
	one, err := pendingtable.New(client, table, 1, pendingtable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs[1:] {
		if err := one.Reshard(ctx, refundRecord(t, ref, 5, payment.RefundOwed{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, at.Add(time.Duration(-i-1)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, err := one.RefundsOwed(ctx); err != nil || len(got) != len(refs)-1 {
		t.Errorf("under 1 shard: %+v, %v; want %d", got, err, len(refs)-1)
	}
}
