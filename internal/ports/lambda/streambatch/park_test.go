package streambatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

// parkLog is a Park hook that keeps what it is given, in order, and refuses the
// records refuse names.
type parkLog struct {
	mu     sync.Mutex
	kept   []string
	refuse map[string]bool
}

func (p *parkLog) park(_ context.Context, r eventstore.Record) error {
	id := fmt.Sprintf("%s@%d", r.StreamID, r.Version)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse[id] {
		return errors.New("the to-do list is unavailable")
	}
	p.kept = append(p.kept, id)
	return nil
}

// handledLog is a handler that records what it handled and fails for the
// streams in failing, always.
type handledLog struct {
	mu      sync.Mutex
	handled []string
	calls   map[string]int
	failing map[string]bool
}

func (h *handledLog) handle(_ context.Context, r eventstore.Record) error {
	id := fmt.Sprintf("%s@%d", r.StreamID, r.Version)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[string]int{}
	}
	h.calls[id]++
	if h.failing[r.StreamID] {
		return errors.New("waits for another stream's state")
	}
	h.handled = append(h.handled, id)
	return nil
}

func TestAFailingRecordIsParkedAndTheBatchAcknowledged(t *testing.T) {
	// stuck@1 keeps failing; its stream's later records come after records of
	// other streams, which must all be handled.
	batch := recordsBatch(t, []eventstore.Record{
		record("a", 1), record("stuck", 1), record("b", 1), record("stuck", 2),
		record("a", 2), record("stuck", 3), record("c", 1),
	})
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			h := &handledLog{failing: map[string]bool{"stuck": true}}
			p := &parkLog{}
			resp := streambatch.HandleBatch(context.Background(), batch, h.handle,
				streambatch.Options{Concurrency: concurrency, Park: p.park, Logger: slog.New(slog.DiscardHandler)})
			if len(resp.BatchItemFailures) != 0 {
				t.Errorf("failures %v, want none: the stuck stream is parked", resp.BatchItemFailures)
			}
			slices.Sort(h.handled)
			if want := []string{"a@1", "a@2", "b@1", "c@1"}; !slices.Equal(h.handled, want) {
				t.Errorf("handled %v, want %v", h.handled, want)
			}
			if want := []string{"stuck@1", "stuck@2", "stuck@3"}; !slices.Equal(p.kept, want) {
				t.Errorf("parked %v, want %v in order", p.kept, want)
			}
			// Only the first of the stream was tried, each of its retries in place
			// included; the later ones were parked behind it untried.
			if got, want := h.calls["stuck@1"], 1+len(streambatch.RetryDelays); got != want {
				t.Errorf("stuck@1 tried %d times, want %d", got, want)
			}
			if h.calls["stuck@2"]+h.calls["stuck@3"] != 0 {
				t.Errorf("the records behind a parked one were handled: %v", h.calls)
			}
		})
	}
}

func TestARecordParkCannotKeepFailsAsWithoutPark(t *testing.T) {
	batch := recordsBatch(t, []eventstore.Record{
		record("a", 1), record("stuck", 1), record("b", 1), record("stuck", 2), record("c", 1),
	})
	t.Run("the first", func(t *testing.T) {
		h := &handledLog{failing: map[string]bool{"stuck": true}}
		p := &parkLog{refuse: map[string]bool{"stuck@1": true}}
		resp := streambatch.HandleBatch(context.Background(), batch, h.handle,
			streambatch.Options{Concurrency: 1, Park: p.park, Logger: slog.New(slog.DiscardHandler)})
		if got := failedSeqs(resp); !slices.Equal(got, []string{batch.Records[1].Change.SequenceNumber}) {
			t.Errorf("failures %v, want stuck@1's", got)
		}
		if len(p.kept) != 0 {
			t.Errorf("parked %v behind a record Park refused", p.kept)
		}
	})
	t.Run("a later one", func(t *testing.T) {
		h := &handledLog{failing: map[string]bool{"stuck": true}}
		p := &parkLog{refuse: map[string]bool{"stuck@2": true}}
		resp := streambatch.HandleBatch(context.Background(), batch, h.handle,
			streambatch.Options{Concurrency: 1, Park: p.park, Logger: slog.New(slog.DiscardHandler)})
		if got := failedSeqs(resp); !slices.Equal(got, []string{batch.Records[3].Change.SequenceNumber}) {
			t.Errorf("failures %v, want stuck@2's", got)
		}
		if !slices.Equal(p.kept, []string{"stuck@1"}) {
			t.Errorf("parked %v, want stuck@1", p.kept)
		}
	})
}

func TestWithoutParkAFailingRecordIsNotRetriedInPlace(t *testing.T) {
	batch := recordsBatch(t, []eventstore.Record{record("stuck", 1), record("a", 1)})
	h := &handledLog{failing: map[string]bool{"stuck": true}}
	resp := streambatch.HandleBatch(context.Background(), batch, h.handle, streambatch.Options{Logger: slog.New(slog.DiscardHandler)})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != batch.Records[0].Change.SequenceNumber {
		t.Errorf("failures %v, want stuck@1's", resp.BatchItemFailures)
	}
	if h.calls["stuck@1"] != 1 {
		t.Errorf("stuck@1 tried %d times, want once", h.calls["stuck@1"])
	}
}

func TestARecordThatFailsTwiceThenSucceedsIsNotParked(t *testing.T) {
	batch := recordsBatch(t, []eventstore.Record{record("race", 1), record("race", 2), record("a", 1)})
	var mu sync.Mutex
	tries := map[string]int{}
	var handled []string
	h := func(_ context.Context, r eventstore.Record) error {
		mu.Lock()
		defer mu.Unlock()
		id := fmt.Sprintf("%s@%d", r.StreamID, r.Version)
		tries[id]++
		if id == "race@1" && tries[id] <= 2 {
			return errors.New("the process start is not recorded yet")
		}
		handled = append(handled, id)
		return nil
	}
	p := &parkLog{}
	resp := streambatch.HandleBatch(context.Background(), batch, h, streambatch.Options{Concurrency: 1, Park: p.park, Logger: slog.New(slog.DiscardHandler)})
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %v", resp.BatchItemFailures)
	}
	if len(p.kept) != 0 {
		t.Errorf("parked %v, want nothing: the third try succeeded", p.kept)
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
