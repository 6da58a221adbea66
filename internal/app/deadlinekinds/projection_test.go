package deadlinekinds_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
)

// The Deadlines table's attributes, as deployed (deadlines/dynamo): the tests read
// items as DynamoDB holds them.
const (
	attrKey       = "key"
	attrKindShard = "kindShard"
	attrDueAt     = "dueAtMs"
	attrSettled   = "settled"
	attrExpiresAt = "expiresAt"
)

// item reads the Deadlines table's item of key, consistently.
func (w *world) item(key string) map[string]types.AttributeValue {
	w.t.Helper()
	out, err := w.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(w.deadlines), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Item
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
		rentalID := id(fmt.Sprint("b", i))
		ref := payment.ReferenceFor(rentalID)
		prepared := paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, preparedAt)
		w.apply(prepared)
		if !w.listed(rentalID) {
			t.Fatalf("%s: not listed after PaymentPrepared", ref)
		}
		row := w.item(ref)
		if at := row[attrDueAt].(*types.AttributeValueMemberN).Value; at != strconv.FormatInt(preparedAt.Add(deadlinekinds.DefaultTimeout).UnixMilli(), 10) {
			t.Errorf("due at %s, want the event's recorded time and the payment timeout %d", at, preparedAt.Add(deadlinekinds.DefaultTimeout).UnixMilli())
		}
		settled := paymenttest.Record(t, settle(ref), 2, settledAt)
		w.apply(settled)
		if w.listed(rentalID) {
			t.Errorf("%s: still listed after %s", ref, settled.Type)
		}
		marker := w.item(ref)
		if _, ok := marker[attrKindShard]; ok {
			t.Errorf("%s: the marker keeps its index key", ref)
		}
		exp := marker[attrExpiresAt].(*types.AttributeValueMemberN).Value
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
	ttl, err := w.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(w.deadlines)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != attrExpiresAt {
		t.Errorf("TTL = %+v, %v; want enabled on %s", ttl.TimeToLiveDescription, err, attrExpiresAt)
	}
}

func TestSettlementBeforePreparationStillWins(t *testing.T) {
	w := newWorld(t, 2)
	rentalID := id("b1")
	ref := payment.ReferenceFor(rentalID)
	now := time.Now()
	w.apply(paymenttest.Record(t, payment.PaymentCancelled{Reference: ref}, 2, now))
	w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, now.Add(-time.Minute)))
	if w.listed(rentalID) {
		t.Error("a PaymentPrepared applied after its settlement listed the payment")
	}
	// An older settlement than the one the marker holds changes nothing.
	w.apply(paymenttest.Record(t, payment.PaymentConfirmed{Reference: ref}, 1, now))
	if got := w.item(ref)[attrSettled].(*types.AttributeValueMemberS).Value; got != "cancelled" {
		t.Errorf("marker says %s, want cancelled", got)
	}
}

func TestRowsSpreadOverShardsAndListOldestFirst(t *testing.T) {
	w := newWorld(t, 4)
	base := time.Now().Add(-time.Hour)
	shards := map[string]bool{}
	for i := range 40 {
		rentalID := id(fmt.Sprint("bike", i))
		ref := payment.ReferenceFor(rentalID)
		w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, base.Add(time.Duration(40-i)*time.Second)))
		shards[w.item(ref)[attrKindShard].(*types.AttributeValueMemberS).Value] = true
	}
	if len(shards) != 4 {
		t.Errorf("40 rows used shards %v, want all 4", shards)
	}
	rows, more, err := w.listing.Payments(ctx, false, time.Time{}, 10)
	if err != nil || len(rows) != 10 || !more {
		t.Fatalf("Payments = %d rows, more %v, %v; want 10 and more", len(rows), more, err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].PreparedAt.Before(rows[i-1].PreparedAt) {
			t.Fatalf("the payments are not oldest first: %v", rows)
		}
	}
	if rows[0].RentalID != id("bike39") {
		t.Errorf("oldest row = %+v, want bike39's", rows[0])
	}
}

