package deadlinestest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

func aByHandKindTakesARowOver(t *testing.T, s deadlines.Projection) {
	dueAt := t0.Add(time.Hour)
	dunned := func(subject string, position int64, at time.Time) deadlines.Record {
		return dueRecord("Dunned", subject, position, at, dueAt)
	}
	listed := func(q deadlines.Query) []string {
		t.Helper()
		q.Limit = 10
		page, err := deadlines.List(context.Background(), s, billKinds, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range page.Rows {
			out = append(out, fmt.Sprintf("%s:%s:%s", r.Kind, r.Subject, r.Due.Sub(t0)))
		}
		return out
	}
	swept := func(now time.Time) []string {
		t.Helper()
		var out []deadlines.Row
		for _, k := range billKinds.Swept() {
			out = append(out, rowsOf(t, s, k, deadlines.Span{Before: now})...)
		}
		return names(out)
	}
	applyAll(t, s,
		record("Drafted", "x", 1, t0), record("Billed", "x", 2, t0), // billed, then dunned
		record("Drafted", "y", 1, t0), record("Billed", "y", 2, t0), // billed, left alone
		record("Drafted", "z", 1, t0), dunned("z", 2, t0.Add(2*time.Hour))) // a draft is not the dunning's to take
	if got, want := swept(t0.Add(2*time.Hour)), []string{"bill:x", "bill:y"}; !slices.Equal(got, want) {
		t.Fatalf("billed: swept %v, want %v", got, want)
	}
	applyAll(t, s, dunned("x", 3, t0.Add(2*time.Hour)),
		record("Billed", "x", 2, t0),        // replayed: does not move it back
		dunned("x", 3, t0.Add(3*time.Hour)), // duplicated: the first stands
		record("Drafted", "x", 1, t0))       // replayed
	if got, want := swept(t0.Add(5*time.Hour)), []string{"bill:y", "draft:z"}; !slices.Equal(got, want) {
		t.Fatalf("dunned: swept %v, want %v", got, want)
	}
	wantNoRow(t, s, bill, "x")
	wantRow(t, s, dunning, "x", dueAt)
	yes := true
	now := t0.Add(5 * time.Hour)
	if got, want := listed(deadlines.Query{Kind: "bill", Overdue: &yes, Now: now}), []string{"bill:x:1h0m0s", "bill:y:1h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("overdue bills %v, want %v", got, want)
	}
	if got, want := listed(deadlines.Query{}), []string{"bill:x:1h0m0s", "bill:y:1h0m0s", "draft:z:3h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("everything %v, want %v", got, want)
	}
	applyAll(t, s, record("Paid", "x", 4, t0.Add(6*time.Hour)),
		dunned("x", 3, t0.Add(2*time.Hour)), record("Billed", "x", 2, t0)) // late: nothing comes back
	if got, want := listed(deadlines.Query{Kind: "bill"}), []string{"bill:y:1h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("paid, then replayed: bills %v, want %v", got, want)
	}
	wantNoRow(t, s, dunning, "x")
}

// anOrderedKindsNewerOpeningAdvancesItsRowInAnyOrder applies, in every order, the
// records of one stream: position 1 opens the row, 2 settles it, 3 opens it again
// due later (a receiver that put it off, or a new round). Whatever the order, the
// row ends as position 3 says: outstanding, due when 3 says. Two records alone
// end as the later says, too.
func anOrderedKindsNewerOpeningAdvances(t *testing.T, s deadlines.Projection) {
	later := t0.Add(30 * 24 * time.Hour)
	for i, order := range permutations([]int{1, 2, 3}) {
		subject := fmt.Sprintf("r%d", i)
		recs := map[int]deadlines.Record{
			1: record("Renewable", subject, 1, t0),
			2: record("Renewed", subject, 2, t0.Add(time.Hour)),
			3: dueRecord("Renewable", subject, 3, t0.Add(2*time.Hour), later),
		}
		for _, p := range order {
			applyAll(t, s, recs[p])
		}
		wantRow(t, s, renewal, subject, later)
		applyAll(t, s, recs[1], recs[2]) // replayed, late: nothing moves back
		wantRow(t, s, renewal, subject, later)
	}
	for i, order := range [][]int{{1, 3}, {3, 1}} {
		subject := fmt.Sprintf("o%d", i)
		recs := map[int]deadlines.Record{
			1: record("Renewable", subject, 1, t0),
			3: dueRecord("Renewable", subject, 3, t0.Add(2*time.Hour), later),
		}
		for _, p := range order {
			applyAll(t, s, recs[p])
		}
		wantRow(t, s, renewal, subject, later)
	}
	for i, order := range [][]int{{1, 2}, {2, 1}} {
		subject := fmt.Sprintf("s%d", i)
		recs := map[int]deadlines.Record{1: record("Renewable", subject, 1, t0), 2: record("Renewed", subject, 2, t0.Add(time.Hour))}
		for _, p := range order {
			applyAll(t, s, recs[p])
		}
		wantNoRow(t, s, renewal, subject)
	}
	if got := overdue(t, s, TestKinds, later); len(got) != 0 {
		t.Errorf("overdue at the later due time: %v, want nothing yet", got)
	}
	if got := overdue(t, s, TestKinds, later.Add(time.Millisecond)); len(got) != 8 {
		t.Errorf("overdue just after the later due time: %v, want the 8 rows opened again or moved", got)
	}
}

// permutations returns every order of xs.
func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i, x := range xs {
		rest := slices.Concat(xs[:i:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]int{x}, p...))
		}
	}
	return out
}
