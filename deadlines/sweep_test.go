package deadlines_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// receiver answers each row's command with the outcome its subject names ("acted-1",
// "declined-2", "nothing-3", "fail-4", "panic-5") and counts what it was sent.
type receiver struct {
	mu         sync.Mutex
	sent       map[string]int
	inFlight   atomic.Int32
	mostAtOnce atomic.Int32
}

func (r *receiver) Send(_ context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for m := r.mostAtOnce.Load(); n > m && !r.mostAtOnce.CompareAndSwap(m, n); m = r.mostAtOnce.Load() {
	}
	time.Sleep(time.Millisecond) // long enough to overlap with what the sweep sends beside it
	r.mu.Lock()
	if r.sent == nil {
		r.sent = map[string]int{}
	}
	r.sent[row.Kind+":"+row.Subject]++
	r.mu.Unlock()
	switch {
	case cause == "":
		return "", errors.New("no cause")
	case strings.HasPrefix(row.Subject, "acted"):
		return deadlines.Acted, nil
	case strings.HasPrefix(row.Subject, "declined"):
		return deadlines.Declined, nil
	case strings.HasPrefix(row.Subject, "nothing"):
		return deadlines.NothingToDo, nil
	case strings.HasPrefix(row.Subject, "panic"):
		panic("the receiver fell over")
	case strings.HasPrefix(row.Subject, "odd"):
		return "maybe", nil
	}
	return "", errors.New("the receiver is down")
}

func (r *receiver) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[name]
}

func orderKind(cmd deadlines.Command, retry deadlines.Backoff) deadlines.Kind {
	return deadlines.Kind{Name: "unconfirmed-order", After: 15 * time.Minute, Changes: placed, Work: deadlines.Send{Command: cmd, Retry: retry}}
}

func opened(t *testing.T, idx deadlines.Projection, at time.Time, subjects ...string) {
	t.Helper()
	for _, s := range subjects {
		if err := idx.Apply(context.Background(), deadlines.Record{Stream: s, Position: 1, Type: "OrderPlaced", At: at}); err != nil {
			t.Fatal(err)
		}
	}
}

func sweeper(t *testing.T, cfg deadlines.SweeperConfig) *deadlines.Sweeper {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := deadlines.NewSweeper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTheSweepSendsEachOverdueRowItsCommandAndCountsWhatItsReceiverDid(t *testing.T) {
	r := &receiver{}
	kinds := deadlines.MustKinds(orderKind(r, deadlines.Backoff{}))
	idx := memory.New(kinds, 4)
	opened(t, idx, t0, "acted-1", "acted-2", "declined-1", "nothing-1", "fail-1", "panic-1", "odd-1", "settled-1")
	opened(t, idx, t0.Add(10*time.Minute), "acted-later")
	if err := idx.Apply(context.Background(), deadlines.Record{Stream: "settled-1", Position: 2, Type: "OrderConfirmed", At: t0}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(20 * time.Minute)
	sums, err := sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds}).Sweep(context.Background(), now, "sweep")
	if err != nil || len(sums) != 1 {
		t.Fatalf("Sweep = %+v, %v", sums, err)
	}
	want := deadlines.KindSummary{Kind: "unconfirmed-order", Found: 7, Acted: 2, Declined: 1, NothingToDo: 1, Failed: 3,
		OldestOverdue: 5 * time.Minute, ItemsRead: 7}
	if sums[0] != want {
		t.Errorf("summary %+v, want %+v", sums[0], want)
	}
	for _, name := range []string{"settled-1", "acted-later"} {
		if n := r.count("unconfirmed-order:" + name); n != 0 {
			t.Errorf("%s was sent %d times: want none, it is settled or not yet due", name, n)
		}
	}
}

