package deadlinestest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// NewProjection returns a fresh, empty projection over kinds, for one case.
type NewProjection func(t *testing.T, kinds deadlines.Kinds) deadlines.Projection

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Run runs the contract, each case as a subtest on a fresh projection from
// newProjection.
func Run(t *testing.T, newProjection NewProjection) {
	for _, c := range []struct {
		name  string
		kinds deadlines.Kinds
		run   func(t *testing.T, s deadlines.Projection)
	}{
		{"ARowIsDueAfterItsKindsDurationUntilSettled", TestKinds, aRowIsDueUntilSettled},
		{"ASettledRowNeverComesBack", TestKinds, aSettledRowNeverComesBack},
		{"ACorruptRecordIsRefusedAndChangesNothing", TestKinds, aCorruptRecordIsRefused},
		{"EachKindsRowsAreReadAloneInDueOrderWithinTheSpan", TestKinds, eachKindIsReadAlone},
		{"TheListShowsTheOverdueFirstByKind", TestKinds, theListShowsTheOverdueFirst},
		{"PagesOfTheListGoOnWhereTheTokenSaysEachRowOnce", TestKinds, pagesGoOnWhereTheTokenSays},
		{"APageReadsOnePastItsLimitFromEachShard", TestKinds, aPageReadsOnePastItsLimit},
		{"ABadQueryIsRefused", TestKinds, aBadQueryIsRefused},
		{"AKindTakesAnotherKindsRowOver", TestKinds, aKindTakesAnotherKindsRowOver},
		{"AByHandKindTakesARowOverOutOfTheSweptRowsAndListsItAsBefore", billKinds, aByHandKindTakesARowOver},
		{"AnOrderedKindsNewerOpeningAdvancesItsRowInAnyOrder", TestKinds, anOrderedKindsNewerOpeningAdvances},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newProjection(t, c.kinds)) })
	}
}

func applyAll(t *testing.T, s deadlines.Projection, recs ...deadlines.Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Apply(context.Background(), r); err != nil {
			t.Fatalf("apply %s %s: %v", r.Type, r.Data, err)
		}
	}
}

