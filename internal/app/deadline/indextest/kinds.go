package indextest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// KindSubject is an index under test over kinds it was made with, and the
// projection that writes it.
type KindSubject interface {
	deadline.Index
	deadline.Lister
	Apply(ctx context.Context, r eventstore.Record) error
}

// Two kinds declared here alone, over records of their own: the machinery knows
// nothing of what a kind is about. A "Lent" record opens a loan's row, due an hour
// later; "Returned" settles it. A "Watched" record opens a watch's row, due a day
// later; "Unwatched" settles it. Each kind's rows are in a lane of its own.
var (
	loan  = deadline.Kind{Name: "loan", Prefix: "loan#", After: time.Hour, Changes: records{"Lent", "Returned"}, Work: deadline.Send{}}
	watch = deadline.Kind{Name: "watch", Prefix: "watch#", After: 24 * time.Hour, Changes: records{"Watched", "Unwatched"}, Work: deadline.Send{}}
	// A "Held" record opens a hold's row ("item#"), due two hours later; "Released"
	// settles it. "Handed" opens a handover's row, due a day later, taking over the
	// item's hold if it is still outstanding; "Collected" settles it.
	hold     = deadline.Kind{Name: "hold", Prefix: "item#", After: 2 * time.Hour, Changes: records{"Held", "Released"}, Work: deadline.Send{}}
	handover = deadline.Kind{Name: "handover", Prefix: "item#", After: 24 * time.Hour, Changes: records{"Handed", "Collected"}, Work: deadline.Send{}, Takes: "hold"}
	// TestKinds are the kinds the contract's cases run with.
	TestKinds = deadline.MustKinds(loan, watch, hold, handover)

	// A chain of kinds over one key ("bill#"), as the service's stuck process,
	// return due and overdue return are: "Drafted" opens a draft's row; "Billed"
	// opens a bill's row, due an hour later, taking the draft over; "Dunned" hands
	// the bill over to the operators, taking its row over into a lane no sweep
	// reads, due when the record says the bill was (its "due:" part), listed as a
	// bill; "Paid" settles the bill, and the dunning.
	bills     = deadline.LaneOf("bill")
	draft     = deadline.Kind{Name: "draft", Prefix: "bill#", After: 3 * time.Hour, Changes: records{"Drafted", "Discarded"}, Work: deadline.Send{}}
	bill      = deadline.Kind{Name: "bill", Prefix: "bill#", After: time.Hour, Changes: records{"Billed", "Paid"}, Work: deadline.Send{}, Takes: "draft"}
	dunning   = deadline.Kind{Name: "dunning", Prefix: "bill#", Changes: dunned{}, Work: deadline.ByHand{ListedAs: "bill"}, Takes: "bill"}
	billKinds = deadline.MustKinds(draft, bill, dunning, hold)
)

// dunned reads the dunning's records: "Dunned" opens, due at its "due:" time;
// "Paid" settles.
type dunned struct{}

func (dunned) Change(r eventstore.Record) (deadline.Change, bool, error) {
	if r.Type != "Dunned" {
		return records{"", "Paid"}.Change(r)
	}
	subject, due, _ := strings.Cut(strings.TrimPrefix(string(r.Data), "subject:"), " due:")
	at, err := time.Parse(time.RFC3339Nano, due)
	if err != nil || subject == "" {
		return deadline.Change{}, false, fmt.Errorf("%w: %s", eventstore.ErrCorruptRecord, r.Data)
	}
	return deadline.Change{Subject: subject, Due: at}, true, nil
}

// records reads a kind's records of two types: opens opens a row of the subject
// the record's data names ("subject:<subject>"), settles settles it.
type records struct{ opens, settles string }

func (k records) Change(r eventstore.Record) (deadline.Change, bool, error) {
	if r.Type != k.opens && r.Type != k.settles {
		return deadline.Change{}, false, nil
	}
	subject, ok := strings.CutPrefix(string(r.Data), "subject:")
	if !ok || subject == "" {
		return deadline.Change{}, false, fmt.Errorf("%w: %s", eventstore.ErrCorruptRecord, r.Data)
	}
	return deadline.Change{Subject: subject, Settled: r.Type == k.settles, How: strings.ToLower(k.settles)}, true, nil
}

