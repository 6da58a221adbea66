package awslambda_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
)

// parkLog is a Park hook that keeps what it is given, in order, and refuses the
// records refuse names; panicOn names one it panics on.
type parkLog struct {
	mu      sync.Mutex
	kept    []string
	refuse  map[string]bool
	panicOn string
}

func (p *parkLog) park(_ context.Context, r deadlines.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.refuse[id(r)]:
		return errors.New("the store of kept records is unavailable")
	case p.panicOn == id(r):
		panic("park bug")
	}
	p.kept = append(p.kept, id(r))
	return nil
}

// handledLog is a handler that records what it handled and fails for the streams
// in failing, always.
type handledLog struct {
	mu      sync.Mutex
	handled []string
	calls   map[string]int
	failing map[string]bool
}

func (h *handledLog) handle(_ context.Context, r deadlines.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[string]int{}
	}
	h.calls[id(r)]++
	if h.failing[r.Stream] {
		return errors.New("waits for another stream's state")
	}
	h.handled = append(h.handled, id(r))
	return nil
}

func TestAFailingRecordIsParkedAndTheBatchAcknowledged(t *testing.T) {
	// stuck@1 keeps failing; its stream's later records come after records of
	// other streams, which must all be handled.
	batch := recordsBatch([]deadlines.Record{
		record("a", 1), record("stuck", 1), record("b", 1), record("stuck", 2),
		record("a", 2), record("stuck", 3), record("c", 1),
	})
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			h := &handledLog{failing: map[string]bool{"stuck": true}}
			p := &parkLog{}
			resp, _ := awslambda.Stream(decodeOrderEvent, h.handle, awslambda.Concurrency(concurrency), awslambda.Park(p.park), quiet)(context.Background(), batch)
			if len(resp.BatchItemFailures) != 0 {
				t.Errorf("failures %v, want none: Park kept the stuck stream", resp.BatchItemFailures)
			}
			slices.Sort(h.handled)
			if want := []string{"a@1", "a@2", "b@1", "c@1"}; !slices.Equal(h.handled, want) {
				t.Errorf("handled %v, want %v", h.handled, want)
			}
			if want := []string{"stuck@1", "stuck@2", "stuck@3"}; !slices.Equal(p.kept, want) {
				t.Errorf("kept %v, want %v in order", p.kept, want)
			}
			// Only the first of the stream was tried, each of its retries in place
			// included; the later ones were given to Park behind it untried.
			if got, want := h.calls["stuck@1"], 1+len(awslambda.RetryDelays); got != want {
				t.Errorf("stuck@1 tried %d times, want %d", got, want)
			}
			if h.calls["stuck@2"]+h.calls["stuck@3"] != 0 {
				t.Errorf("the records behind one given to Park were handled: %v", h.calls)
			}
		})
	}
}

func TestARecordParkCannotKeepFailsAsWithoutPark(t *testing.T) {
	batch := recordsBatch([]deadlines.Record{
		record("a", 1), record("stuck", 1), record("b", 1), record("stuck", 2), record("c", 1),
	})
	for _, tc := range []struct {
		name     string
		park     *parkLog
		wantFail int
		wantKept []string
	}{
		{"the first refused", &parkLog{refuse: map[string]bool{"stuck@1": true}}, 1, nil},
		{"a later one refused", &parkLog{refuse: map[string]bool{"stuck@2": true}}, 3, []string{"stuck@1"}},
		{"park panics", &parkLog{panicOn: "stuck@1"}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &handledLog{failing: map[string]bool{"stuck": true}}
			resp, _ := awslambda.Stream(decodeOrderEvent, h.handle, awslambda.Concurrency(1), awslambda.Park(tc.park.park), quiet)(context.Background(), batch)
			if got := failedSeqs(resp); !slices.Equal(got, []string{batch.Records[tc.wantFail].Change.SequenceNumber}) {
				t.Errorf("failures %v, want record %d's", got, tc.wantFail)
			}
			if !slices.Equal(tc.park.kept, tc.wantKept) {
				t.Errorf("kept %v, want %v", tc.park.kept, tc.wantKept)
			}
			slices.Sort(h.handled)
			if want := []string{"a@1", "b@1", "c@1"}; !slices.Equal(h.handled, want) {
				t.Errorf("handled %v, want %v: the other streams carry on", h.handled, want)
			}
		})
	}
}

func TestWithoutParkAFailingRecordIsNotRetriedInPlace(t *testing.T) {
	batch := recordsBatch([]deadlines.Record{record("stuck", 1), record("a", 1)})
	h := &handledLog{failing: map[string]bool{"stuck": true}}
	resp, _ := awslambda.Stream(decodeOrderEvent, h.handle, quiet)(context.Background(), batch)
	if got := failedSeqs(resp); !slices.Equal(got, []string{batch.Records[0].Change.SequenceNumber}) {
		t.Errorf("failures %v, want stuck@1's", got)
	}
	if h.calls["stuck@1"] != 1 {
		t.Errorf("stuck@1 tried %d times, want once", h.calls["stuck@1"])
	}
}

func TestARecordThatFailsTwiceThenSucceedsIsNotParked(t *testing.T) {
	batch := recordsBatch([]deadlines.Record{record("race", 1), record("race", 2), record("a", 1)})
	var mu sync.Mutex
	tries := map[string]int{}
	var handled []string
	h := func(_ context.Context, r deadlines.Record) error {
		mu.Lock()
		defer mu.Unlock()
		tries[id(r)]++
		if id(r) == "race@1" && tries[id(r)] <= 2 {
			return errors.New("the record it depends on is not handled yet")
		}
		handled = append(handled, id(r))
		return nil
	}
	p := &parkLog{}
	resp, _ := awslambda.Stream(decodeOrderEvent, h, awslambda.Concurrency(1), awslambda.Park(p.park), quiet)(context.Background(), batch)
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v", resp.BatchItemFailures)
	}
	if len(p.kept) != 0 {
		t.Errorf("kept %v, want nothing: the third try succeeded", p.kept)
	}
	if want := []string{"race@1", "race@2", "a@1"}; !slices.Equal(handled, want) {
		t.Errorf("handled %v, want %v", handled, want)
	}
	if tries["race@1"] != 3 {
		t.Errorf("race@1 tried %d times, want 3", tries["race@1"])
	}
}

func failedSeqs(resp events.DynamoDBEventResponse) []string {
	var seqs []string
	for _, f := range resp.BatchItemFailures {
		seqs = append(seqs, f.ItemIdentifier)
	}
	return seqs
}