// TestADeclinedRowThatBacksOffIsNotSentAtEverySweep sweeps every minute for three
// hours over a reminder whose receiver declines and records nothing: it is sent at
// its send times alone, and stays listed as overdue since its due time.
func TestADeclinedRowThatBacksOffIsNotSentAtEverySweep(t *testing.T) {
	r := &receiver{}
	kinds := deadlines.MustKinds(orderKind(r, deadlines.Backoff{First: time.Minute, Max: time.Hour}))
	idx := memory.New(kinds, 2)
	opened(t, idx, t0, "declined-1")
	s := sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds, Every: time.Minute})
	waiting := 0
	for now := t0; now.Before(t0.Add(3 * time.Hour)); now = now.Add(time.Minute) {
		sums, err := s.Sweep(context.Background(), now, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		waiting += sums[0].Waiting
	}
	// Due at 12:15: sent at 12:16, 12:17, 12:19, 12:23, 12:31, 12:47, 13:19, 14:19.
	if got := r.count("unconfirmed-order:declined-1"); got != 8 {
		t.Errorf("sent %d times in three hours, want 8", got)
	}
	if waiting != 164-8 {
		t.Errorf("held back at %d sweeps, want the other %d of the 164 after its due time", waiting, 164-8)
	}
	page, err := deadlines.List(context.Background(), idx, kinds, deadlines.Query{Limit: 10})
	if err != nil || len(page.Rows) != 1 || !page.Rows[0].Due.Equal(t0.Add(15*time.Minute)) {
		t.Errorf("listed %+v, %v; want the row, due at its own due time", page.Rows, err)
	}
}

func TestARowYieldsToAKindFoundOverdueForTheSameSubject(t *testing.T) {
	r := &receiver{}
	shipped := deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderShipped"}}
	kinds := deadlines.MustKinds(orderKind(r, deadlines.Backoff{}),
		deadlines.Kind{Name: "unshipped-order", After: 10 * time.Minute, Changes: shipped, Work: deadlines.Send{Command: r}, Yields: []string{"unconfirmed-order"}})
	idx := memory.New(kinds, 1)
	opened(t, idx, t0, "acted-1")
	s := sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds})
	sums, err := s.Sweep(context.Background(), t0.Add(12*time.Minute), "sweep") // unshipped alone is due
	if err != nil || sums[1].Acted != 1 {
		t.Fatalf("before the order is unconfirmed: %+v, %v", sums, err)
	}
	sums, err = s.Sweep(context.Background(), t0.Add(20*time.Minute), "sweep")
	if err != nil || sums[0].Acted != 1 || sums[1].Found != 0 || r.count("unshipped-order:acted-1") != 1 {
		t.Errorf("both due: %+v, %v; want the unconfirmed order sent, the unshipped one waiting for the next sweep", sums, err)
	}
}

func TestAKindSentOneAtATimeHasOneCommandInFlight(t *testing.T) {
	for _, one := range []bool{false, true} {
		r := &receiver{}
		k := orderKind(r, deadlines.Backoff{})
		k.Work = deadlines.Send{Command: r, OneAtATime: one}
		kinds := deadlines.MustKinds(k)
		idx := memory.New(kinds, 4)
		for i := range 40 {
			opened(t, idx, t0, fmt.Sprintf("acted-%d", i))
		}
		sums, err := sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds, Concurrency: 8}).Sweep(context.Background(), t0.Add(time.Hour), "sweep")
		if err != nil || sums[0].Acted != 40 {
			t.Fatalf("one at a time %v: %+v, %v", one, sums, err)
		}
		if most := r.mostAtOnce.Load(); (most == 1) != one || most > 8 {
			t.Errorf("one at a time %v: %d commands in flight at once", one, most)
		}
	}
}

func TestWhatTheSweepCannotSendIsLeftForTheNext(t *testing.T) {
	kinds := deadlines.MustKinds(orderKind(nil, deadlines.Backoff{}))
	idx := memory.New(kinds, 2)
	opened(t, idx, t0, "acted-1", "acted-2")
	sums, err := sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds}).Sweep(context.Background(), t0.Add(time.Hour), "sweep")
	if err != nil || sums[0].Found != 2 || sums[0].Left != 2 {
		t.Errorf("no command: %+v, %v; want both left", sums, err)
	}
	r := &receiver{}
	kinds = deadlines.MustKinds(orderKind(r, deadlines.Backoff{}))
	idx = memory.New(kinds, 2)
	opened(t, idx, t0, "acted-1", "acted-2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sums, _ = sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds}).Sweep(ctx, t0.Add(time.Hour), "sweep")
	if sums[0].Acted != 0 || sums[0].Left != sums[0].Found || r.count("unconfirmed-order:acted-1") != 0 {
		t.Errorf("out of time: %+v; want everything found left, nothing sent", sums)
	}
}

