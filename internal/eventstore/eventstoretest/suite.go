// Package eventstoretest is the contract every eventstore.Store must keep, as one test
// suite and one set of benchmarks that each implementation runs against itself.
package eventstoretest

import (
	"context"
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

// NewStore returns an empty store for one test.
type NewStore func(t testing.TB) eventstore.Store

// Run runs the contract suite against the stores newStore makes: the Store contract,
// then the contracts of eventstore.MultiStreamStore and eventstore.BackwardReader,
// whose tests are skipped for a store that does not implement them. A store meant to
// implement them should also be checked with RequireEveryCapability, so that they
// cannot be skipped unnoticed.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		run  func(*testing.T, eventstore.Store)
	}{
		{"RoundTripOfEveryField", testRoundTrip},
		{"StampsUnstampedEvents", testStamps},
		{"ReadUnknownStream", testReadUnknown},
		{"ReadFromVersion", testReadFromVersion},
		{"ReadPastOnePage", testReadLarge},
		{"StaleVersionWritesNothing", testStaleVersion},
		{"MultiEventAppendIsAllOrNothing", testAllOrNothing},
		{"StreamsAreIndependent", testIndependentStreams},
		{"ContentionOneWinnerPerRound", testContention},
		{"ExecuteConvergesUnderContention", testExecuteContention},
		{"BadInputIsRejected", testBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
	multi := []struct {
		name string
		run  func(*testing.T, eventstore.MultiStreamStore)
	}{
		{"AppendStreamsRoundTrip", testMultiRoundTrip},
		{"AppendStreamsStaleVersionWritesNothing", testMultiStaleVersion},
		{"AppendStreamsContentionOneWinnerPerRound", testMultiContention},
		{"AppendStreamsSameStreamTwiceIsRefused", testMultiSameStreamTwice},
		{"AppendStreamsBadInputIsRejected", testMultiBadInput},
	}
	for _, tc := range multi {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := newStore(t).(eventstore.MultiStreamStore)
			if !ok {
				t.Skip("the store does not implement eventstore.MultiStreamStore")
			}
			tc.run(t, s)
		})
	}
	backward := []struct {
		name string
		run  func(*testing.T, eventstore.Store, eventstore.BackwardReader)
	}{
		{"ReadBackwardPages", testBackwardPages},
		{"ReadBackwardUnknownStream", testBackwardUnknown},
		{"ReadBackwardPastShortPages", testBackwardLarge},
		{"ReadBackwardBadInputIsRejected", testBackwardBadInput},
	}
	for _, tc := range backward {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			r, ok := s.(eventstore.BackwardReader)
			if !ok {
				t.Skip("the store does not implement eventstore.BackwardReader")
			}
			tc.run(t, s, r)
		})
	}
}

// RequireEveryCapability fails the test unless s implements every optional interface
// of package eventstore, whose contract tests Run would otherwise skip.
func RequireEveryCapability(t testing.TB, s eventstore.Store) {
	t.Helper()
	if _, ok := s.(eventstore.MultiStreamStore); !ok {
		t.Errorf("%T does not implement eventstore.MultiStreamStore", s)
	}
	if _, ok := s.(eventstore.BackwardReader); !ok {
		t.Errorf("%T does not implement eventstore.BackwardReader", s)
	}
}

var ctx = context.Background()

// Event returns a valid event with a unique id and the given type and JSON data.
func Event(typ string, data string) eventstore.Event {
	return eventstore.Event{ID: newID(), Type: typ, Data: json.RawMessage(data)}
}

var ids atomic.Int64

func newID() string { return fmt.Sprintf("evt-%d-%d", time.Now().UnixNano(), ids.Add(1)) }

func mustAppend(t testing.TB, s eventstore.Store, stream string, expected int64, events ...eventstore.Event) []eventstore.Record {
	t.Helper()
	recs, err := s.Append(ctx, stream, expected, events...)
	if err != nil {
		t.Fatalf("append to %s at %d: %v", stream, expected, err)
	}
	return recs
}

