package awslambda_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
)

// interleaved returns streams×each records, every stream's records in position
// order, the streams shuffled among each other as writes to many streams arrive.
func interleaved(streams, each int, seed uint64) []deadlines.Record {
	next := make([]int64, streams)
	var out []deadlines.Record
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

// TestStreamKeepsEachStreamInOrder fails if two records of one stream are ever
// handled at once or out of position order, or if more streams than the bound are
// handled at once.
func TestStreamKeepsEachStreamInOrder(t *testing.T) {
	const streams, each, concurrency = 40, 25, 8
	batch := recordsBatch(interleaved(streams, each, 1))
	var mu sync.Mutex
	busy := map[string]bool{}
	last := map[string]int64{}
	inFlight, most := 0, 0
	var violations []string
	h := func(_ context.Context, r deadlines.Record) error {
		mu.Lock()
		if busy[r.Stream] {
			violations = append(violations, fmt.Sprintf("%s: position %d started while another of its records ran", r.Stream, r.Position))
		}
		if r.Position != last[r.Stream]+1 {
			violations = append(violations, fmt.Sprintf("%s: position %d after %d", r.Stream, r.Position, last[r.Stream]))
		}
		busy[r.Stream] = true
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		for range 20 { // give other goroutines the chance to overlap
			runtime.Gosched()
		}
		mu.Lock()
		busy[r.Stream] = false
		last[r.Stream] = r.Position
		inFlight--
		mu.Unlock()
		return nil
	}

	resp, _ := awslambda.Stream(decodeOrderEvent, h, awslambda.Concurrency(concurrency), quiet)(context.Background(), batch)

	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v", resp.BatchItemFailures)
	}
	if len(violations) > 0 {
		t.Errorf("%d order violations, first %q", len(violations), violations[0])
	}
	for s := range streams {
		if got := last["stream-"+strconv.Itoa(s)]; got != each {
			t.Errorf("stream-%d handled up to position %d, want %d", s, got, each)
		}
	}
	if most > concurrency {
		t.Errorf("%d streams handled at once, more than the bound %d", most, concurrency)
	}
}

// TestStreamHandlesStreamsConcurrently fails unless as many streams as the bound
// allows are handled at once: every handler waits, up to a deadline, for all of
// them to be in flight together.
func TestStreamHandlesStreamsConcurrently(t *testing.T) {
	const streams = 12
	var records []deadlines.Record
	for p := int64(1); p <= 2; p++ {
		for s := range streams {
			records = append(records, record("stream-"+strconv.Itoa(s), p))
		}
	}
	batch := recordsBatch(records)
	var mu sync.Mutex
	arrived := 0
	together := make(chan struct{})
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second) // one deadline for all: a sequential run fails in one timeout, not twelve
	defer stop()
	h := func(ctx context.Context, r deadlines.Record) error {
		if r.Position != 1 {
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

	resp, _ := awslambda.Stream(decodeOrderEvent, h, awslambda.Concurrency(streams), quiet)(context.Background(), batch)

	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v: the streams were not handled concurrently", resp.BatchItemFailures)
	}
}

// TestStreamReportsTheEarliestRecordToDeliverAgain checks the answer when records
// of several streams fail: it names the earliest record, in batch order, that
// failed or was held back; a failed stream's later records are not started; other
// streams' records, before and after it, are handled.
func TestStreamReportsTheEarliestRecordToDeliverAgain(t *testing.T) {
	// a1 b1 c1 a2 b2 c2 a3 b3 c3 d1
	var records []deadlines.Record
	for p := int64(1); p <= 3; p++ {
		for _, s := range []string{"a", "b", "c"} {
			records = append(records, record(s, p))
		}
	}
	records = append(records, record("d", 1))
	batch := recordsBatch(records)
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
			h := func(_ context.Context, r deadlines.Record) error {
				if slices.Contains(tc.fail, id(r)) {
					return errors.New("boom")
				}
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, id(r))
				return nil
			}

			resp, _ := awslambda.Stream(decodeOrderEvent, h, awslambda.Concurrency(4), quiet)(context.Background(), tc.batch)

			slices.Sort(handled)
			if !slices.Equal(handled, tc.wantHandled) {
				t.Errorf("handled %v, want %v", handled, tc.wantHandled)
			}
			want := tc.wantFailed
			for i, r := range records {
				if id(r) == tc.wantFailed {
					want = batch.Records[i].Change.SequenceNumber
				}
			}
			if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != want {
				t.Errorf("failures %v, want exactly %s (%s)", resp.BatchItemFailures, want, tc.wantFailed)
			}
		})
	}
}

// TestStreamEndsTheHandlersContextBeforeTheInvocations checks that a handler gets
// a context that ends half the margin before the invocation's, so that a record
// that overruns fails alone and the batch is still answered.
func TestStreamEndsTheHandlersContextBeforeTheInvocations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []awslambda.StreamOption
		margin time.Duration
	}{
		{"default margin", nil, awslambda.DefaultStreamMargin},
		{"margin given", []awslambda.StreamOption{awslambda.Margin(10 * time.Second)}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			outer, _ := ctx.Deadline()
			var inner time.Time
			var ok bool
			h := func(ctx context.Context, _ deadlines.Record) error {
				inner, ok = ctx.Deadline()
				return nil
			}
			awslambda.Stream(decodeOrderEvent, h, append(tc.opts, quiet)...)(ctx, recordsBatch([]deadlines.Record{record("a", 1)}))
			if !ok || outer.Sub(inner) != tc.margin/2 {
				t.Errorf("the handler's deadline is %v (set: %v), want %v before the invocation's %v", inner, ok, tc.margin/2, outer)
			}
		})
	}
}
