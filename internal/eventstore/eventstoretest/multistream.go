package eventstoretest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/eventstore"
)

func mustAppendStreams(t testing.TB, s eventstore.MultiStreamStore, appends ...eventstore.StreamAppend) []eventstore.Record {
	t.Helper()
	recs, err := s.AppendStreams(ctx, appends...)
	if err != nil {
		t.Fatalf("append to %d streams: %v", len(appends), err)
	}
	return recs
}

// wantConflict fails the test unless err is a *eventstore.ConflictError for stream at
// expected.
func wantConflict(t testing.TB, err error, stream string, expected int64) {
	t.Helper()
	if !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("err = %v, want ErrConcurrency", err)
	}
	var conflict *eventstore.ConflictError
	if !errors.As(err, &conflict) || conflict.StreamID != stream || conflict.ExpectedVersion != expected {
		t.Fatalf("error %v is not a ConflictError for stream %s at %d", err, stream, expected)
	}
}

// ids returns the event ids of recs, in order.
func eventIDs(recs []eventstore.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func testMultiRoundTrip(t *testing.T, s eventstore.MultiStreamStore) {
	before := mustAppend(t, s, "b", 0, Event("B", `1`))
	at := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))
	full := eventstore.Event{
		ID: "multi-full", Type: "BikeReserved", Data: json.RawMessage(`{"bike":"b-1","who":"Zoë"}`),
		Tags: []string{"rental:r-1", "bike:b-1"}, RecordedAt: at, CorrelationID: "corr-1", CausationID: "cmd-1",
	}
	appends := []eventstore.StreamAppend{
		{StreamID: "a", ExpectedVersion: 0, Events: []eventstore.Event{full, Event("A", `2`)}},
		{StreamID: "b", ExpectedVersion: 1, Events: []eventstore.Event{Event("B", `2`)}},
		{StreamID: "c", ExpectedVersion: 0, Events: []eventstore.Event{Event("C", `1`)}},
	}
	start := time.Now().Add(-time.Second)
	got := mustAppendStreams(t, s, appends...)
	end := time.Now().Add(time.Second)
	want := []struct {
		stream  string
		version int64
		event   eventstore.Event
	}{
		{"a", 1, full}, {"a", 2, appends[0].Events[1]}, {"b", 2, appends[1].Events[0]}, {"c", 1, appends[2].Events[0]},
	}
	if len(got) != len(want) {
		t.Fatalf("AppendStreams returned %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		r := got[i]
		if r.StreamID != w.stream || r.Version != w.version || r.ID != w.event.ID || r.Type != w.event.Type || string(r.Data) != string(w.event.Data) {
			t.Errorf("record %d = %s@%d %s %s, want %s@%d %s %s", i, r.StreamID, r.Version, r.ID, r.Type, w.stream, w.version, w.event.ID, w.event.Type)
		}
		if w.event.RecordedAt.IsZero() && (r.RecordedAt.Before(start) || r.RecordedAt.After(end)) {
			t.Errorf("record %d: RecordedAt = %v, want stamped between %v and %v", i, r.RecordedAt, start, end)
		}
	}
	if !sameRecord(got[0], eventstore.Record{StreamID: "a", Version: 1, Event: full}) {
		t.Errorf("record with every field returned as\n%+v\nwant\n%+v", got[0], full)
	}
	for _, stream := range []string{"a", "b", "c"} {
		var appended []eventstore.Record
		if stream == "b" {
			appended = append(appended, before...)
		}
		for _, r := range got {
			if r.StreamID == stream {
				appended = append(appended, r)
			}
		}
		read := mustRead(t, s, stream, 0)
		if len(read) != len(appended) {
			t.Fatalf("stream %s holds %v, want %v", stream, versions(read), versions(appended))
		}
		for i := range read {
			if !sameRecord(read[i], appended[i]) {
				t.Errorf("stream %s record %d read back as\n%+v\nappended as\n%+v", stream, i, read[i], appended[i])
			}
		}
	}
}

