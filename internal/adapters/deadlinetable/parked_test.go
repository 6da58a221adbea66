package deadlinetable_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestAParkedRecordIsKeptUntilRedelivered: parking writes one row, which the
// sweep's look at the open partitions finds and no payment query reads; parking
// the same record again changes nothing; a postponed record is due later and
// counts its attempt; an unparked one leaves the index, and a record parked again
// after its redelivery is parked anew. An open partition with nothing parked reads
// nothing more than its open processes.
func TestAParkedRecordIsKeptUntilRedelivered(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
	p, err := deadlinetable.New(client, table, 2, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rentalID := rental.NewRentalID("a", "AAAAAAAAAAAAAAAAAAAAAA")
	data, _ := json.Marshal(rental.BikeRequested{BikeID: "a", Renter: "r", RentalID: rentalID})
	requested := eventstore.Record{StreamID: rental.StreamID("a"), Version: 2, Event: eventstore.Event{ID: "e1", Type: "BikeRequested", Data: data, RecordedAt: at}}
	if err := p.Apply(ctx, requested); err != nil {
		t.Fatal(err)
	}
	b, read, err := p.Backlog(ctx, at.Add(time.Hour))
	if err != nil || len(b.Open) != 1 || len(b.Parked) != 0 || read != 1 {
		t.Fatalf("backlog with nothing parked: %+v, %d read, %v; want the open process alone", b, read, err)
	}

	ref := payment.ReferenceFor(rentalID)
	settled := eventstore.Record{StreamID: payment.StreamID(ref), Version: 3, Event: eventstore.Event{ID: "e2", Type: "PaymentConfirmed", RecordedAt: at}}
	want := parked.Record{Consumer: eventfilter.Process, StreamID: settled.StreamID, Version: 3, Due: at}
	if err := p.Park(ctx, eventfilter.Process, settled, at); err != nil {
		t.Fatal(err)
	}
	if err := p.Park(ctx, eventfilter.Process, settled, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	parked := func() []parked.Record {
		t.Helper()
		b, _, err := p.Backlog(ctx, time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Open) != 0 || len(b.Owed) != 0 {
			t.Errorf("a parked record read as an open process or an owed cancellation: %+v", b)
		}
		return b.Parked
	}
	if got := parked(); len(got) != 1 || got[0] != want {
		t.Fatalf("parked %+v, want %+v, kept at its first due time", got, want)
	}
	if rows, err := p.List(ctx, 100); err != nil || len(rows) != 0 {
		t.Errorf("the payments' listing reads a parked record: %+v, %v", rows, err)
	}
	if owed, _, err := p.OwedCancellations(ctx); err != nil || len(owed) != 0 {
		t.Errorf("owed cancellations %+v, %v; want none", owed, err)
	}

	later := at.Add(5 * time.Minute)
	if err := p.Postpone(ctx, want, later); err != nil {
		t.Fatal(err)
	}
	if got := parked(); len(got) != 1 || !got[0].Due.Equal(later) {
		t.Fatalf("after postponing: %+v, want due at %s", got, later)
	}
	item := getItem(t, client, table, deadlinetable.ParkedKey(eventfilter.Process, settled.StreamID, 3))
	if n, ok := item[schema.DeadlineAttempts].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("attempts %v, want 1", item[schema.DeadlineAttempts])
	}

	if err := p.Unpark(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got := parked(); len(got) != 0 {
		t.Fatalf("after unparking: %+v, want none", got)
	}
	if err := p.Unpark(ctx, want); err != nil {
		t.Errorf("unparking twice: %v", err)
	}
	if err := p.Postpone(ctx, want, later); err != nil {
		t.Errorf("postponing a record no longer parked: %v", err)
	}
	if got := parked(); len(got) != 0 {
		t.Fatalf("a record no longer parked came back: %+v", got)
	}
	if err := p.Park(ctx, eventfilter.Process, settled, later); err != nil {
		t.Fatal(err)
	}
	if got := parked(); len(got) != 1 || !got[0].Due.Equal(later) {
		t.Fatalf("parked again after its redelivery: %+v, want due at %s", got, later)
	}
}

func TestParkRefusesWhatItCannotKey(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
	p, err := deadlinetable.New(client, table, 2, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		consumer string
		r        eventstore.Record
	}{
		"unknown consumer": {"auditor", eventstore.Record{StreamID: "bike-a", Version: 1}},
		"no stream":        {eventfilter.Process, eventstore.Record{Version: 1}},
		"no version":       {eventfilter.Process, eventstore.Record{StreamID: "bike-a"}},
	} {
		if err := p.Park(ctx, c.consumer, c.r, time.Now()); err == nil || !strings.Contains(err.Error(), "park") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
}

func getItem(t *testing.T, client *dynamodb.Client, table, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}