func TestABadSweeperIsRefused(t *testing.T) {
	kinds := deadlines.MustKinds(orderKind(&receiver{}, deadlines.Backoff{First: time.Minute}))
	for _, c := range []struct {
		cfg  deadlines.SweeperConfig
		want string
	}{
		{deadlines.SweeperConfig{Kinds: kinds, Every: time.Minute}, "no Index"},
		// what a constructor that failed returns, passed on before its error is read
		{deadlines.SweeperConfig{Index: (*memory.Index)(nil), Kinds: kinds, Every: time.Minute}, "no Index"},
		{deadlines.SweeperConfig{Index: memory.New(kinds, 1), Every: time.Minute}, "no Kinds"},
		{deadlines.SweeperConfig{Index: memory.New(kinds, 1), Kinds: kinds}, `kind "unconfirmed-order" backs off its sends: want Every`},
		{deadlines.SweeperConfig{Index: memory.New(kinds, 1), Kinds: kinds, Every: time.Minute, Concurrency: -1}, "neither negative"},
	} {
		if _, err := deadlines.NewSweeper(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSweeper(%+v) = %v; want an error saying %q", c.cfg, err, c.want)
		}
	}
}

func TestAListingWithoutAnIndexIsAnError(t *testing.T) {
	kinds := deadlines.MustKinds(orderKind(&receiver{}, deadlines.Backoff{}))
	for _, idx := range []deadlines.Index{nil, (*memory.Index)(nil)} {
		if _, err := deadlines.List(context.Background(), idx, kinds, deadlines.Query{Limit: 1}); err == nil || !strings.Contains(err.Error(), "no Index") {
			t.Errorf("List over %#v: %v, want an error saying no Index", idx, err)
		}
	}
}

func TestSweepOneSendsAnOutstandingRowOnceItIsDue(t *testing.T) {
	r := &receiver{}
	kinds := deadlines.MustKinds(orderKind(r, deadlines.Backoff{}), deadlines.Kind{Name: "review", Changes: placed, Work: deadlines.ByHand{}, Prefix: "review#"})
	idx := memory.New(kinds, 2)
	// The wait is on the clock, and so is the invocation's deadline: due now.
	opened := time.Now().UTC().Truncate(time.Millisecond).Add(-15 * time.Minute)
	if err := idx.Apply(context.Background(), deadlines.Record{Stream: "acted-1", Position: 1, Type: "OrderPlaced", At: opened}); err != nil {
		t.Fatal(err)
	}
	s := sweeper(t, deadlines.SweeperConfig{Index: idx, Kinds: kinds})
	due := opened.Add(15 * time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	one, err := s.SweepOne(ctx, "unconfirmed-order", "unconfirmed-order#acted-1", due.Add(-20*time.Millisecond), time.Second)
	if err != nil || one.Kind.Acted != 1 || one.Now.Before(due) || one.Subject != "acted-1" {
		t.Errorf("early, with time to wait: %+v, %v; want it sent once due", one, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := s.SweepOne(ctx, "unconfirmed-order", "unconfirmed-order#acted-1", due.Add(-time.Hour), 2*time.Second); !errors.Is(err, deadlines.ErrNotYetDue) {
		t.Errorf("an hour early: %v, want ErrNotYetDue", err)
	}
	if err := idx.Apply(context.Background(), deadlines.Record{Stream: "acted-1", Position: 2, Type: "OrderConfirmed", At: t0}); err != nil {
		t.Fatal(err)
	}
	if one, err := s.SweepOne(context.Background(), "unconfirmed-order", "unconfirmed-order#acted-1", due.Add(time.Hour), time.Second); err != nil || one.Kind.Found != 0 {
		t.Errorf("settled: %+v, %v; want nothing found", one, err)
	}
	if r.count("unconfirmed-order:acted-1") != 1 {
		t.Errorf("sent %d times, want once", r.count("unconfirmed-order:acted-1"))
	}
	for kind, key := range map[string]string{"review": "review#acted-1", "nothing": "x", "unconfirmed-order": "review#acted-1"} {
		if _, err := s.SweepOne(context.Background(), kind, key, due, time.Second); err == nil {
			t.Errorf("SweepOne(%s, %s): want refused", kind, key)
		}
	}
}