func testMultiStaleVersion(t *testing.T, s eventstore.MultiStreamStore) {
	a := mustAppend(t, s, "a", 0, Event("A", `1`))
	b := mustAppend(t, s, "b", 0, Event("B", `1`), Event("B", `2`))
	fresh := func() eventstore.StreamAppend {
		return eventstore.StreamAppend{StreamID: "a", ExpectedVersion: 1, Events: []eventstore.Event{Event("New", `2`), Event("New", `3`)}}
	}
	// b's version 2 is taken, its version 3 is free: nothing at all may be written.
	stale := func() eventstore.StreamAppend {
		return eventstore.StreamAppend{StreamID: "b", ExpectedVersion: 1, Events: []eventstore.Event{Event("New", `2`), Event("New", `3`)}}
	}
	untouched := func(when string) {
		t.Helper()
		if got := mustRead(t, s, "a", 0); fmt.Sprint(eventIDs(got)) != fmt.Sprint(eventIDs(a)) {
			t.Fatalf("%s: stream a holds %v (ids %v), want only its first event %v", when, versions(got), eventIDs(got), eventIDs(a))
		}
		if got := mustRead(t, s, "b", 0); fmt.Sprint(eventIDs(got)) != fmt.Sprint(eventIDs(b)) {
			t.Fatalf("%s: stream b holds %v (ids %v), want its two events %v", when, versions(got), eventIDs(got), eventIDs(b))
		}
		if got := mustRead(t, s, "c", 0); len(got) != 0 {
			t.Fatalf("%s: stream c holds %v, want nothing", when, versions(got))
		}
	}

	_, err := s.AppendStreams(ctx, fresh(), stale())
	wantConflict(t, err, "b", 1)
	untouched("stale stream last")

	_, err = s.AppendStreams(ctx, stale(), fresh())
	wantConflict(t, err, "b", 1)
	untouched("stale stream first")

	newStream := eventstore.StreamAppend{StreamID: "c", ExpectedVersion: 0, Events: []eventstore.Event{Event("C", `1`)}}
	staleA := eventstore.StreamAppend{StreamID: "a", ExpectedVersion: 0, Events: []eventstore.Event{Event("New", `1`)}}
	_, err = s.AppendStreams(ctx, newStream, staleA, stale())
	wantConflict(t, err, "a", 0) // the first stale stream in the order given
	untouched("two stale streams and a new one")

	mustAppendStreams(t, s, fresh(), eventstore.StreamAppend{StreamID: "b", ExpectedVersion: 2, Events: []eventstore.Event{Event("New", `3`)}})
	if got := mustRead(t, s, "a", 0); fmt.Sprint(versions(got)) != "[1 2 3]" {
		t.Errorf("after an append at the right versions stream a holds %v, want [1 2 3]", versions(got))
	}
	if got := mustRead(t, s, "b", 0); fmt.Sprint(versions(got)) != "[1 2 3]" {
		t.Errorf("after an append at the right versions stream b holds %v, want [1 2 3]", versions(got))
	}
}

// MultiContentionRounds sizes testMultiContention, which runs ContentionWriters
// writers in each round.
const MultiContentionRounds = 10