func TestProjectionIgnoresOtherRecordsAndReportsCorruptOnes(t *testing.T) {
	w := newWorld(t, 1)
	w.apply(eventstore.Record{StreamID: "bike-b1", Version: 1, Event: eventstore.Event{ID: "1", Type: "BikeRegistered", Data: []byte(`{}`)}})
	w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: "not-a-rental", PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, time.Now()))
	if rows, _, _ := w.listing.Payments(ctx, false, time.Time{}, 10); len(rows) != 0 {
		t.Errorf("rows %v, want none", rows)
	}
	bad := deadlines.Record{Stream: "payment-x", Position: 1, Type: "PaymentPrepared", Data: []byte(`{`)}
	if err := w.table.Apply(ctx, bad); !errors.Is(err, deadlines.ErrCorruptRecord) {
		t.Errorf("corrupt record: err = %v", err)
	}
	if _, err := deadlinetable.New(w.client, w.deadlines, w.kinds, deadlinetable.WithShards(0)); err == nil {
		t.Error("zero shards accepted")
	}
}

// TestTheProjectorActsOnExactlyTheTypesItIsWokenFor ties the projector's stream
// filter to the kinds: they read every type it is woken for (refusing a corrupt
// one) and ignore every other, writing nothing.
func TestTheProjectorActsOnExactlyTheTypesItIsWokenFor(t *testing.T) {
	w := newWorld(t, 2)
	for _, typ := range eventfilter.EventTypes() {
		err := w.table.Apply(ctx, deadlines.Record{Stream: "s", Position: 1, Type: typ, Data: []byte(`not json`)})
		if eventfilter.Wakes(eventfilter.Projector, typ) {
			if !errors.Is(err, deadlines.ErrCorruptRecord) {
				t.Errorf("%s: the projector is woken for it but did not read it (%v)", typ, err)
			}
		} else if err != nil {
			t.Errorf("%s: the projector is not woken for it but acted on it: %v", typ, err)
		}
	}
	// Every item but the table's own, which records its shard count.
	out, err := w.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(w.deadlines), FilterExpression: aws.String("#k <> :config"),
		ExpressionAttributeNames: map[string]string{"#k": attrKey}, ExpressionAttributeValues: map[string]types.AttributeValue{":config": &types.AttributeValueMemberS{Value: "#config"}}})
	if err != nil || len(out.Items) != 0 {
		t.Errorf("records the projector ignores wrote %d rows (%v)", len(out.Items), err)
	}
}

// openIDsOf returns the rentals whose process was open before cutoff in w's table,
// as the backlog lists them.
func openIDsOf(t *testing.T, w *world, cutoff time.Time) []string {
	t.Helper()
	return openIDs(t, w.table, cutoff)
}

// TestAProcessIsOpenFromTheRequestUntilItsCompletion follows the open-process rows:
// a request opens one, stamped with its time; the completion closes it, whichever
// reaches the projector first; a replayed request never reopens it; and the rows
// never show up among the outstanding payments.
func TestAProcessIsOpenFromTheRequestUntilItsCompletion(t *testing.T) {
	w := newWorld(t, 4)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	a, b, c := id("ba"), id("bb"), id("bc")
	w.apply(requested(t, a, t0), requested(t, b, t0.Add(time.Minute)))
	// The completion of c arrives before its request (another stream, another shard).
	w.apply(completed(c, t0.Add(3*time.Minute)), requested(t, c, t0.Add(2*time.Minute)))

	if got := openIDsOf(t, w, t0); len(got) != 0 {
		t.Errorf("open before %v: %q, want none (the cutoff is exclusive)", t0, got)
	}
	if got := openIDsOf(t, w, t0.Add(time.Millisecond)); !slices.Equal(got, []string{a}) {
		t.Errorf("open just after the first request: %q, want [%s]", got, a)
	}
	if got := openIDsOf(t, w, time.Now()); !slices.Equal(got, []string{a, b}) {
		t.Errorf("open now: %q, want [%s %s], oldest first, and not %s, which completed", got, a, b, c)
	}
	backlog, _, err := w.listing.Backlog(ctx, time.Now())
	if err != nil || len(backlog.Open) == 0 || !backlog.Open[0].RequestedAt.Equal(t0) {
		t.Errorf("the first open process: %+v, %v; want it stamped %v", backlog.Open, err, t0)
	}

	w.apply(completed(a, t0.Add(20*time.Minute)), completed(a, t0.Add(20*time.Minute)), requested(t, a, t0))
	if got := openIDsOf(t, w, time.Now()); !slices.Equal(got, []string{b}) {
		t.Errorf("open after a's completion and a replayed request: %q, want [%s]", got, b)
	}
	if rows, _, err := w.listing.Payments(ctx, false, time.Time{}, 100); err != nil || len(rows) != 0 {
		t.Errorf("outstanding payments: %+v, %v; want none: open processes are not payments", rows, err)
	}
	if rows, _, err := w.listing.Payments(ctx, true, time.Now(), 100); err != nil || len(rows) != 0 {
		t.Errorf("overdue payments: %+v, %v; want none", rows, err)
	}
}