func mustRead(t testing.TB, s eventstore.Store, stream string, from int64) []eventstore.Record {
	t.Helper()
	recs, err := s.Read(ctx, stream, from)
	if err != nil {
		t.Fatalf("read %s from %d: %v", stream, from, err)
	}
	return recs
}

func versions(recs []eventstore.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Version
	}
	return out
}

func sameRecord(a, b eventstore.Record) bool {
	return a.StreamID == b.StreamID && a.Version == b.Version && a.ID == b.ID && a.Type == b.Type &&
		string(a.Data) == string(b.Data) && strings.Join(a.Tags, "\x00") == strings.Join(b.Tags, "\x00") &&
		len(a.Tags) == len(b.Tags) && a.RecordedAt.Equal(b.RecordedAt) &&
		a.CorrelationID == b.CorrelationID && a.CausationID == b.CausationID
}

func testRoundTrip(t *testing.T, s eventstore.Store) {
	at := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))
	in := []eventstore.Event{{
		ID:            "3f1c9a6e-0d7b-4a51-9a55-2b1f0c7e8d42",
		Type:          "ItemRequested",
		Data:          json.RawMessage(`{"bikeId":"b-1","renter":"Zoë Ångström ✓","nested":{"n":[1,2.5,null,true]}}`),
		Tags:          []string{"rental:r-1", "bike:b-1"},
		RecordedAt:    at,
		CorrelationID: "corr-1",
		CausationID:   "cmd-1",
	}, {
		ID:   "second",
		Type: "ItemApproved",
		Data: json.RawMessage(`{}`),
	}}
	appended := mustAppend(t, s, "bike-b-1", 0, in...)
	got := mustRead(t, s, "bike-b-1", 0)
	if len(got) != 2 || len(appended) != 2 {
		t.Fatalf("read %d records and appended %d, want 2 and 2", len(got), len(appended))
	}
	for i := range got {
		if !sameRecord(got[i], appended[i]) {
			t.Errorf("record %d read back as\n%+v\nappend returned\n%+v", i, got[i], appended[i])
		}
	}
	want := eventstore.Record{StreamID: "bike-b-1", Version: 1, Event: in[0]}
	if !sameRecord(got[0], want) {
		t.Errorf("record read back as\n%+v\nwant\n%+v", got[0], want)
	}
	if got[0].RecordedAt.Location() != time.UTC {
		t.Errorf("RecordedAt location = %v, want UTC", got[0].RecordedAt.Location())
	}
	if got[1].Version != 2 || len(got[1].Tags) != 0 || got[1].CorrelationID != "" || got[1].CausationID != "" {
		t.Errorf("second record = %+v, want version 2 with no tags, correlation or causation", got[1])
	}
}

func testStamps(t *testing.T, s eventstore.Store) {
	before := time.Now().Add(-time.Second)
	recs := mustAppend(t, s, "s", 0, Event("E", `1`))
	after := time.Now().Add(time.Second)
	got := mustRead(t, s, "s", 0)
	for _, r := range []eventstore.Record{recs[0], got[0]} {
		if r.RecordedAt.Before(before) || r.RecordedAt.After(after) {
			t.Errorf("RecordedAt = %v, want between %v and %v", r.RecordedAt, before, after)
		}
	}
	if !recs[0].RecordedAt.Equal(got[0].RecordedAt) {
		t.Errorf("append returned RecordedAt %v, read returned %v", recs[0].RecordedAt, got[0].RecordedAt)
	}
}

func testReadUnknown(t *testing.T, s eventstore.Store) {
	if got := mustRead(t, s, "never-written", 0); len(got) != 0 {
		t.Errorf("unknown stream read as %d records, want none", len(got))
	}
	mustAppend(t, s, "written", 0, Event("E", `1`))
	if got := mustRead(t, s, "written", 2); len(got) != 0 {
		t.Errorf("reading past the end returned %v, want nothing", versions(got))
	}
}