// rowsOf returns the rows of k in span (its Kind set to k), from every shard,
// checking that each shard gives k's rows alone, in due order, reading no more
// items than it gives.
func rowsOf(t *testing.T, s deadlines.Index, k deadlines.Kind, span deadlines.Span) []deadlines.Row {
	t.Helper()
	var out []deadlines.Row
	span.Kind = k
	for shard := range s.Shards() {
		span.Shard = shard
		var last time.Time
		given := 0
		read, err := s.Rows(context.Background(), span, func(rows []deadlines.Row) bool {
			for _, r := range rows {
				if r.Due.Before(last) || r.Kind != k.Name || !span.Has(r.Due) {
					t.Errorf("kind %s shard %d: %s:%s due %v (after one due %v; span %v to %v)", k.Name, shard, r.Kind, r.Subject, r.Due, last, span.From, span.Before)
				}
				last = r.Due
				out = append(out, r)
				given++
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if read > given {
			t.Errorf("kind %s shard %d: read %d items for %d rows", k.Name, shard, read, given)
		}
	}
	deadlines.SortRows(out)
	return out
}

// overdue returns the rows of kinds overdue at now, as kind:subject.
func overdue(t *testing.T, s deadlines.Index, kinds deadlines.Kinds, now time.Time) []string {
	t.Helper()
	var out []deadlines.Row
	for _, k := range kinds.All() {
		out = append(out, rowsOf(t, s, k, deadlines.Span{Before: now})...)
	}
	return names(out)
}

// everything returns every outstanding row of kinds, as kind:subject, sorted.
func everything(t *testing.T, s deadlines.Index, kinds deadlines.Kinds) []string {
	t.Helper()
	out := overdue(t, s, kinds, time.Time{})
	slices.Sort(out)
	return out
}

func names(rows []deadlines.Row) []string {
	deadlines.SortRows(rows)
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Kind+":"+r.Subject)
	}
	return out
}

func wantRow(t *testing.T, s deadlines.Index, k deadlines.Kind, subject string, due time.Time) {
	t.Helper()
	row, ok, err := s.Row(context.Background(), k, subject)
	if want := (deadlines.Row{Kind: k.Name, Subject: subject, Due: due}); err != nil || !ok || row != want {
		t.Errorf("Row(%s, %s) = %+v, %v, %v; want %+v", k.Name, subject, row, ok, err, want)
	}
}

func wantNoRow(t *testing.T, s deadlines.Index, k deadlines.Kind, subject string) {
	t.Helper()
	if row, ok, err := s.Row(context.Background(), k, subject); err != nil || ok {
		t.Errorf("Row(%s, %s) = %+v, %v, %v; want none outstanding", k.Name, subject, row, ok, err)
	}
}

func aRowIsDueUntilSettled(t *testing.T, s deadlines.Projection) {
	applyAll(t, s, record("Lent", "a", 1, t0))
	if got := overdue(t, s, TestKinds, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("at its due time: %v, want nothing overdue", got)
	}
	if got, want := overdue(t, s, TestKinds, t0.Add(time.Hour+time.Millisecond)), []string{"loan:a"}; !slices.Equal(got, want) {
		t.Errorf("a millisecond later: %v, want %v", got, want)
	}
	wantRow(t, s, loan, "a", t0.Add(time.Hour))
	wantNoRow(t, s, watch, "a")
	applyAll(t, s, record("Returned", "a", 2, t0.Add(time.Minute)))
	if got := everything(t, s, TestKinds); len(got) != 0 {
		t.Errorf("settled: %v, want nothing", got)
	}
	wantNoRow(t, s, loan, "a")
}

func aSettledRowNeverComesBack(t *testing.T, s deadlines.Projection) {
	applyAll(t, s,
		record("Lent", "b", 1, t0), record("Returned", "b", 2, t0.Add(time.Minute)),
		record("Lent", "b", 1, t0),                                                  // redelivered, or replayed
		record("Returned", "c", 2, t0.Add(time.Minute)), record("Lent", "c", 1, t0), // out of order
		record("Lent", "d", 1, t0), record("Lent", "d", 1, t0.Add(time.Hour)), // duplicated, later: the first stands
		record("Lent", "e", 1, t0), record("Lent", "e", 3, t0.Add(time.Hour))) // a later opening of a kind not ordered: the first stands
	if got, want := everything(t, s, TestKinds), []string{"loan:d", "loan:e"}; !slices.Equal(got, want) {
		t.Errorf("outstanding %v, want %v", got, want)
	}
	wantRow(t, s, loan, "d", t0.Add(time.Hour))
	wantRow(t, s, loan, "e", t0.Add(time.Hour))
}

func aCorruptRecordIsRefused(t *testing.T, s deadlines.Projection) {
	bad := deadlines.Record{Stream: "x", Position: 1, Type: "Lent", At: t0, Data: []byte("nonsense")}
	if err := s.Apply(context.Background(), bad); !errors.Is(err, deadlines.ErrCorruptRecord) {
		t.Errorf("a record that does not decode: %v, want ErrCorruptRecord", err)
	}
	applyAll(t, s, deadlines.Record{Stream: "x", Position: 2, Type: "Unheard", At: t0, Data: []byte("nonsense")}) // read by no kind
	if got := everything(t, s, TestKinds); len(got) != 0 {
		t.Errorf("after a corrupt record and another read by no kind: %v, want nothing", got)
	}
}

func eachKindIsReadAlone(t *testing.T, s deadlines.Projection) {
	applyAll(t, s, record("Watched", "w", 1, t0.Add(-23*time.Hour-40*time.Minute)), record("Lent", "l", 1, t0.Add(-30*time.Minute)),
		record("Lent", "m", 1, t0), record("Watched", "v", 1, t0))
	if got, want := names(rowsOf(t, s, loan, deadlines.Span{})), []string{"loan:l", "loan:m"}; !slices.Equal(got, want) {
		t.Errorf("the loans: %v, want %v", got, want)
	}
	if got, want := overdue(t, s, TestKinds, t0.Add(31*time.Minute)), []string{"watch:w", "loan:l"}; !slices.Equal(got, want) {
		t.Errorf("overdue %v, want %v: by due time, each with its kind", got, want)
	}
	span := deadlines.Span{From: t0.Add(time.Hour), Before: t0.Add(24 * time.Hour)} // l is due just before, v at the end
	if got, want := names(append(rowsOf(t, s, loan, span), rowsOf(t, s, watch, span)...)), []string{"loan:m"}; !slices.Equal(got, want) {
		t.Errorf("due from %v, before %v: %v, want %v", span.From, span.Before, got, want)
	}
	var paged []deadlines.Row
	for shard := range s.Shards() {
		pages := 0
		read, err := s.Rows(context.Background(), deadlines.Span{Kind: loan, Shard: shard, Page: 1}, func(rows []deadlines.Row) bool {
			pages++
			paged = append(paged, rows...)
			return false // the first page only
		})
		if err != nil || pages > 1 || read > 1 {
			t.Errorf("shard %d, one row a page, stopped after the first: %d pages, %d read, %v", shard, pages, read, err)
		}
	}
	if len(paged) == 0 || len(paged) > s.Shards() {
		t.Errorf("the first page of each shard: %d rows, want 1 to %d", len(paged), s.Shards())
	}
}

func theListShowsTheOverdueFirst(t *testing.T, s deadlines.Projection) {
	applyAll(t, s, record("Watched", "w", 1, t0.Add(-23*time.Hour-40*time.Minute)), record("Lent", "l", 1, t0.Add(-30*time.Minute)),
		record("Lent", "m", 1, t0), record("Lent", "n", 1, t0.Add(-2*time.Hour)), record("Returned", "n", 2, t0))
	now := t0.Add(31 * time.Minute)
	yes, no := true, false
	for _, c := range []struct {
		q    deadlines.Query
		want []string
	}{
		{deadlines.Query{Limit: 10}, []string{"watch:w", "loan:l", "loan:m"}},
		{deadlines.Query{Limit: 2}, []string{"watch:w", "loan:l"}},
		{deadlines.Query{Kind: "loan", Limit: 10}, []string{"loan:l", "loan:m"}},
		{deadlines.Query{Kind: "loan", Overdue: &yes, Now: now, Limit: 10}, []string{"loan:l"}},
		{deadlines.Query{Overdue: &no, Now: now, Limit: 10}, []string{"loan:m"}},
	} {
		page, err := deadlines.List(context.Background(), s, TestKinds, c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(page.Rows); !slices.Equal(got, c.want) {
			t.Errorf("List(%+v) = %v, want %v", c.q, got, c.want)
		}
		if most := (c.q.Limit + 1) * s.Shards() * TestKinds.Len(); page.Read > most {
			t.Errorf("List(%+v) read %d items, more than one past the limit from each shard of each kind (%d)", c.q, page.Read, most)
		}
	}
}

// pagesGoOnWhereTheTokenSays lists rows many of which fall due in the same
// millisecond, a page at a time, and gets each once, in order, every page full but
// the last, which offers no next page.
func pagesGoOnWhereTheTokenSays(t *testing.T, s deadlines.Projection) {
	for i := range 12 {
		at := t0.Add(time.Duration(i%3) * time.Minute) // four loans due in each of three milliseconds
		applyAll(t, s, record("Lent", fmt.Sprintf("s%02d", i), 1, at))
	}
	applyAll(t, s, record("Watched", "w", 1, t0.Add(-23*time.Hour))) // due with the first four loans
	var want []string
	for minute := range 3 {
		for i := minute; i < 12; i += 3 {
			want = append(want, fmt.Sprintf("loan:s%02d", i))
		}
		if minute == 0 {
			want = append(want, "watch:w")
		}
	}
	for _, limit := range []int{1, 2, 3, 5, 13, 20} {
		var got []string
		q := deadlines.Query{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: more pages than rows", limit)
			}
			page, err := deadlines.List(context.Background(), s, TestKinds, q)
			if err != nil {
				t.Fatalf("limit %d, page %d: %v", limit, pages, err)
			}
			if len(page.Rows) > limit {
				t.Fatalf("limit %d: a page of %d rows", limit, len(page.Rows))
			}
			if len(page.Rows) == 0 || page.Next != "" && len(page.Rows) < limit {
				// a page offers Next only with rows after it, and is full then
				t.Fatalf("limit %d, page %d: %d rows and next %q", limit, pages, len(page.Rows), page.Next)
			}
			got = append(got, namesInOrder(page.Rows)...)
			if page.Next == "" {
				break
			}
			q.Token = page.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: paged through %v, want %v", limit, got, want)
		}
	}
}

func namesInOrder(rows []deadlines.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Kind+":"+r.Subject)
	}
	return out
}