func TestACorruptRequestOrCompletionIsRefused(t *testing.T) {
	w := newWorld(t, 1)
	for _, r := range []deadlines.Record{
		{Stream: "bike-x", Position: 2, Type: "BikeRequested", Data: []byte(`{`)},
		{Stream: "bike-x", Position: 2, Type: "BikeRequested", Data: []byte(`{"rentalId":""}`)},
		{Stream: "rentalpayment-x", Position: 2, Type: rentalpayment.TypeCompleted, Data: []byte(`{"rentalId":"a b"}`)},
	} {
		if err := w.table.Apply(ctx, r); !errors.Is(err, deadlines.ErrCorruptRecord) {
			t.Errorf("%s %s: %v, want ErrCorruptRecord", r.Type, r.Data, err)
		}
	}
	if got := openIDsOf(t, w, time.Now()); len(got) != 0 {
		t.Errorf("open %q after refused records, want none", got)
	}
}

// countingClient counts the items DynamoDB reads for the table's queries.
type countingClient struct {
	*dynamodb.Client
	read atomic.Int64
}

func (c *countingClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, optFns...)
	if err == nil {
		c.read.Add(int64(out.ScannedCount))
	}
	return out, err
}

func TestOverdueListsOnlyRowsBeforeTheCutoffOldestFirst(t *testing.T) {
	w := newWorld(t, 4)
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var ids []string
	// Prepared newest first, so that the order of writes tells nothing.
	for i := 19; i >= 0; i-- {
		rentalID := id(fmt.Sprint("ob", i))
		ids = append([]string{rentalID}, ids...)
		w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: payment.ReferenceFor(rentalID), PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, base.Add(time.Duration(i)*time.Second)))
	}
	w.apply(paymenttest.Record(t, payment.PaymentCancelled{Reference: payment.ReferenceFor(ids[3]), PaymentID: "p"}, 2, base.Add(time.Minute)))

	counting := &countingClient{Client: w.client}
	table, err := deadlinetable.New(counting, w.deadlines, w.kinds, deadlinetable.WithShards(4))
	if err != nil {
		t.Fatal(err)
	}
	l := deadlinekinds.Listing{Index: table, Kinds: w.kinds}
	// Rows 0 to 9 were prepared before the cutoff; row 10 at it, which is not before.
	cutoff := base.Add(10 * time.Second)
	want := []string{ids[0], ids[1], ids[2], ids[4], ids[5], ids[6], ids[7], ids[8], ids[9]}
	policy := deadlinekinds.Policy{}
	for _, c := range []struct {
		name     string
		cutoff   time.Time
		limit    int
		want     []string
		maxReads int64
	}{
		{name: "all overdue", cutoff: cutoff, limit: 100, want: want, maxReads: int64(len(want))},
		{name: "the oldest few", cutoff: cutoff, limit: 4, want: want[:4], maxReads: 4 * 4},
		{name: "exactly as many as overdue", cutoff: cutoff, limit: len(want), want: want, maxReads: int64(len(want))},
		{name: "nothing overdue", cutoff: base, limit: 10, want: nil, maxReads: 0},
		{name: "everything outstanding", cutoff: base.Add(time.Hour), limit: 1000, want: append(ids[:3:3], ids[4:]...), maxReads: 19},
	} {
		t.Run(c.name, func(t *testing.T) {
			counting.read.Store(0)
			rows, _, err := l.Payments(ctx, true, policy.Deadline(c.cutoff), c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, r := range rows {
				got = append(got, r.RentalID)
				if r.Reference != payment.ReferenceFor(r.RentalID) || !r.PreparedAt.Before(c.cutoff) {
					t.Errorf("row %+v: wrong reference, or not prepared before the cutoff %s", r, c.cutoff)
				}
				if i > 0 && r.PreparedAt.Before(rows[i-1].PreparedAt) {
					t.Errorf("rows are not oldest first: %v", rows)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("overdue = %q, want %q", got, c.want)
			}
			// Through the index with the cutoff in the key condition: never more than
			// the overdue rows, and never more than the limit per shard.
			if n := counting.read.Load(); n > c.maxReads {
				t.Errorf("read %d items, want at most %d", n, c.maxReads)
			}
		})
	}
}

func TestOverdueRefusesBadArgumentsAndReportsFailedQueries(t *testing.T) {
	w := newWorld(t, 2)
	if _, _, err := w.listing.Payments(ctx, true, time.Now(), 0); !errors.Is(err, deadlines.ErrBadQuery) {
		t.Errorf("a limit of 0: %v, want ErrBadQuery", err)
	}
	if _, _, err := w.listing.Payments(ctx, true, time.Time{}, 10); !errors.Is(err, deadlines.ErrBadQuery) {
		t.Errorf("overdue by a zero clock (it would list every outstanding payment): %v, want ErrBadQuery", err)
	}
	missing, err := deadlinetable.New(w.client, "no-such-table", w.kinds, deadlinetable.WithShards(3))
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := deadlinekinds.Listing{Index: missing, Kinds: w.kinds}.Payments(ctx, true, time.Now(), 10)
	if err == nil || rows != nil {
		t.Fatalf("overdue payments of a missing table = %v, %v; want an error", rows, err)
	}
	if !strings.Contains(err.Error(), "payment#0") {
		t.Errorf("error %q does not name the shard it could not read, payment#0", err)
	}
}

// TestCancelledMeansTheBikeIsFree gives up on a payment and reads the rental after
// every step the stream consumers take: the moment it reads cancelled, another
// renter's request for the bike succeeds, and the history holds the whole story.
func TestCancelledMeansTheBikeIsFree(t *testing.T) {
	w := newWorld(t, 2)
	rentalID := w.request("truth")
	w.pumpUntil("the payment to be prepared", func() bool { return w.listed(rentalID) })
	if outcome, err := w.process.CancelRentalPayment(ctx, rentalID, command.Meta{}); err != nil || outcome != process.OutcomeCancelled {
		t.Fatalf("cancel: %s, %v", outcome, err)
	}
	var seen []rentalview.Status
	w.pumpUntil("the rental to read cancelled", func() bool {
		v, err := rentalview.Load(ctx, w.store, rentalID)
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != v.Status {
			seen = append(seen, v.Status)
		}
		if v.Status != rentalview.StatusCancelled {
			return false
		}
		var types []string
		for _, e := range v.History {
			types = append(types, e.Type)
		}
		for _, want := range []string{"PaymentCancelled", "RequestRejected", rentalpayment.TypeCompleted} {
			if !slices.Contains(types, want) {
				t.Errorf("cancelled, but the history lacks %s: %v", want, types)
			}
		}
		next := rental.RequestBike{BikeID: "truth", Renter: "someone-else", RentalID: rental.NewRentalID("truth", "BBBBBBBBBBBBBBBBBBBBBB")}
		if _, err := w.commands.Bike(ctx, next, command.Meta{}); err != nil {
			t.Errorf("cancelled, but the bike cannot be requested: %v", err)
		}
		return true
	})
	if !slices.Contains(seen, rentalview.StatusCancelling) {
		t.Errorf("statuses seen %v: never cancelling between the cancellation and its end", seen)
	}
}
