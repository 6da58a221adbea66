package deadline_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
)

func (w *world) row(ref string) map[string]types.AttributeValue {
	w.t.Helper()
	out, err := w.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(w.pending), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: ref}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Item
}

func (w *world) apply(recs ...eventstore.Record) {
	w.t.Helper()
	for _, r := range recs {
		if err := w.projection.Apply(ctx, r); err != nil {
			w.t.Fatalf("apply %s v%d: %v", r.Type, r.Version, err)
		}
	}
}

func TestEverySettlementRemovesTheRow(t *testing.T) {
	w := newWorld(t, 4)
	preparedAt := time.Date(2026, 11, 29, 10, 0, 0, 123_000_000, time.UTC)
	settledAt := preparedAt.Add(3 * time.Minute)
	for i, settle := range []func(ref string) payment.Event{
		func(ref string) payment.Event { return payment.PaymentConfirmed{Reference: ref, PaymentID: "p"} },
		func(ref string) payment.Event {
			return payment.PaymentRejected{Reference: ref, PaymentID: "p", Reason: "no"}
		},
		func(ref string) payment.Event { return payment.PaymentCancelled{Reference: ref, PaymentID: "p"} },
	} {
		rentalID := rental.NewRentalID(fmt.Sprint("b", i), "AAAAAAAAAAAAAAAAAAAAAA")
		ref := payment.ReferenceFor(rentalID)
		prepared := paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, preparedAt)
		w.apply(prepared)
		if !w.listed(rentalID) {
			t.Fatalf("%s: not listed after PaymentPrepared", ref)
		}
		row := w.row(ref)
		if at := row[schema.DeadlineDueAt].(*types.AttributeValueMemberN).Value; at != strconv.FormatInt(preparedAt.Add(deadline.DefaultTimeout).UnixMilli(), 10) {
			t.Errorf("due at %s, want the event's recorded time and the payment timeout %d", at, preparedAt.Add(deadline.DefaultTimeout).UnixMilli())
		}
		settled := paymenttest.Record(t, settle(ref), 2, settledAt)
		w.apply(settled)
		if w.listed(rentalID) {
			t.Errorf("%s: still listed after %s", ref, settled.Type)
		}
		marker := w.row(ref)
		if _, ok := marker[schema.DeadlineKindShard]; ok {
			t.Errorf("%s: the marker keeps its index key", ref)
		}
		exp := marker[schema.DeadlineExpiresAt].(*types.AttributeValueMemberN).Value
		if want := strconv.FormatInt(settledAt.Add(deadlinetable.DefaultMarkerTTL).Unix(), 10); exp != want {
			t.Errorf("%s: marker expires at %s, want %s (settling time plus TTL)", ref, exp, want)
		}
		// A late, duplicated or replayed PaymentPrepared never brings it back, nor
		// does the settlement again.
		w.apply(prepared, prepared, settled)
		if w.listed(rentalID) {
			t.Errorf("%s: a replayed PaymentPrepared brought a settled payment back", ref)
		}
	}
	ttl, err := w.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(w.pending)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != schema.DeadlineExpiresAt {
		t.Errorf("TTL = %+v, %v; want enabled on %s", ttl.TimeToLiveDescription, err, schema.DeadlineExpiresAt)
	}
}

func TestSettlementBeforePreparationStillWins(t *testing.T) {
	w := newWorld(t, 2)
	rentalID := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")
	ref := payment.ReferenceFor(rentalID)
	now := time.Now()
	w.apply(paymenttest.Record(t, payment.PaymentCancelled{Reference: ref}, 2, now))
	w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, now.Add(-time.Minute)))
	if w.listed(rentalID) {
		t.Error("a PaymentPrepared applied after its settlement listed the payment")
	}
	// An older settlement than the one the marker holds changes nothing.
	w.apply(paymenttest.Record(t, payment.PaymentConfirmed{Reference: ref}, 1, now))
	if got := w.row(ref)[schema.DeadlineSettled].(*types.AttributeValueMemberS).Value; got != "cancelled" {
		t.Errorf("marker says %s, want cancelled", got)
	}
}

func TestRowsSpreadOverShardsAndListOldestFirst(t *testing.T) {
	w := newWorld(t, 4)
	base := time.Now().Add(-time.Hour)
	shards := map[string]bool{}
	for i := range 40 {
		rentalID := rental.NewRentalID(fmt.Sprint("bike", i), "AAAAAAAAAAAAAAAAAAAAAA")
		ref := payment.ReferenceFor(rentalID)
		w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, base.Add(time.Duration(40-i)*time.Second)))
		shards[w.row(ref)[schema.DeadlineKindShard].(*types.AttributeValueMemberS).Value] = true
	}
	if len(shards) != 4 {
		t.Errorf("40 rows used shards %v, want all 4", shards)
	}
	rows, err := w.projection.List(ctx, 10)
	if err != nil || len(rows) != 10 {
		t.Fatalf("List = %d rows, %v", len(rows), err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].PreparedAt.Before(rows[i-1].PreparedAt) {
			t.Fatalf("List is not oldest first: %v", rows)
		}
	}
	if rows[0].RentalID != rental.NewRentalID("bike39", "AAAAAAAAAAAAAAAAAAAAAA") {
		t.Errorf("oldest row = %+v, want bike39's", rows[0])
	}
}

func TestProjectionIgnoresOtherRecordsAndReportsCorruptOnes(t *testing.T) {
	w := newWorld(t, 1)
	w.apply(eventstore.Record{StreamID: "bike-b1", Version: 1, Event: eventstore.Event{ID: "1", Type: "BikeRegistered", Data: []byte(`{}`)}})
	w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: "not-a-rental", PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, time.Now()))
	if rows, _ := w.projection.List(ctx, 10); len(rows) != 0 {
		t.Errorf("rows %v, want none", rows)
	}
	bad := eventstore.Record{StreamID: "payment-x", Version: 1, Event: eventstore.Event{ID: "2", Type: "PaymentPrepared", Data: []byte(`{`)}}
	if err := w.projection.Apply(ctx, bad); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Errorf("corrupt record: err = %v", err)
	}
	if _, err := deadlinetable.New(w.client, w.pending, 0, time.Hour); err == nil {
		t.Error("zero shards accepted")
	}
}
