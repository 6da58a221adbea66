package eventstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/eventstoretest"
)

// scripted wraps a store and runs before() ahead of each Append, counting appends.
type scripted struct {
	eventstore.Store
	before  func(attempt int) error
	appends int
}

func (s *scripted) Append(ctx context.Context, stream string, v int64, events ...eventstore.Event) ([]eventstore.Record, error) {
	s.appends++
	if s.before != nil {
		if err := s.before(s.appends); err != nil {
			return nil, err
		}
	}
	return s.Store.Append(ctx, stream, v, events...)
}

var fast = eventstore.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond}

func TestExecuteDecidesAgainAfterAConflict(t *testing.T) {
	mem := eventstore.NewMemory()
	ctx := context.Background()
	s := &scripted{Store: mem, before: func(attempt int) error {
		if attempt == 1 { // another writer gets in between our read and our append
			_, err := mem.Append(ctx, "s", 0, eventstoretest.Event("Other", `1`))
			return err
		}
		return nil
	}}
	var histories []int
	_, appended, err := eventstore.Execute(ctx, s, "s", func(h []eventstore.Record) ([]eventstore.Event, error) {
		histories = append(histories, len(h))
		return []eventstore.Event{eventstoretest.Event("Mine", `2`)}, nil
	}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if len(histories) != 2 || histories[0] != 0 || histories[1] != 1 {
		t.Errorf("decided on histories of %v events, want [0 1]", histories)
	}
	if len(appended) != 1 || appended[0].Version != 2 || appended[0].Type != "Mine" {
		t.Errorf("appended %+v, want Mine at version 2", appended)
	}
}

func TestExecuteGivesUpAfterMaxAttempts(t *testing.T) {
	s := &scripted{Store: eventstore.NewMemory(), before: func(int) error {
		return &eventstore.ConflictError{StreamID: "s"}
	}}
	decisions := 0
	_, _, err := eventstore.Execute(context.Background(), s, "s", func([]eventstore.Record) ([]eventstore.Event, error) {
		decisions++
		return []eventstore.Event{eventstoretest.Event("E", `1`)}, nil
	}, fast)
	if !errors.Is(err, eventstore.ErrRetriesExhausted) || !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("err = %v, want ErrRetriesExhausted and ErrConcurrency", err)
	}
	if decisions != fast.MaxAttempts || s.appends != fast.MaxAttempts {
		t.Errorf("%d decisions and %d appends, want %d of each", decisions, s.appends, fast.MaxAttempts)
	}
}

func TestExecuteReturnsDecisionErrorsAndAppendsNothing(t *testing.T) {
	s := &scripted{Store: eventstore.NewMemory()}
	refused := errors.New("bike is not available")
	_, _, err := eventstore.Execute(context.Background(), s, "s", func([]eventstore.Record) ([]eventstore.Event, error) {
		return nil, refused
	}, fast)
	if !errors.Is(err, refused) || s.appends != 0 {
		t.Fatalf("err = %v after %d appends, want the decision's error and no append", err, s.appends)
	}
	_, appended, err := eventstore.Execute(context.Background(), s, "s", func([]eventstore.Record) ([]eventstore.Event, error) {
		return nil, nil
	}, fast)
	if err != nil || appended != nil || s.appends != 0 {
		t.Fatalf("nothing to do: err = %v, appended %v, %d appends; want none", err, appended, s.appends)
	}
}

func TestExecuteDoesNotRetryOtherErrors(t *testing.T) {
	boom := errors.New("network down")
	s := &scripted{Store: eventstore.NewMemory(), before: func(int) error { return boom }}
	_, _, err := eventstore.Execute(context.Background(), s, "s", func([]eventstore.Record) ([]eventstore.Event, error) {
		return []eventstore.Event{eventstoretest.Event("E", `1`)}, nil
	}, fast)
	if !errors.Is(err, boom) || s.appends != 1 {
		t.Fatalf("err = %v after %d appends, want %v after 1", err, s.appends, boom)
	}
}

func TestExecuteStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &scripted{Store: eventstore.NewMemory(), before: func(int) error {
		cancel()
		return &eventstore.ConflictError{StreamID: "s"}
	}}
	slow := eventstore.RetryPolicy{MaxAttempts: 10, BaseDelay: time.Hour, MaxDelay: time.Hour}
	_, _, err := eventstore.Execute(ctx, s, "s", func([]eventstore.Record) ([]eventstore.Event, error) {
		return []eventstore.Event{eventstoretest.Event("E", `1`)}, nil
	}, slow)
	if !errors.Is(err, context.Canceled) || s.appends != 1 {
		t.Fatalf("err = %v after %d appends, want context.Canceled after 1", err, s.appends)
	}
}

