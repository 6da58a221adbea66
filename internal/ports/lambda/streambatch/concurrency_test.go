package streambatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

// recordsBatch returns records as one stream batch delivers them, in the order
// given, with sequence numbers increasing along it.
func recordsBatch(t testing.TB, records []eventstore.Record) events.DynamoDBEvent {
	t.Helper()
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(records))}
	for i, r := range records {
		item := dynamo.EncodeRecord(r)
		image := make(map[string]events.DynamoDBAttributeValue, len(item))
		for name, v := range item {
			image[name] = lambdaValue(t, v)
		}
		ev.Records[i] = events.DynamoDBEventRecord{EventID: "id-" + strconv.Itoa(i), EventName: "INSERT", EventSource: "aws:dynamodb",
			Change: events.DynamoDBStreamRecord{NewImage: image, SequenceNumber: fmt.Sprintf("%021d", i+1), StreamViewType: "NEW_IMAGE"}}
	}
	return ev
}

func record(stream string, version int64) eventstore.Record {
	return eventstore.Record{StreamID: stream, Version: version, Event: eventstore.Event{
		ID: fmt.Sprintf("%s@%d", stream, version), Type: "E", Data: []byte(`{}`),
		RecordedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
	}}
}

// interleaved returns streams×each records, every stream's records in version
// order, the streams shuffled among each other as writes to many streams arrive.
func interleaved(streams, each int, seed uint64) []eventstore.Record {
	next := make([]int64, streams)
	var out []eventstore.Record
	rng := rand.New(rand.NewPCG(seed, seed))
	for len(out) < streams*each {
		s := rng.IntN(streams)
		if next[s] == int64(each) {
			continue
		}
		next[s]++
		out = append(out, record("stream-"+strconv.Itoa(s), next[s]))
	}
	return out
}

// TestHandleBatchKeepsEachStreamInOrder fails if two records of one stream are
// ever handled at once or out of version order, or if more streams than the bound
// are handled at once.
func TestHandleBatchKeepsEachStreamInOrder(t *testing.T) {
	const streams, each, concurrency = 40, 25, 8
	batch := recordsBatch(t, interleaved(streams, each, 1))
	var mu sync.Mutex
	busy := map[string]bool{}
	last := map[string]int64{}
	inFlight, most := 0, 0
	var violations []string
	h := func(_ context.Context, r eventstore.Record) error {
		mu.Lock()
		if busy[r.StreamID] {
			violations = append(violations, fmt.Sprintf("%s: version %d started while another of its records ran", r.StreamID, r.Version))
		}
		if r.Version != last[r.StreamID]+1 {
			violations = append(violations, fmt.Sprintf("%s: version %d after %d", r.StreamID, r.Version, last[r.StreamID]))
		}
		busy[r.StreamID] = true
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		for range 20 { // give other goroutines the chance to overlap
			runtime.Gosched()
		}
		mu.Lock()
		busy[r.StreamID] = false
		last[r.StreamID] = r.Version
		inFlight--
		mu.Unlock()
		return nil
	}

	resp := streambatch.HandleBatch(context.Background(), batch, h, streambatch.Options{Concurrency: concurrency, Logger: slog.New(slog.DiscardHandler)})

	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v", resp.BatchItemFailures)
	}
	if len(violations) > 0 {
		t.Errorf("%d order violations, first %q", len(violations), violations[0])
	}
	for s := range streams {
		if got := last["stream-"+strconv.Itoa(s)]; got != each {
			t.Errorf("stream-%d handled up to version %d, want %d", s, got, each)
		}
	}
	if most > concurrency {
		t.Errorf("%d streams handled at once, more than the bound %d", most, concurrency)
	}
}

// TestHandleBatchHandlesStreamsConcurrently fails unless as many streams as the
// bound allows are handled at once: every handler waits, up to a deadline, for all
// of them to be in flight together.
func TestHandleBatchHandlesStreamsConcurrently(t *testing.T) {
	const streams = 12
	var records []eventstore.Record
	for v := int64(1); v <= 2; v++ {
		for s := range streams {
			records = append(records, record("stream-"+strconv.Itoa(s), v))
		}
	}
	batch := recordsBatch(t, records)
	var mu sync.Mutex
	arrived := 0
	together := make(chan struct{})
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second) // one deadline for all: a sequential run fails in one timeout, not twelve
	defer stop()
	h := func(ctx context.Context, r eventstore.Record) error {
		if r.Version != 1 {
			return nil
		}
		mu.Lock()
		if arrived++; arrived == streams {
			close(together)
		}
		mu.Unlock()
		select {
		case <-together:
			return nil
		case <-wait.Done():
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("only %d of %d streams in flight at once", arrived, streams)
		}
	}

	resp := streambatch.HandleBatch(context.Background(), batch, h, streambatch.Options{Concurrency: streams, Logger: slog.New(slog.DiscardHandler)})

	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v: the streams were not handled concurrently", resp.BatchItemFailures)
	}
}