func aBadQueryIsRefused(t *testing.T, s deadlines.Projection) {
	applyAll(t, s, record("Lent", "a", 1, t0), record("Lent", "b", 1, t0.Add(time.Minute)))
	first, err := deadlines.List(context.Background(), s, TestKinds, deadlines.Query{Kind: "loan", Limit: 1})
	if err != nil || first.Next == "" {
		t.Fatalf("the first page: %+v, %v; want one row and a token", first, err)
	}
	yes := true
	for _, q := range []deadlines.Query{
		{Limit: 0}, {Limit: deadlines.MaxLimit + 1}, {Kind: "nothing", Limit: 1},
		{Kind: "dunning", Limit: 1},                  // a kind of another set
		{Overdue: &yes, Limit: 1},                    // overdue by no clock
		{Kind: "watch", Limit: 1, Token: first.Next}, // another query's token
		{Kind: "loan", Overdue: &yes, Now: t0, Limit: 1, Token: first.Next},
		{Kind: "loan", Limit: 1, Token: "not a token"},
		{Kind: "loan", Limit: 1, Token: first.Next[:len(first.Next)/2]},
		{Kind: "loan", Limit: 1, Token: "eyJsIjoibG9hbiIsImQiOjAsImsiOiJub25lIiwicyI6IngifQ"}, // {"l":"loan","d":0,"k":"none","s":"x"}
		{Kind: "loan", Limit: 1, Token: "eyJsIjoibG9hbiIsImQiOjAsImsiOiJsb2FuIiwicyI6IiJ9"},   // {"l":"loan","d":0,"k":"loan","s":""}
	} {
		if page, err := deadlines.List(context.Background(), s, TestKinds, q); !errors.Is(err, deadlines.ErrBadQuery) {
			t.Errorf("List(%+v) = %+v, %v; want ErrBadQuery", q, page, err)
		}
	}
}

