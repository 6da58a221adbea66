package deadline_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

// TestAPoisonRecordHoldsUpNoOtherRental is RELIABILITY.md's test of what a record
// that keeps failing can hold up. The process fails on one rental's request, every
// time, until its cause goes away; the stream pollers (streampoll, which the local
// stack runs) play the event source mappings with two records a batch as read
// from the shard, so that the records of the other rentals, written after the
// failing one in the same shard, come in batches after its own, which a failing
// record used to keep from ever being read (Lambda delivers again from the
// earliest failed record, a batch at a time, for up to MaximumRecordAgeInSeconds).
// They are all handled, those written before the first poll and those written
// after it; the failing record is parked in the Deadlines table, where the sweep
// finds it (and counts it), and once the cause is gone the sweep's redelivery
// completes it: its payment is prepared, and nothing is parked any more.
func TestAPoisonRecordHoldsUpNoOtherRental(t *testing.T) {
	w := newWorld(t, 2)
	var poisoned atomic.Bool
	poisoned.Store(true)
	poison := rental.StreamID("poison")
	var poisonTries atomic.Int64
	process := func(ctx context.Context, r eventstore.Record) error {
		if r.StreamID == poison && r.Type == (rental.BikeRequested{}).EventType() && poisoned.Load() {
			poisonTries.Add(1)
			return errors.New("the rental's state is not there yet")
		}
		return w.process.Handle(ctx, r)
	}
	pollers := poisonPollers(t, w, map[string]streambatch.Handler{eventfilter.Process: process, eventfilter.Projector: w.projection.Apply})
	pump := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			var wg sync.WaitGroup
			for _, p := range pollers {
				wg.Go(func() { p.Poll(ctx) })
			}
			wg.Wait()
		}
	}

	poisonRental := w.request("poison")
	first := w.request("other1") // right behind it in the shard
	pump("the rental right behind the failing record", func() bool { return w.listed(first) })
	later := []string{w.request("other2"), w.request("other3"), w.request("other4")} // written after the failing record was first tried
	pump("the rentals written after the failing record was tried", func() bool {
		return w.listed(later[0]) && w.listed(later[1]) && w.listed(later[2])
	})
	if w.listed(poisonRental) {
		t.Fatal("the poisoned rental's payment was prepared")
	}
	backlog, _, err := w.projection.Backlog(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(backlog.Parked) != 1 || backlog.Parked[0].Consumer != eventfilter.Process || backlog.Parked[0].StreamID != poison || backlog.Parked[0].Version != 2 {
		t.Fatalf("parked %+v, want the process's record of %s version 2", backlog.Parked, poison)
	}

	repairer := &repair.Repairer{Store: w.store, Consumers: map[string]repair.Handler{eventfilter.Process: repair.Handler(process), eventfilter.Projector: w.projection.Apply}}
	sweeper := w.sweeper(nil)
	sweeper.Parked.Redeliverer = repairer

	// While the cause lasts, each due redelivery fails and is put off.
	now := time.Now()
	tries := poisonTries.Load()
	sum, err := sweeper.Sweep(ctx, now)
	if err != nil || sum.Parked.Found != 1 || sum.Parked.Redelivered != 0 || sum.Parked.Left != 1 || poisonTries.Load() != tries+1 {
		t.Fatalf("sweep while the cause lasts: %+v, %v (tried %d more); want it parked, tried once, left", sum, err, poisonTries.Load()-tries)
	}
	if sum.Parked.OldestParked <= 0 {
		t.Errorf("oldest parked %s, want the record's age", sum.Parked.OldestParked)
	}
	// The sweep reads only the parked records that are due: this one, put off,
	// is not read, let alone tried.
	sum, err = sweeper.Sweep(ctx, now.Add(time.Second))
	if err != nil || sum.Parked.Found != 0 || poisonTries.Load() != tries+1 {
		t.Fatalf("sweep a second later: %+v, %v; want the record not read and not tried before its new due time", sum, err)
	}
	if backlog, _, err := w.projection.Backlog(ctx, now); err != nil || len(backlog.Parked) != 1 {
		t.Fatalf("parked %+v, %v while put off; want it still parked", backlog.Parked, err)
	}

	poisoned.Store(false)
	sum, err = sweeper.Sweep(ctx, now.Add(parked.BackoffMax))
	if err != nil || sum.Parked.Found != 1 || sum.Parked.Redelivered != 1 || sum.Parked.Left != 0 {
		t.Fatalf("sweep after the cause went away: %+v, %v; want the record redelivered", sum, err)
	}
	pump("the poisoned rental's payment, after its redelivery", func() bool { return w.listed(poisonRental) })
	backlog, _, err = w.projection.Backlog(ctx, time.Now())
	if err != nil || len(backlog.Parked) != 0 {
		t.Fatalf("parked %+v, %v after the redelivery; want none", backlog.Parked, err)
	}
	if _, ok, err := w.projection.Get(ctx, payment.ReferenceFor(poisonRental)); err != nil || !ok {
		t.Fatalf("the poisoned rental's payment is not outstanding: %v, %v", ok, err)
	}
}

// poisonPollers returns a poller per consumer on w's Events table's stream, as its
// event source mapping, two records a batch, each parking what it cannot handle in
// w's Deadlines table.
func poisonPollers(t *testing.T, w *world, handlers map[string]streambatch.Handler) []*streampoll.Poller {
	t.Helper()
	desc, err := w.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(w.events)})
	if err != nil {
		t.Fatal(err)
	}
	streams := dynamodbstreams.NewFromConfig(emulatortest.Config(t))
	logger := slog.New(slog.DiscardHandler)
	var pollers []*streampoll.Poller
	for _, consumer := range eventfilter.Consumers() {
		h := handlers[consumer]
		opts := streambatch.Options{Logger: logger, Park: func(ctx context.Context, r eventstore.Record) error {
			return w.projection.Park(ctx, consumer, r, time.Now())
		}}
		pollers = append(pollers, &streampoll.Poller{
			Client: streams, StreamARN: aws.ToString(desc.Table.LatestStreamArn), Logger: logger, BatchSize: 2,
			Types: eventfilter.Types(consumer),
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return streambatch.HandleBatch(ctx, ev, h, opts), nil
			},
		})
	}
	return pollers
}