func record(typ, subject string, version int64, at time.Time) eventstore.Record {
	return eventstore.Record{StreamID: "things-" + subject, Version: version,
		Event: eventstore.Event{ID: fmt.Sprintf("%s-%s-%d", typ, subject, version), Type: typ, Data: []byte("subject:" + subject), RecordedAt: at}}
}

// RunKinds runs the contract of any kind's rows, each case on a fresh index from
// newSubject over TestKinds.
func RunKinds(t *testing.T, newSubject func(t *testing.T, kinds deadline.Kinds) KindSubject) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s KindSubject)
	}{
		{"ARowIsDueAfterItsKindsDurationUntilSettled", aRowIsDueUntilSettled},
		{"ASettledRowNeverComesBack", aSettledRowNeverComesBack},
		{"EachKindsLaneHoldsItsRowsAloneInDueOrder", eachKindHasALane},
		{"TheListShowsTheOverdueFirstByKind", theListShowsTheOverdueFirst},
		{"AKindTakesAnotherKindsRowOver", aKindTakesAnotherKindsRowOver},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newSubject(t, TestKinds)) })
	}
	t.Run("AByHandKindTakesARowOverOutOfTheSweptLaneAndListsItAsBefore", func(t *testing.T) {
		aByHandKindTakesARowOver(t, newSubject(t, billKinds))
	})
}

func applyAll(t *testing.T, s KindSubject, recs ...eventstore.Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Apply(ctx, r); err != nil {
			t.Fatalf("apply %s %s: %v", r.Type, r.Data, err)
		}
	}
}

// due returns the rows overdue at now of every lane of TestKinds, from every
// shard, checking that each lane's shard holds its kind's rows alone, in due order.
func due(t *testing.T, s KindSubject, now time.Time) []deadline.Row {
	t.Helper()
	var out []deadline.Row
	for _, k := range TestKinds.All() {
		out = append(out, dueIn(t, s, k, now)...)
	}
	deadline.SortRows(out)
	return out
}

