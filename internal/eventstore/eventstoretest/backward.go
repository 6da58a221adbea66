package eventstoretest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bikerental/bikerental/internal/eventstore"
)

func mustReadBackward(t testing.TB, r eventstore.BackwardReader, stream string, before int64, limit int) []eventstore.Record {
	t.Helper()
	recs, err := r.ReadBackward(ctx, stream, before, limit)
	if err != nil {
		t.Fatalf("read %s backward before %d, limit %d: %v", stream, before, limit, err)
	}
	return recs
}

// BackwardStreamEvents is the length of the stream testBackwardPages pages through.
const BackwardStreamEvents = 25

func testBackwardPages(t *testing.T, s eventstore.Store, r eventstore.BackwardReader) {
	var written []eventstore.Record
	for v := int64(0); v < BackwardStreamEvents; v += 10 {
		var batch []eventstore.Event
		for i := v; i < min(v+10, BackwardStreamEvents); i++ {
			batch = append(batch, Event("E", fmt.Sprint(i+1)))
		}
		written = append(written, mustAppend(t, s, "s", v, batch...)...)
	}
	check := func(what string, got []eventstore.Record, want string) {
		t.Helper()
		if fmt.Sprint(versions(got)) != want {
			t.Fatalf("%s: versions %v, want %s", what, versions(got), want)
		}
		for _, rec := range got {
			if !sameRecord(rec, written[rec.Version-1]) {
				t.Fatalf("%s: version %d read back as\n%+v\nappended as\n%+v", what, rec.Version, rec, written[rec.Version-1])
			}
		}
	}

	// Page by the cursor, as a caller would: each page's oldest version bounds the next.
	pages := []string{
		"[25 24 23 22 21 20 19 18 17 16]",
		"[15 14 13 12 11 10 9 8 7 6]",
		"[5 4 3 2 1]",
		"[]",
	}
	before := int64(0)
	for i, want := range pages {
		got := mustReadBackward(t, r, "s", before, 10)
		check(fmt.Sprintf("page %d (before %d)", i+1, before), got, want)
		if len(got) > 0 {
			before = got[len(got)-1].Version
		} else if before != 1 {
			t.Fatalf("page %d is empty with cursor %d, want the cursor at 1", i+1, before)
		}
	}

	for _, tc := range []struct {
		before int64
		limit  int
		want   string
	}{
		{0, 1, "[25]"},
		{25, 3, "[24 23 22]"},
		{26, 2, "[25 24]"},
		{1000, 2, "[25 24]"},
		{1, 10, "[]"},
		{4, 10, "[3 2 1]"},
		{0, eventstore.MaxReadBackwardLimit, fmt.Sprint(versions(reversed(written)))},
	} {
		check(fmt.Sprintf("before %d, limit %d", tc.before, tc.limit), mustReadBackward(t, r, "s", tc.before, tc.limit), tc.want)
	}
}

func reversed(recs []eventstore.Record) []eventstore.Record {
	out := make([]eventstore.Record, len(recs))
	for i, r := range recs {
		out[len(recs)-1-i] = r
	}
	return out
}

func testBackwardUnknown(t *testing.T, s eventstore.Store, r eventstore.BackwardReader) {
	mustAppend(t, s, "written", 0, Event("E", `1`))
	for _, before := range []int64{0, 1, 5} {
		if got := mustReadBackward(t, r, "never-written", before, 10); len(got) != 0 {
			t.Errorf("unknown stream before %d read as %v, want nothing", before, versions(got))
		}
	}
}

// testBackwardLarge reads more items than one DynamoDB page of 1 MB holds.
func testBackwardLarge(t *testing.T, s eventstore.Store, r eventstore.BackwardReader) {
	WriteLargeStream(t, s, "big")
	const limit = LargeStreamEvents - 4
	got := mustReadBackward(t, r, "big", 0, limit)
	if len(got) != limit {
		t.Fatalf("read %d records, want %d", len(got), limit)
	}
	for i, rec := range got {
		v := LargeStreamEvents - i
		if rec.Version != int64(v) || len(rec.Data) != LargeStreamPayload+2 || rec.Data[1] != byte('a'+(v-1)%26) {
			t.Fatalf("record %d: version %d, %d bytes starting %q, want version %d", i, rec.Version, len(rec.Data), rec.Data[:2], v)
		}
	}
	if rest := mustReadBackward(t, r, "big", got[len(got)-1].Version, limit); fmt.Sprint(versions(rest)) != "[4 3 2 1]" {
		t.Fatalf("the next page holds %v, want [4 3 2 1]", versions(rest))
	}
}

// BackwardBadInput is one ReadBackward that must be refused.
type BackwardBadInput struct {
	Name     string
	StreamID string
	Before   int64
	Limit    int
	Err      error
}

// BackwardBadInputs are the ReadBackward calls every BackwardReader must refuse, each
// with the error it must match.
func BackwardBadInputs() []BackwardBadInput {
	return []BackwardBadInput{
		{"zero limit", "s", 0, 0, eventstore.ErrInvalidLimit},
		{"negative limit", "s", 0, -1, eventstore.ErrInvalidLimit},
		{"limit over the maximum", "s", 0, eventstore.MaxReadBackwardLimit + 1, eventstore.ErrInvalidLimit},
		{"negative beforeVersion", "s", -1, 10, eventstore.ErrInvalidVersion},
		{"empty stream id", "", 0, 10, eventstore.ErrInvalidStreamID},
		{"stream id not UTF-8", "bike-\xff", 0, 10, eventstore.ErrInvalidStreamID},
	}
}

func testBackwardBadInput(t *testing.T, s eventstore.Store, r eventstore.BackwardReader) {
	mustAppend(t, s, "s", 0, Event("E", `1`))
	for _, tc := range BackwardBadInputs() {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := r.ReadBackward(ctx, tc.StreamID, tc.Before, tc.Limit)
			if !errors.Is(err, tc.Err) || !errors.Is(err, eventstore.ErrInvalidInput) {
				t.Fatalf("err = %v, want %v (and ErrInvalidInput)", err, tc.Err)
			}
			if got != nil {
				t.Fatalf("a refused read returned %d records", len(got))
			}
		})
	}
}