func aKindTakesAnotherKindsRowOver(t *testing.T, s deadlines.Projection) {
	applyAll(t, s, record("Held", "x", 1, t0), record("Held", "z", 1, t0), record("Released", "z", 2, t0))
	if got, want := everything(t, s, TestKinds), []string{"hold:x"}; !slices.Equal(got, want) {
		t.Fatalf("held: %v, want %v", got, want)
	}
	applyAll(t, s, record("Handed", "x", 2, t0.Add(time.Hour)),
		record("Held", "x", 1, t0),                    // replayed: the handover stays
		record("Handed", "x", 2, t0.Add(2*time.Hour)), // duplicated, later: the first stands
		record("Handed", "y", 1, t0.Add(time.Hour)),   // nothing to take over: opened
		record("Handed", "z", 3, t0.Add(time.Hour)))   // a settled hold is not taken over
	if got, want := everything(t, s, TestKinds), []string{"handover:x", "handover:y"}; !slices.Equal(got, want) {
		t.Fatalf("handed: %v, want %v", got, want)
	}
	wantRow(t, s, handover, "x", t0.Add(25*time.Hour))
	wantNoRow(t, s, hold, "x")
	applyAll(t, s, record("Collected", "x", 3, t0.Add(3*time.Hour)), record("Handed", "x", 2, t0.Add(time.Hour)), record("Held", "x", 1, t0))
	if got, want := everything(t, s, TestKinds), []string{"handover:y"}; !slices.Equal(got, want) {
		t.Errorf("collected, then replayed: %v, want %v", got, want)
	}
}

// aPageReadsOnePastItsLimit lists a kind of many rows, each due at its own time, a
// page at a time: each page reads at most one row past its limit from each shard,
// beside the row its token names.
func aPageReadsOnePastItsLimit(t *testing.T, s deadlines.Projection) {
	for i := range 40 {
		applyAll(t, s, record("Lent", fmt.Sprintf("r%02d", i), 1, t0.Add(time.Duration(i)*time.Minute)))
	}
	q := deadlines.Query{Kind: "loan", Limit: 3}
	for pages := 0; pages < 5; pages++ {
		page, err := deadlines.List(context.Background(), s, TestKinds, q)
		if err != nil {
			t.Fatal(err)
		}
		most := (q.Limit + 1) * s.Shards()
		if pages > 0 {
			most += s.Shards() // the token's own row, read again
		}
		if page.Read > most || len(page.Rows) != q.Limit {
			t.Errorf("page %d: %d rows, %d items read; want %d rows, at most %d read", pages, len(page.Rows), page.Read, q.Limit, most)
		}
		q.Token = page.Next
	}
}