// TestHandleBatchReportsTheEarliestRecordToDeliverAgain checks the answer when
// records of several streams fail: it names the earliest record, in batch order,
// that failed or was held back; a failed stream's later records are not started;
// other streams' records, before and after it, are handled.
func TestHandleBatchReportsTheEarliestRecordToDeliverAgain(t *testing.T) {
	// a1 b1 c1 a2 b2 c2 a3 b3 c3 d1
	var records []eventstore.Record
	for v := int64(1); v <= 3; v++ {
		for _, s := range []string{"a", "b", "c"} {
			records = append(records, record(s, v))
		}
	}
	records = append(records, record("d", 1))
	batch := recordsBatch(t, records)
	noImage := batch.Records[0]
	noImage.Change.NewImage = nil
	noImage.Change.SequenceNumber = "000000000000000000000"

	tests := []struct {
		name        string
		batch       events.DynamoDBEvent
		fail        []string // the records whose handler fails
		wantHandled []string
		wantFailed  string // the record reported
	}{
		{
			name: "the earlier of two failures in two streams", batch: batch, fail: []string{"c@2", "b@2"},
			wantHandled: []string{"a@1", "a@2", "a@3", "b@1", "c@1", "d@1"}, wantFailed: "b@2",
		},
		{
			name: "a failure late in one stream: the others carry on", batch: batch, fail: []string{"a@3"},
			wantHandled: []string{"a@1", "a@2", "b@1", "b@2", "b@3", "c@1", "c@2", "c@3", "d@1"}, wantFailed: "a@3",
		},
		{
			name: "the first record fails: its stream stops, the batch does not", batch: batch, fail: []string{"a@1"},
			wantHandled: []string{"b@1", "b@2", "b@3", "c@1", "c@2", "c@3", "d@1"}, wantFailed: "a@1",
		},
		{
			name:  "an image that names no stream holds back the rest of the batch",
			batch: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{batch.Records[0], batch.Records[1], noImage, batch.Records[2], batch.Records[3]}},
			// the sequence numbers are not in order here; the answer is by batch position
			wantHandled: []string{"a@1", "b@1"}, wantFailed: noImage.Change.SequenceNumber,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var handled []string
			h := func(_ context.Context, r eventstore.Record) error {
				if slices.Contains(tc.fail, r.ID) {
					return errors.New("boom")
				}
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, r.ID)
				return nil
			}

			resp := streambatch.HandleBatch(context.Background(), tc.batch, h, streambatch.Options{Concurrency: 4, Logger: slog.New(slog.DiscardHandler)})

			slices.Sort(handled)
			if !slices.Equal(handled, tc.wantHandled) {
				t.Errorf("handled %v, want %v", handled, tc.wantHandled)
			}
			want := tc.wantFailed
			for i, r := range records {
				if r.ID == tc.wantFailed {
					want = batch.Records[i].Change.SequenceNumber
				}
			}
			if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != want {
				t.Errorf("failures %v, want exactly %s (%s)", resp.BatchItemFailures, want, tc.wantFailed)
			}
		})
	}
}

// TestHandleBatchEndsTheHandlersContextBeforeTheInvocations checks that a handler
// gets a context that ends half the margin before the invocation's, so that a
// record that overruns fails alone and the batch is still answered.
func TestHandleBatchEndsTheHandlersContextBeforeTheInvocations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outer, _ := ctx.Deadline()
	var inner time.Time
	var ok bool
	h := func(ctx context.Context, _ eventstore.Record) error {
		inner, ok = ctx.Deadline()
		return nil
	}
	streambatch.HandleBatch(ctx, recordsBatch(t, []eventstore.Record{record("a", 1)}), h, streambatch.Options{Logger: slog.New(slog.DiscardHandler)})
	if !ok || outer.Sub(inner) != streambatch.DeadlineMargin/2 {
		t.Errorf("the handler's deadline is %v (set: %v), want %v before the invocation's %v", inner, ok, streambatch.DeadlineMargin/2, outer)
	}
}
