package deadline_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/memindex"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// lanesRead is an index that notes the lanes the sweep queries. The sweep queries
// its shards concurrently, so the counts are kept under a lock.
type lanesRead struct {
	deadline.Index
	mu    sync.Mutex
	lanes map[string]int
}

func (l *lanesRead) LanePages(ctx context.Context, lane deadline.Lane, shard int, cutoff time.Time, fn func([]deadline.Row) bool) (int, error) {
	l.mu.Lock()
	l.lanes[lane.Prefix]++
	l.mu.Unlock()
	return l.Index.LanePages(ctx, lane, shard, cutoff, fn)
}

// subjectChanges reads a kind's records of two types, whose data names the row's
// subject ("subject:<subject>"): opens opens it, settles settles it.
type subjectChanges struct{ opens, settles string }

func (k subjectChanges) Change(r eventstore.Record) (deadline.Change, bool, error) {
	if r.Type != k.opens && r.Type != k.settles {
		return deadline.Change{}, false, nil
	}
	return deadline.Change{Subject: strings.TrimPrefix(string(r.Data), "subject:"), Settled: r.Type == k.settles}, true, nil
}

// acts is a command whose receiver always acts.
type acts struct{}

func (acts) Send(context.Context, deadline.Row, string) (deadline.Outcome, string, error) {
	return deadline.Acted, "", nil
}
func (acts) OneAtATime() bool { return false }

// TestAKindWorkedOffByHandIsListedAndNeverSwept: a kind declared ByHand (due as it
// opens) is projected and listed, overdue from its opening on, and settled as any
// other; the sweep never queries its lane, reports nothing of it and cannot be
// made to act on one of its rows by a trigger; and a declaration of a kind the
// name of the sweep's own rows, or a swept kind of zero duration, or a kind by
// hand that yields or lists as itself or as another kind by hand, is refused (a
// kind by hand with a command, or a swept kind listed as another, cannot be
// written: Work is one or the other).
func TestAKindWorkedOffByHandIsListedAndNeverSwept(t *testing.T) {
	ctx := context.Background()
	swept := deadline.Kind{Name: "loan", Prefix: "loan#", After: time.Hour,
		Changes: subjectChanges{"Lent", "Returned"}, Work: deadline.Send{Command: acts{}}}
	byHand := deadline.Kind{Name: "debt", Prefix: "debt#", Changes: subjectChanges{"Owes", "Paid"}, Work: deadline.ByHand{}}
	kinds := deadline.MustKinds(swept, byHand)
	m := memindex.NewWith(2, kinds)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, r := range []eventstore.Record{
		{StreamID: "things-a", Version: 1, Event: eventstore.Event{ID: "1", Type: "Lent", Data: []byte("subject:a"), RecordedAt: t0}},
		{StreamID: "things-b", Version: 1, Event: eventstore.Event{ID: "2", Type: "Owes", Data: []byte("subject:b"), RecordedAt: t0}},
		{StreamID: "things-c", Version: 1, Event: eventstore.Event{ID: "3", Type: "Owes", Data: []byte("subject:c"), RecordedAt: t0}},
		{StreamID: "things-c", Version: 2, Event: eventstore.Event{ID: "4", Type: "Paid", Data: []byte("subject:c"), RecordedAt: t0}},
	} {
		if err := m.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(2 * time.Hour)
	overdue := true
	rows, err := m.Deadlines(ctx, deadline.Query{Kind: "debt", Overdue: &overdue, Now: t0.Add(time.Millisecond), Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].Subject != "b" || !rows[0].Due.Equal(t0) {
		t.Errorf("debt rows %+v, %v: want b's, due as it opened, overdue just after; c's settled", rows, err)
	}

	idx := &lanesRead{Index: m, lanes: map[string]int{}}
	s := &sweep.Sweep{Deadlines: &deadline.Sweeper{Index: idx, Kinds: kinds}, Logger: slog.New(slog.DiscardHandler)}
	sum, err := s.Sweep(ctx, now)
	if err != nil || idx.lanes["debt#"] != 0 || idx.lanes["loan#"] != 2 {
		t.Errorf("the sweep queried lanes %v (%v), want loan# once per shard and never debt#", idx.lanes, err)
	}
	if _, ok := sum.Kind("debt"); ok || len(sum.Kinds) != 1 || sum.Kinds[0].Acted != 1 {
		t.Errorf("summary kinds %+v, want the loan's alone", sum.Kinds)
	}
	if _, err := s.SweepOne(ctx, "debt", "debt#b", now); err == nil {
		t.Error("a trigger naming a row worked off by hand was swept")
	}

	zero := swept
	zero.After = 0
	listsAsByHand := byHand
	listsAsByHand.Name, listsAsByHand.Prefix, listsAsByHand.Work = "late", "late#", deadline.ByHand{ListedAs: "debt"}
	listsAsItself := byHand
	listsAsItself.Work = deadline.ByHand{ListedAs: "debt"}
	yields := byHand
	yields.Yields = []string{"loan"}
	noWork := swept
	noWork.Work = nil
	sweepsOwn := swept
	sweepsOwn.Name, sweepsOwn.Prefix = "owed", "owed#"
	for name, ks := range map[string][]deadline.Kind{
		"the owed cancellations' lane": {sweepsOwn}, "zero, swept": {zero}, "listed as a kind by hand": {byHand, listsAsByHand},
		"listed as itself": {listsAsItself}, "by hand, yielding": {swept, yields}, "no work": {noWork},
	} {
		if _, err := deadline.NewKinds(ks...); err == nil {
			t.Errorf("%s: declared", name)
		}
	}
}