func testReadFromVersion(t *testing.T, s eventstore.Store) {
	for v := int64(0); v < 5; v++ {
		mustAppend(t, s, "s", v, Event("E", fmt.Sprint(v+1)))
	}
	for _, tc := range []struct {
		from int64
		want string
	}{{0, "[1 2 3 4 5]"}, {1, "[1 2 3 4 5]"}, {3, "[3 4 5]"}, {5, "[5]"}, {6, "[]"}} {
		got := mustRead(t, s, "s", tc.from)
		if fmt.Sprint(versions(got)) != tc.want {
			t.Errorf("read from %d = %v, want %s", tc.from, versions(got), tc.want)
		}
		for _, r := range got {
			if string(r.Data) != fmt.Sprint(r.Version) {
				t.Errorf("version %d holds %s", r.Version, r.Data)
			}
		}
	}
}

// LargeStreamEvents and LargeStreamPayload size the stream of testReadLarge: well over
// the 1 MB DynamoDB returns in one Query page.
const (
	LargeStreamEvents  = 24
	LargeStreamPayload = 100 * 1024
)

func testReadLarge(t *testing.T, s eventstore.Store) {
	WriteLargeStream(t, s, "big")
	got := mustRead(t, s, "big", 0)
	if len(got) != LargeStreamEvents {
		t.Fatalf("read %d records, want %d", len(got), LargeStreamEvents)
	}
	for i, r := range got {
		if r.Version != int64(i+1) || len(r.Data) != LargeStreamPayload+2 || r.Data[1] != byte('a'+i%26) {
			t.Fatalf("record %d: version %d, %d bytes starting %q", i, r.Version, len(r.Data), r.Data[:2])
		}
	}
}

// WriteLargeStream writes LargeStreamEvents events of LargeStreamPayload bytes each.
func WriteLargeStream(t testing.TB, s eventstore.Store, stream string) {
	t.Helper()
	var batch []eventstore.Event
	version := int64(0)
	for i := range LargeStreamEvents {
		payload := `"` + strings.Repeat(string(rune('a'+i%26)), LargeStreamPayload) + `"`
		batch = append(batch, Event("Big", payload))
		if len(batch) == 8 || i == LargeStreamEvents-1 {
			mustAppend(t, s, stream, version, batch...)
			version += int64(len(batch))
			batch = nil
		}
	}
}

func testStaleVersion(t *testing.T, s eventstore.Store) {
	first := mustAppend(t, s, "s", 0, Event("First", `1`))
	for _, events := range [][]eventstore.Event{
		{Event("Stale", `2`)},
		{Event("Stale", `2`), Event("Stale", `3`)},
	} {
		_, err := s.Append(ctx, "s", 0, events...)
		if !errors.Is(err, eventstore.ErrConcurrency) {
			t.Fatalf("append of %d events at stale version 0: err = %v, want ErrConcurrency", len(events), err)
		}
		var conflict *eventstore.ConflictError
		if !errors.As(err, &conflict) || conflict.StreamID != "s" || conflict.ExpectedVersion != 0 {
			t.Errorf("error %v is not a ConflictError for stream s at 0", err)
		}
	}
	got := mustRead(t, s, "s", 0)
	if len(got) != 1 || got[0].ID != first[0].ID {
		t.Errorf("after stale appends the stream holds %v, want only the first event", versions(got))
	}
}

func testAllOrNothing(t *testing.T, s eventstore.Store) {
	mustAppend(t, s, "s", 0, Event("A", `1`), Event("A", `2`))
	// Versions 2, 3 and 4: version 2 is taken, so 3 and 4 must not be written either.
	_, err := s.Append(ctx, "s", 1, Event("B", `2`), Event("B", `3`), Event("B", `4`))
	if !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("append over a taken version: err = %v, want ErrConcurrency", err)
	}
	got := mustRead(t, s, "s", 0)
	if fmt.Sprint(versions(got)) != "[1 2]" || got[1].Type != "A" {
		t.Errorf("stream holds %v (last type %s), want [1 2] of type A", versions(got), got[len(got)-1].Type)
	}
	mustAppend(t, s, "s", 2, Event("C", `3`), Event("C", `4`))
	if got := mustRead(t, s, "s", 0); fmt.Sprint(versions(got)) != "[1 2 3 4]" {
		t.Errorf("stream holds %v, want [1 2 3 4]", versions(got))
	}
}

