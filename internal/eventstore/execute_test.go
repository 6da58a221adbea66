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
