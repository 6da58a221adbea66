package pendingtable_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/pendingtable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
)

type askedFor struct{ cancelled, repaired []string }

func (a *askedFor) CancelRentalPayment(_ context.Context, id string, _ command.Meta) (process.Outcome, error) {
	a.cancelled = append(a.cancelled, id)
	return process.OutcomeCancelled, nil
}

func (a *askedFor) RepairStuck(_ context.Context, id string) (bool, string, error) {
	a.repaired = append(a.repaired, id)
	return true, "test", nil
}

// TestRowsOfTodaysShapeAreReadSweptAndSettled writes the rows as the projection
// wrote them before kinds existed (an outstanding payment keyed by its reference,
// stamped with its preparation, on the shard of its reference; an open process
// keyed by its stream id, stamped with its request, on an "open-" shard of its
// rental; a settled payment's marker) and holds the machinery of kinds to them: the
// sweep finds each kind's overdue row and sends its command, and the settling
// events take them out of the index, while a replayed opening does not bring the
// settled marker back.
func TestRowsOfTodaysShapeAreReadSweptAndSettled(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.PendingPayments, "pending")
	p, err := pendingtable.New(client, table, 4, pendingtable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	prepared := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	pay, open, done := rental.NewRentalID("old-pay", "AAAAAAAAAAAAAAAAAAAAAA"), rental.NewRentalID("old-open", "AAAAAAAAAAAAAAAAAAAAAA"), rental.NewRentalID("old-done", "AAAAAAAAAAAAAAAAAAAAAA")
	ref := payment.ReferenceFor(pay)
	put(map[string]types.AttributeValue{schema.PendingReference: s(ref), schema.PendingRentalID: s(pay), schema.PendingPreparedAt: n(prepared.UnixMilli()),
		schema.PendingDueShard: s(p.ShardOf(ref)), schema.PendingVersion: n(1)})
	put(map[string]types.AttributeValue{schema.PendingReference: s(rentalpayment.StreamID(open)), schema.PendingRentalID: s(open),
		schema.PendingPreparedAt: n(prepared.UnixMilli()), schema.PendingDueShard: s(pendingtable.OpenShardPrefix + p.ShardOf(open))})
	put(map[string]types.AttributeValue{schema.PendingReference: s(payment.ReferenceFor(done)), schema.PendingRentalID: s(done),
		schema.PendingVersion: n(2), schema.PendingSettled: s("confirmed"), schema.PendingExpiresAt: n(prepared.Add(72 * time.Hour).Unix())})

	asked := &askedFor{}
	kinds := deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{Canceller: asked, Repairer: asked})
	sweep := &deadline.Sweeper{Index: p, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)}
	sum, err := sweep.Sweep(ctx, prepared.Add(time.Hour))
	if err != nil || sum.Found != 1 || sum.Cancelled != 1 || sum.Stuck != 1 || sum.StuckRepaired != 1 || sum.OldestOverdue != 45*time.Minute {
		t.Fatalf("sweep an hour on: %+v, %v; want the payment cancelled and the process repaired", sum, err)
	}
	if len(asked.cancelled) != 1 || asked.cancelled[0] != pay || len(asked.repaired) != 1 || asked.repaired[0] != open {
		t.Errorf("asked %+v, want %s cancelled and %s repaired", asked, pay, open)
	}
	if row, ok, err := p.Row(ctx, kinds.All()[0], pay); err != nil || !ok || !row.Since.Equal(prepared) || !row.Due.Equal(prepared.Add(deadline.DefaultTimeout)) {
		t.Errorf("the payment's row: %+v, %v, %v; want it prepared at %v", row, ok, err, prepared)
	}

	// The settling events take them out of the index; replayed openings bring
	// nothing back.
	completed, _ := json.Marshal(rentalpayment.RentalPaymentProcessCompleted{RentalID: open, Outcome: rentalpayment.CompletedCancelled})
	requested, _ := json.Marshal(rental.BikeRequested{BikeID: "old-done", Renter: "r", RentalID: done})
	for _, r := range []eventstore.Record{
		paymenttest.Record(t, payment.PaymentCancelled{Reference: ref}, 2, prepared.Add(time.Hour)),
		{StreamID: rentalpayment.StreamID(open), Version: 2, Event: eventstore.Event{ID: "c", Type: rentalpayment.TypeCompleted, Data: completed, RecordedAt: prepared.Add(time.Hour)}},
		paymenttest.Record(t, payment.PaymentPrepared{Reference: payment.ReferenceFor(done), PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, prepared),
		paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, prepared),
		{StreamID: rental.StreamID("old-done"), Version: 2, Event: eventstore.Event{ID: "q", Type: "BikeRequested", Data: requested, RecordedAt: prepared}},
	} {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	sum, err = sweep.Sweep(ctx, prepared.Add(2*time.Hour))
	if err != nil || sum.Found != 0 || sum.Stuck != 1 {
		t.Errorf("after settlement: %+v, %v; want nothing but the newly requested rental's process", sum, err)
	}
	if _, ok, err := p.Get(ctx, payment.ReferenceFor(done)); err != nil || ok {
		t.Errorf("a replayed PaymentPrepared reopened a settled payment of today's shape: %v, %v", ok, err)
	}
}

// TestReshardKeepsATakenRowInItsLane: resharding replays a row's opening records;
// the opening of a kind whose row another kind took over must not move the row
// back into its own lane, and the taker's moves it to its shard under the new count.
func TestReshardKeepsATakenRowInItsLane(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.PendingPayments, "pending")
	before, err := pendingtable.New(client, table, 16, pendingtable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	after, err := pendingtable.New(client, table, 1, pendingtable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	before, after = before.WithKinds(indextest.TestKinds), after.WithKinds(indextest.TestKinds)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(typ string, v int64) eventstore.Record {
		return eventstore.Record{StreamID: "things-x", Version: v, Event: eventstore.Event{ID: typ, Type: typ, Data: []byte("subject:x"), RecordedAt: at}}
	}
	for _, r := range []eventstore.Record{rec("Held", 1), rec("Handed", 2)} {
		if err := before.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(prefix string) []deadline.Row {
		t.Helper()
		var out []deadline.Row
		for _, l := range indextest.TestKinds.Lanes() {
			if l.Prefix != prefix {
				continue
			}
			if _, err := after.LanePages(ctx, l, 0, time.Time{}, func(p deadline.LanePage) bool { out = append(out, p.Rows...); return true }); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	// The hold's opening last, as after a rebuild interrupted and run again.
	for _, r := range []eventstore.Record{rec("Handed", 2), rec("Held", 1)} {
		if err := after.Reshard(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := rows("h-"); len(got) != 0 {
		t.Errorf("the holds' lane after resharding: %+v, want nothing: the hold was taken over", got)
	}
	if got := rows("t-"); len(got) != 1 || got[0].Kind != "handover" || got[0].Subject != "x" {
		t.Errorf("the loans' lane after resharding: %+v, want the handover on shard 0", got)
	}
}