func testIndependentStreams(t *testing.T, s eventstore.Store) {
	mustAppend(t, s, "a", 0, Event("A", `1`))
	mustAppend(t, s, "b", 0, Event("B", `1`))
	if got := mustRead(t, s, "a", 0); len(got) != 1 || got[0].Type != "A" {
		t.Errorf("stream a = %+v", got)
	}
	if got := mustRead(t, s, "b", 0); len(got) != 1 || got[0].Type != "B" {
		t.Errorf("stream b = %+v", got)
	}
}

// Contention sizes testContention.
const (
	ContentionWriters = 50
	ContentionRounds  = 20
)

func testContention(t *testing.T, s eventstore.Store) {
	version := int64(0)
	seen := make(map[string]bool)
	for round := 1; round <= ContentionRounds; round++ {
		perAppend := 1 + round%2 // alternate single puts and two-event transactions
		var wins, conflicts atomic.Int64
		var winner atomic.Value
		var others []error
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range ContentionWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				events := make([]eventstore.Event, perAppend)
				for i := range events {
					events[i] = Event("Contended", fmt.Sprintf(`{"round":%d,"writer":%d}`, round, w))
				}
				<-start
				recs, err := s.Append(ctx, "contended", version, events...)
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(recs)
				case errors.Is(err, eventstore.ErrConcurrency):
					conflicts.Add(1)
				default:
					mu.Lock()
					others = append(others, err)
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(others) > 0 {
			t.Fatalf("round %d: %d appends failed with other errors, first: %v", round, len(others), others[0])
		}
		if wins.Load() != 1 || conflicts.Load() != ContentionWriters-1 {
			t.Fatalf("round %d: %d wins and %d conflicts, want 1 and %d", round, wins.Load(), conflicts.Load(), ContentionWriters-1)
		}
		for _, r := range winner.Load().([]eventstore.Record) {
			seen[r.ID] = true
		}
		version += int64(perAppend)
	}
	got := mustRead(t, s, "contended", 0)
	if int64(len(got)) != version {
		t.Fatalf("stream holds %d events, want %d", len(got), version)
	}
	for i, r := range got {
		if r.Version != int64(i+1) {
			t.Fatalf("position %d holds version %d: versions are not contiguous", i, r.Version)
		}
		if !seen[r.ID] {
			t.Fatalf("version %d holds event %s, which no winner appended", r.Version, r.ID)
		}
		delete(seen, r.ID)
	}
	if len(seen) != 0 {
		t.Fatalf("%d events reported appended are missing from the stream", len(seen))
	}
}

func testExecuteContention(t *testing.T, s eventstore.Store) {
	const writers = 10
	policy := eventstore.RetryPolicy{MaxAttempts: 100, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := eventstore.Execute(ctx, s, "counter", func(history []eventstore.Record) ([]eventstore.Event, error) {
				return []eventstore.Event{Event("Incremented", fmt.Sprintf(`{"writer":%d,"seen":%d}`, w, len(history)))}, nil
			}, policy)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
	}
	got := mustRead(t, s, "counter", 0)
	if len(got) != writers {
		t.Fatalf("stream holds %d events, want %d", len(got), writers)
	}
	for i, r := range got {
		var d struct{ Seen int }
		if err := json.Unmarshal(r.Data, &d); err != nil || d.Seen != i {
			t.Errorf("event %d decided on a history of %d events (err %v), want %d", i+1, d.Seen, err, i)
		}
	}
}