// testMultiContention has every writer append, in each round, to one shared stream at
// the same version and to a stream of its own at that stream's current version: the
// shared stream lets exactly one of them win, and a loser's own stream must not
// change.
func testMultiContention(t *testing.T, s eventstore.MultiStreamStore) {
	const shared = "shared"
	own := func(w int) string { return fmt.Sprintf("writer-%d", w) }
	version := int64(0)
	ownVersions := make([]int64, ContentionWriters)
	wonEvents := make([][]string, ContentionWriters) // ids each writer's wins appended to its own stream
	var sharedEvents []string
	for round := 1; round <= MultiContentionRounds; round++ {
		perOwn := 1 + round%2
		var wins, conflicts atomic.Int64
		var mu sync.Mutex
		var others []error
		var winner []eventstore.Record
		winnerOf := -1
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range ContentionWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := eventstore.StreamAppend{StreamID: own(w), ExpectedVersion: ownVersions[w]}
				for range perOwn {
					mine.Events = append(mine.Events, Event("Own", fmt.Sprintf(`{"round":%d,"writer":%d}`, round, w)))
				}
				contended := eventstore.StreamAppend{StreamID: shared, ExpectedVersion: version,
					Events: []eventstore.Event{Event("Shared", fmt.Sprintf(`{"round":%d,"writer":%d}`, round, w))}}
				appends := []eventstore.StreamAppend{contended, mine}
				if round%2 == 0 {
					appends = []eventstore.StreamAppend{mine, contended} // the contended item last
				}
				<-start
				recs, err := s.AppendStreams(ctx, appends...)
				var conflict *eventstore.ConflictError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins.Add(1)
					winner, winnerOf = recs, w
				case errors.As(err, &conflict) && errors.Is(err, eventstore.ErrConcurrency) &&
					conflict.StreamID == shared && conflict.ExpectedVersion == version:
					conflicts.Add(1)
				default:
					others = append(others, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(others) > 0 {
			t.Fatalf("round %d: %d appends failed other than with a conflict on %s at %d, first: %v", round, len(others), shared, version, others[0])
		}
		if wins.Load() != 1 || conflicts.Load() != ContentionWriters-1 {
			t.Fatalf("round %d: %d wins and %d conflicts, want 1 and %d", round, wins.Load(), conflicts.Load(), ContentionWriters-1)
		}
		if len(winner) != 1+perOwn {
			t.Fatalf("round %d: the winner got %d records back, want %d", round, len(winner), 1+perOwn)
		}
		for _, r := range winner {
			switch r.StreamID {
			case shared:
				sharedEvents = append(sharedEvents, r.ID)
			case own(winnerOf):
				wonEvents[winnerOf] = append(wonEvents[winnerOf], r.ID)
			default:
				t.Fatalf("round %d: the winner got back a record of stream %s", round, r.StreamID)
			}
		}
		version++
		ownVersions[winnerOf] += int64(perOwn)
	}
	got := mustRead(t, s, shared, 0)
	if fmt.Sprint(eventIDs(got)) != fmt.Sprint(sharedEvents) {
		t.Fatalf("stream %s holds %v (ids %v), want the winners' %v", shared, versions(got), eventIDs(got), sharedEvents)
	}
	for w := range ContentionWriters {
		got := mustRead(t, s, own(w), 0)
		if fmt.Sprint(eventIDs(got)) != fmt.Sprint(wonEvents[w]) {
			t.Fatalf("stream %s holds %d events (ids %v), want the %d its wins appended (%v): a losing append wrote to it",
				own(w), len(got), eventIDs(got), len(wonEvents[w]), wonEvents[w])
		}
		for i, r := range got {
			if r.Version != int64(i+1) {
				t.Fatalf("stream %s: position %d holds version %d", own(w), i, r.Version)
			}
		}
	}
}

func testMultiSameStreamTwice(t *testing.T, s eventstore.MultiStreamStore) {
	for _, tc := range []struct {
		name    string
		appends []eventstore.StreamAppend
	}{
		{"at consecutive versions", []eventstore.StreamAppend{
			{StreamID: "s", ExpectedVersion: 0, Events: []eventstore.Event{Event("E", `1`)}},
			{StreamID: "s", ExpectedVersion: 1, Events: []eventstore.Event{Event("E", `2`)}},
		}},
		{"at the same version", []eventstore.StreamAppend{
			{StreamID: "s", ExpectedVersion: 0, Events: []eventstore.Event{Event("E", `1`)}},
			{StreamID: "other", ExpectedVersion: 0, Events: []eventstore.Event{Event("E", `1`)}},
			{StreamID: "s", ExpectedVersion: 0, Events: []eventstore.Event{Event("E", `1`)}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AppendStreams(ctx, tc.appends...)
			if !errors.Is(err, eventstore.ErrDuplicateStream) || !errors.Is(err, eventstore.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrDuplicateStream (and ErrInvalidInput)", err)
			}
			for _, stream := range []string{"s", "other"} {
				if got := mustRead(t, s, stream, 0); len(got) != 0 {
					t.Fatalf("a refused append wrote %d events to %s", len(got), stream)
				}
			}
		})
	}
}

// MultiBadInput is one AppendStreams that must be refused.
type MultiBadInput struct {
	Name    string
	Appends []eventstore.StreamAppend
	Err     error
}

// MultiBadInputs are the AppendStreams calls every MultiStreamStore must refuse before
// writing anything, each with the error it must match. Each part that is valid on its
// own, whatever its stream id, is one Append would accept.
func MultiBadInputs() []MultiBadInput {
	events := func(n int, data string) []eventstore.Event {
		out := make([]eventstore.Event, n)
		for i := range out {
			out[i] = Event("E", data)
		}
		return out
	}
	one := func(stream string) eventstore.StreamAppend {
		return eventstore.StreamAppend{StreamID: stream, Events: events(1, `1`)}
	}
	nearlyBig := `"` + strings.Repeat("x", 390*1024) + `"`
	shared := Event("E", `1`)
	return []MultiBadInput{
		{"no streams", nil, eventstore.ErrNoEvents},
		{"a stream with no events", []eventstore.StreamAppend{one("m1"), {StreamID: "m2"}}, eventstore.ErrNoEvents},
		{"the same stream twice", []eventstore.StreamAppend{one("m1"), one("m2"), one("m1")}, eventstore.ErrDuplicateStream},
		{"more events in all than one transaction holds", []eventstore.StreamAppend{
			{StreamID: "m1", Events: events(60, `1`)}, {StreamID: "m2", Events: events(eventstore.MaxEventsPerAppend-60+1, `1`)},
		}, eventstore.ErrTooManyEvents},
		{"over 4 MB in all", []eventstore.StreamAppend{
			{StreamID: "m1", Events: events(6, nearlyBig)}, {StreamID: "m2", Events: events(5, nearlyBig)},
		}, eventstore.ErrAppendTooLarge},
		{"one event id in two streams", []eventstore.StreamAppend{
			{StreamID: "m1", Events: []eventstore.Event{shared}}, {StreamID: "m2", Events: []eventstore.Event{shared}},
		}, eventstore.ErrInvalidEvent},
		{"an invalid stream id after a valid one", []eventstore.StreamAppend{one("m1"), one("")}, eventstore.ErrInvalidStreamID},
		{"a negative expected version after a valid one", []eventstore.StreamAppend{
			one("m1"), {StreamID: "m2", ExpectedVersion: -1, Events: events(1, `1`)},
		}, eventstore.ErrInvalidVersion},
		{"an invalid payload in the last stream", []eventstore.StreamAppend{
			one("m1"), {StreamID: "m2", Events: []eventstore.Event{Event("E", `1`), Event("E", `nope`)}},
		}, eventstore.ErrInvalidPayload},
		{"an event over the item limit", []eventstore.StreamAppend{
			one("m1"), {StreamID: "m2", Events: events(1, `"`+strings.Repeat("x", eventstore.MaxRecordBytes)+`"`)},
		}, eventstore.ErrRecordTooLarge},
	}
}

func testMultiBadInput(t *testing.T, s eventstore.MultiStreamStore) {
	for _, tc := range MultiBadInputs() {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := s.AppendStreams(ctx, tc.Appends...)
			if !errors.Is(err, tc.Err) || !errors.Is(err, eventstore.ErrInvalidInput) {
				t.Fatalf("err = %v, want %v (and ErrInvalidInput)", err, tc.Err)
			}
			if errors.Is(err, eventstore.ErrConcurrency) {
				t.Fatalf("bad input reported as a concurrency conflict: %v", err)
			}
			for _, a := range tc.Appends {
				if eventstore.ValidateStreamID(a.StreamID) != nil {
					continue
				}
				if got := mustRead(t, s, a.StreamID, 0); len(got) != 0 {
					t.Fatalf("a refused append wrote %d events to %s", len(got), a.StreamID)
				}
			}
		})
	}
}