// dueIn returns the rows overdue at now of k's lane, from every shard, checking
// that they are k's alone, in due order.
func dueIn(t *testing.T, s KindSubject, k deadline.Kind, now time.Time) []deadline.Row {
	t.Helper()
	var out []deadline.Row
	for shard := range s.Shards() {
		var last time.Time
		read, err := s.LanePages(ctx, k.Lane(), shard, now, func(rows []deadline.Row) bool {
			for _, r := range rows {
				if r.Due.Before(last) || r.Kind != k.Name {
					t.Errorf("lane %s shard %d: %s:%s due %v after one due %v", k.Lane().Prefix, shard, r.Kind, r.Subject, r.Due, last)
				}
				last = r.Due
				out = append(out, r)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(out); read > n {
			t.Errorf("lane %s shard %d: read %d items for %d rows", k.Lane().Prefix, shard, read, n)
		}
	}
	return out
}

func aRowIsDueUntilSettled(t *testing.T, s KindSubject) {
	applyAll(t, s, record("Lent", "a", 1, t0))
	want := deadline.Row{Kind: "loan", Subject: "a", Since: t0, Due: t0.Add(time.Hour)}
	if got := due(t, s, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("at its due time: %+v, want nothing overdue", got)
	}
	if got := due(t, s, t0.Add(time.Hour+time.Millisecond)); len(got) != 1 || got[0] != want {
		t.Errorf("a millisecond later: %+v, want [%+v]", got, want)
	}
	if row, ok, err := s.Row(ctx, loan, "a"); err != nil || !ok || row != want {
		t.Errorf("Row: %+v, %v, %v; want %+v", row, ok, err, want)
	}
	applyAll(t, s, record("Returned", "a", 2, t0.Add(time.Minute)))
	if got := due(t, s, t0.Add(48*time.Hour)); len(got) != 0 {
		t.Errorf("settled: %+v, want nothing", got)
	}
	if _, ok, err := s.Row(ctx, loan, "a"); err != nil || ok {
		t.Errorf("Row of a settled row: %v, %v", ok, err)
	}
	if _, ok, err := s.Row(ctx, watch, "a"); err != nil || ok {
		t.Errorf("Row of another kind's: %v, %v", ok, err)
	}
}

func aSettledRowNeverComesBack(t *testing.T, s KindSubject) {
	applyAll(t, s,
		record("Lent", "b", 1, t0), record("Returned", "b", 2, t0.Add(time.Minute)),
		record("Lent", "b", 1, t0),                                                  // redelivered, or replayed
		record("Returned", "c", 2, t0.Add(time.Minute)), record("Lent", "c", 1, t0), // out of order
		record("Lent", "d", 1, t0), record("Lent", "d", 1, t0.Add(time.Hour))) // duplicated, later: the first stands
	got := due(t, s, t0.Add(48*time.Hour))
	if len(got) != 1 || got[0].Subject != "d" || !got[0].Since.Equal(t0) {
		t.Errorf("overdue %+v, want only d, opened at %v", got, t0)
	}
	if err := s.Apply(ctx, eventstore.Record{StreamID: "x", Version: 1, Event: eventstore.Event{Type: "Lent", Data: []byte("nonsense")}}); err == nil {
		t.Error("a record that does not decode was accepted")
	}
}

func eachKindHasALane(t *testing.T, s KindSubject) {
	applyAll(t, s, record("Watched", "w", 1, t0.Add(-23*time.Hour-40*time.Minute)), record("Lent", "l", 1, t0.Add(-30*time.Minute)),
		record("Lent", "m", 1, t0), record("Watched", "v", 1, t0))
	if got := dueIn(t, s, loan, t0.Add(48*time.Hour)); len(got) != 2 {
		t.Errorf("the loans' lane: %+v, want the two loans alone", got)
	}
	got := due(t, s, t0.Add(31*time.Minute))
	var kinds []string
	for _, r := range got {
		kinds = append(kinds, r.Kind+":"+r.Subject)
	}
	if want := []string{"watch:w", "loan:l"}; !slices.Equal(kinds, want) {
		t.Errorf("overdue %v, want %v: by due time, each with its kind", kinds, want)
	}
}

func theListShowsTheOverdueFirst(t *testing.T, s KindSubject) {
	applyAll(t, s, record("Watched", "w", 1, t0.Add(-23*time.Hour-40*time.Minute)), record("Lent", "l", 1, t0.Add(-30*time.Minute)),
		record("Lent", "m", 1, t0), record("Lent", "n", 1, t0.Add(-2*time.Hour)), record("Returned", "n", 2, t0))
	now := t0.Add(31 * time.Minute)
	yes, no := true, false
	for _, c := range []struct {
		q    deadline.Query
		want []string
	}{
		{deadline.Query{Now: now, Limit: 10}, []string{"watch:w", "loan:l", "loan:m"}},
		{deadline.Query{Now: now, Limit: 2}, []string{"watch:w", "loan:l"}},
		{deadline.Query{Kind: "loan", Now: now, Limit: 10}, []string{"loan:l", "loan:m"}},
		{deadline.Query{Kind: "loan", Overdue: &yes, Now: now, Limit: 10}, []string{"loan:l"}},
		{deadline.Query{Overdue: &no, Now: now, Limit: 10}, []string{"loan:m"}},
	} {
		rows, err := s.Deadlines(ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Kind+":"+r.Subject)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Deadlines(%+v) = %v, want %v", c.q, got, c.want)
		}
	}
}

// everything returns every outstanding row of every lane, as kind:subject.
func everything(t *testing.T, s KindSubject) []string {
	t.Helper()
	var out []string
	for _, l := range TestKinds.Lanes() {
		for shard := range s.Shards() {
			if _, err := s.LanePages(ctx, l, shard, time.Time{}, func(rows []deadline.Row) bool {
				for _, r := range rows {
					out = append(out, r.Kind+":"+r.Subject)
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(out)
	return out
}

func aKindTakesAnotherKindsRowOver(t *testing.T, s KindSubject) {
	applyAll(t, s, record("Held", "x", 1, t0), record("Held", "z", 1, t0), record("Released", "z", 2, t0))
	if got, want := everything(t, s), []string{"hold:x"}; !slices.Equal(got, want) {
		t.Fatalf("held: %v, want %v", got, want)
	}
	applyAll(t, s, record("Handed", "x", 2, t0.Add(time.Hour)),
		record("Held", "x", 1, t0),                    // replayed: the handover stays
		record("Handed", "x", 2, t0.Add(2*time.Hour)), // duplicated, later: the first stands
		record("Handed", "y", 1, t0.Add(time.Hour)),   // nothing to take over: opened
		record("Handed", "z", 3, t0.Add(time.Hour)))   // a settled hold is not taken over
	if got, want := everything(t, s), []string{"handover:x", "handover:y"}; !slices.Equal(got, want) {
		t.Fatalf("handed: %v, want %v", got, want)
	}
	row, ok, err := s.Row(ctx, handover, "x")
	if err != nil || !ok || !row.Since.Equal(t0.Add(time.Hour)) || !row.Due.Equal(t0.Add(25*time.Hour)) {
		t.Errorf("Row(handover, x) = %+v, %v, %v; want handed at %v, due a day later", row, ok, err, t0.Add(time.Hour))
	}
	if _, ok, err := s.Row(ctx, hold, "x"); err != nil || ok {
		t.Errorf("Row(hold, x) after the takeover: %v, %v; want none", ok, err)
	}
	applyAll(t, s, record("Collected", "x", 3, t0.Add(3*time.Hour)), record("Handed", "x", 2, t0.Add(time.Hour)), record("Held", "x", 1, t0))
	if got, want := everything(t, s), []string{"handover:y"}; !slices.Equal(got, want) {
		t.Errorf("collected, then replayed: %v, want %v", got, want)
	}
}

func aByHandKindTakesARowOver(t *testing.T, s KindSubject) {
	dueAt := t0.Add(time.Hour)
	dunned := func(subject string, version int64, at time.Time) eventstore.Record {
		r := record("Dunned", subject, version, at)
		r.Data = []byte("subject:" + subject + " due:" + dueAt.Format(time.RFC3339Nano))
		return r
	}
	listed := func(q deadline.Query) []string {
		t.Helper()
		q.Now, q.Limit = t0.Add(5*time.Hour), 10
		rows, err := s.Deadlines(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%s:%s:%s", r.Kind, r.Subject, r.Due.Sub(t0)))
		}
		return out
	}
	swept := func(now time.Time) []string {
		t.Helper()
		var out []string
		for shard := range s.Shards() {
			if _, err := s.LanePages(ctx, bills, shard, now, func(rows []deadline.Row) bool {
				for _, r := range rows {
					out = append(out, r.Kind+":"+r.Subject)
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(out)
		return out
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
	if got, want := swept(t0.Add(5*time.Hour)), []string{"bill:y"}; !slices.Equal(got, want) {
		t.Fatalf("dunned: swept %v, want %v", got, want)
	}
	if _, ok, err := s.Row(ctx, bill, "x"); err != nil || ok {
		t.Errorf("Row(bill, x) after the dunning: %v, %v; want none", ok, err)
	}
	if row, ok, err := s.Row(ctx, dunning, "x"); err != nil || !ok || !row.Due.Equal(dueAt) {
		t.Errorf("Row(dunning, x) = %+v, %v, %v; want due at %v", row, ok, err, dueAt)
	}
	yes := true
	if got, want := listed(deadline.Query{Kind: "bill", Overdue: &yes}), []string{"bill:x:1h0m0s", "bill:y:1h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("overdue bills %v, want %v", got, want)
	}
	if got, want := listed(deadline.Query{}), []string{"bill:x:1h0m0s", "bill:y:1h0m0s", "draft:z:3h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("everything %v, want %v", got, want)
	}
	applyAll(t, s, record("Paid", "x", 4, t0.Add(6*time.Hour)),
		dunned("x", 3, t0.Add(2*time.Hour)), record("Billed", "x", 2, t0)) // late: nothing comes back
	if got, want := listed(deadline.Query{Kind: "bill"}), []string{"bill:y:1h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("paid, then replayed: bills %v, want %v", got, want)
	}
	if _, ok, err := s.Row(ctx, dunning, "x"); err != nil || ok {
		t.Errorf("Row(dunning, x) after the payment: %v, %v; want none", ok, err)
	}
}