// BadInputs are the Appends every store must refuse before writing anything, each
// with the error it must match.
func BadInputs() []BadInput {
	big := `"` + strings.Repeat("x", eventstore.MaxRecordBytes) + `"`
	nearlyBig := `"` + strings.Repeat("x", 390*1024) + `"`
	many := make([]eventstore.Event, eventstore.MaxEventsPerAppend+1)
	for i := range many {
		many[i] = Event("E", `1`)
	}
	heavy := make([]eventstore.Event, 11)
	for i := range heavy {
		heavy[i] = Event("E", nearlyBig)
	}
	dup := Event("E", `1`)
	return []BadInput{
		{"empty stream id", "", 0, []eventstore.Event{Event("E", `1`)}, eventstore.ErrInvalidStreamID},
		{"over-long stream id", strings.Repeat("s", eventstore.MaxStreamIDBytes+1), 0, []eventstore.Event{Event("E", `1`)}, eventstore.ErrInvalidStreamID},
		{"stream id not UTF-8", "bike-\xff", 0, []eventstore.Event{Event("E", `1`)}, eventstore.ErrInvalidStreamID},
		{"negative expected version", "s", -1, []eventstore.Event{Event("E", `1`)}, eventstore.ErrInvalidVersion},
		{"no events", "s", 0, nil, eventstore.ErrNoEvents},
		{"more events than one transaction holds", "s", 0, many, eventstore.ErrTooManyEvents},
		{"event over the item limit", "s", 0, []eventstore.Event{Event("E", big)}, eventstore.ErrRecordTooLarge},
		{"append over 4 MB", "s", 0, heavy, eventstore.ErrAppendTooLarge},
		{"invalid JSON payload", "s", 0, []eventstore.Event{Event("E", `{"a":`)}, eventstore.ErrInvalidPayload},
		{"empty payload", "s", 0, []eventstore.Event{Event("E", ``)}, eventstore.ErrInvalidPayload},
		{"missing event id", "s", 0, []eventstore.Event{{Type: "E", Data: json.RawMessage(`1`)}}, eventstore.ErrInvalidEvent},
		{"missing event type", "s", 0, []eventstore.Event{{ID: "x", Data: json.RawMessage(`1`)}}, eventstore.ErrInvalidEvent},
		{"empty tag", "s", 0, []eventstore.Event{{ID: "x", Type: "E", Data: json.RawMessage(`1`), Tags: []string{""}}}, eventstore.ErrInvalidEvent},
		{"same event twice", "s", 0, []eventstore.Event{dup, dup}, eventstore.ErrInvalidEvent},
		{"one bad event among good ones", "s", 0, []eventstore.Event{Event("E", `1`), Event("E", `nope`)}, eventstore.ErrInvalidPayload},
	}
}

// BadInput is one Append that must be refused.
type BadInput struct {
	Name     string
	StreamID string
	Expected int64
	Events   []eventstore.Event
	Err      error
}

func testBadInput(t *testing.T, s eventstore.Store) {
	for _, tc := range BadInputs() {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := s.Append(ctx, tc.StreamID, tc.Expected, tc.Events...)
			if !errors.Is(err, tc.Err) || !errors.Is(err, eventstore.ErrInvalidInput) {
				t.Fatalf("err = %v, want %v (and ErrInvalidInput)", err, tc.Err)
			}
			if errors.Is(err, eventstore.ErrConcurrency) {
				t.Fatalf("bad input reported as a concurrency conflict: %v", err)
			}
			if tc.StreamID != "" && !errors.Is(tc.Err, eventstore.ErrInvalidStreamID) {
				if got := mustRead(t, s, tc.StreamID, 0); len(got) != 0 {
					t.Fatalf("a refused append wrote %d events", len(got))
				}
			}
		})
	}
	for _, tc := range []struct {
		name   string
		stream string
		from   int64
		want   error
	}{
		{"read empty stream id", "", 0, eventstore.ErrInvalidStreamID},
		{"read negative version", "s", -1, eventstore.ErrInvalidVersion},
	} {
		if _, err := s.Read(ctx, tc.stream, tc.from); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}