func TestMemoryRefusesAVersionBeyondTheEnd(t *testing.T) {
	s := eventstore.NewMemory()
	if _, err := s.Append(context.Background(), "s", 3, eventstoretest.Event("E", `1`)); !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("append at 3 to an empty stream: err = %v, want ErrConcurrency", err)
	}
}

// TestExecuteStreamsDecidesAgainAfterAConflict: a conflict on any of the streams
// makes ExecuteStreams call the decider again, which reads again and appends at
// the new versions; both streams are written together, once.
func TestExecuteStreamsDecidesAgainAfterAConflict(t *testing.T) {
	mem := eventstore.NewMemory()
	ctx := context.Background()
	decisions := 0
	appended, err := eventstore.ExecuteStreams(ctx, mem, func(ctx context.Context) ([]eventstore.StreamAppend, error) {
		decisions++
		a, err := mem.Read(ctx, "a", 0)
		if err != nil {
			return nil, err
		}
		if decisions == 1 { // another writer gets in between our read and our append
			if _, err := mem.Append(ctx, "b", 0, eventstoretest.Event("Other", `1`)); err != nil {
				return nil, err
			}
			return []eventstore.StreamAppend{
				{StreamID: "a", ExpectedVersion: int64(len(a)), Events: []eventstore.Event{eventstoretest.Event("Mine", `1`)}},
				{StreamID: "b", ExpectedVersion: 0, Events: []eventstore.Event{eventstoretest.Event("Mine", `2`)}},
			}, nil
		}
		b, err := mem.Read(ctx, "b", 0)
		if err != nil {
			return nil, err
		}
		return []eventstore.StreamAppend{
			{StreamID: "a", ExpectedVersion: int64(len(a)), Events: []eventstore.Event{eventstoretest.Event("Mine", `1`)}},
			{StreamID: "b", ExpectedVersion: int64(len(b)), Events: []eventstore.Event{eventstoretest.Event("Mine", `2`)}},
		}, nil
	}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if decisions != 2 || len(appended) != 2 || appended[0].StreamID != "a" || appended[0].Version != 1 || appended[1].StreamID != "b" || appended[1].Version != 2 {
		t.Errorf("%d decisions, appended %+v; want 2, a at 1 and b at 2", decisions, appended)
	}
}

// TestExecuteStreamsGivesUpOrStops: a conflict on every attempt ends after
// MaxAttempts with an error matching ErrRetriesExhausted and ErrConcurrency; a
// decider's error, or no appends, ends it at once with nothing written.
func TestExecuteStreamsGivesUpOrStops(t *testing.T) {
	mem := eventstore.NewMemory()
	ctx := context.Background()
	if _, err := mem.Append(ctx, "a", 0, eventstoretest.Event("Other", `1`)); err != nil {
		t.Fatal(err)
	}
	decisions := 0
	stale := func(context.Context) ([]eventstore.StreamAppend, error) {
		decisions++
		return []eventstore.StreamAppend{{StreamID: "a", ExpectedVersion: 0, Events: []eventstore.Event{eventstoretest.Event("Mine", `1`)}}}, nil
	}
	_, err := eventstore.ExecuteStreams(ctx, mem, stale, fast)
	if !errors.Is(err, eventstore.ErrRetriesExhausted) || !errors.Is(err, eventstore.ErrConcurrency) || decisions != fast.MaxAttempts {
		t.Fatalf("err = %v after %d decisions, want ErrRetriesExhausted and ErrConcurrency after %d", err, decisions, fast.MaxAttempts)
	}
	refused := errors.New("refused")
	for name, decide := range map[string]eventstore.StreamsDecider{
		"refused": func(context.Context) ([]eventstore.StreamAppend, error) { return nil, refused },
		"nothing": func(context.Context) ([]eventstore.StreamAppend, error) { return nil, nil },
	} {
		appended, err := eventstore.ExecuteStreams(ctx, mem, decide, fast)
		if (name == "refused") != errors.Is(err, refused) || (name == "nothing" && err != nil) || len(appended) != 0 {
			t.Errorf("%s: appended %d, err = %v", name, len(appended), err)
		}
	}
	if recs, _ := mem.Read(ctx, "a", 0); len(recs) != 1 {
		t.Errorf("stream a holds %d records, want 1", len(recs))
	}
}
