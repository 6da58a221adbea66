package deadlinekinds_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// clock is a settable clock for the command handler, which judges by its own
// clock whether a return is due.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		return time.Now()
	}
	return c.now
}

func (c *clock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// approve requests a bike, confirms its payment and waits until the process has
// approved the rental and the projector has opened its return-due row, whose due
// time it returns.
func (w *world) approve(bikeID string) (string, time.Time) {
	w.t.Helper()
	id := w.request(bikeID)
	w.pumpUntil("the payment to be listed", func() bool { return w.listed(id) })
	if _, err := w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(id)}, command.Meta{}); err != nil {
		w.t.Fatal(err)
	}
	var row deadlines.Row
	w.pumpUntil("the return to be due", func() bool {
		r, ok := w.row(deadlinekinds.Return, id)
		row = r
		return ok && w.bikeStatus(bikeID) == rental.StatusRented
	})
	return id, row.Due
}

// sameRow reports whether a and b are the same row, due at the same instant.
func sameRow(a, b deadlines.Row) bool {
	return a.Kind == b.Kind && a.Subject == b.Subject && a.Due.Equal(b.Due)
}

// TestTheSweepFlagsAnOverdueReturnOnceAndLeavesTheRestAlone: an approved rental's
// return is due the rental period after its approval; the sweep finds it through
// the index only once it is overdue, sends FlagOverdueReturn, which records
// ReturnOverdue, and the overdue return takes the row over, out of the swept
// kind's rows: the next sweeps neither read it nor send anything, and operators
// see it listed as an overdue return, due when it was, until the bike comes back
// (replays and a reshard change none of it).
func TestTheSweepFlagsAnOverdueReturnOnceAndLeavesTheRestAlone(t *testing.T) {
	c := &clock{}
	w := newWorld(t, 2, command.WithClock(c.Now))
	late, due := w.approve("ret-late")
	var metrics lockedBuffer
	s := w.sweeper(deadlinekinds.Receivers{Flagger: w.commands})
	report := awslambda.Report(sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) }).Report)

	// At the due time exactly, nothing is overdue.
	sum, err := sweepAt(s, due, report)
	if k := of(sum, deadlinekinds.Return); err != nil || k.Found != 0 {
		t.Fatalf("at the due time: %+v, %v; want nothing found", k, err)
	}
	fresh, _ := w.approve("ret-fresh") // approved now: due two hours on
	now := due.Add(time.Millisecond)
	c.set(now)
	sum, err = sweepAt(s, now, report)
	k := of(sum, deadlinekinds.Return)
	if err != nil || k.Found != 1 || k.Acted != 1 || k.OldestOverdue != time.Millisecond || of(sum, deadlinekinds.Payment).Found != 0 || of(sum, deadlinekinds.Stuck).Found != 0 {
		t.Fatalf("a millisecond late: %+v (%+v), %v; want the late return flagged, nothing else", k, sum, err)
	}
	if lines := strings.Split(strings.TrimSpace(metrics.String()), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[0], `"ReturnRowsFound":0`) || !strings.Contains(lines[1], `"ReturnRowsFound":1,`) || !strings.Contains(lines[1], `"ReturnRowsActed":1,`) {
		t.Errorf("metrics %s: want ReturnRowsFound 0, then 1, and the return acted on", metrics.String())
	}
	w.pumpUntil("the flagged return to leave the swept kind's rows", func() bool {
		_, ok := w.row(deadlinekinds.Return, late)
		return !ok
	})
	want := deadlines.Row{Kind: deadlinekinds.Return, Subject: late, Due: due}
	overdue := func(what string, idx deadlines.Index) {
		t.Helper()
		yes := true
		page, err := deadlines.List(ctx, idx, w.kinds, deadlines.Query{Kind: deadlinekinds.Return, Overdue: &yes, Now: now, Limit: 10})
		if err != nil || len(page.Rows) != 1 || !sameRow(page.Rows[0], want) {
			t.Fatalf("%s: overdue returns %+v, %v; want %+v", what, page.Rows, err, want)
		}
		if all, err := deadlines.List(ctx, idx, w.kinds, deadlines.Query{Limit: 10}); err != nil || !slices.ContainsFunc(all.Rows, func(r deadlines.Row) bool { return sameRow(r, want) }) {
			t.Fatalf("%s: every deadline %+v, %v; want %+v among them", what, all.Rows, err, want)
		}
	}
	overdue("flagged", w.table)
	if _, ok := w.row(deadlinekinds.Return, fresh); !ok {
		t.Errorf("the fresh rental's return is no longer due")
	}
	b, _, err := w.commands.LoadBike(ctx, "ret-late")
	if err != nil || b.DueAt.IsZero() {
		t.Errorf("bike %+v, %v; want its rental flagged overdue", b, err)
	}
	before := len(metrics.String())
	for i := range 3 {
		sum, err = sweepAt(s, now.Add(time.Duration(i+1)*time.Millisecond), report)
		read := 0
		for _, k := range sum.Kinds {
			read += k.ItemsRead
		}
		if k := of(sum, deadlinekinds.Return); err != nil || k.Found != 0 || read != 0 {
			t.Errorf("sweep %d after the flag: %+v (%+v), %v; want nothing read or found", i, k, sum, err)
		}
	}
	if !strings.Contains(metrics.String()[before:], `"ReturnRowsFound":0`) || strings.Contains(metrics.String()[before:], `"ReturnRowsFound":1`) {
		t.Errorf("metrics after the flag %s: want ReturnRowsFound 0", metrics.String()[before:])
	}
	recs, err := w.store.Read(ctx, rental.StreamID("ret-late"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if flags := slices.DeleteFunc(slices.Clone(recs), func(r eventstore.Record) bool { return r.Type != (rental.ReturnOverdue{}).EventType() }); len(flags) != 1 {
		t.Fatalf("bike records %d ReturnOverdue; want 1", len(flags))
	}
	// A replayed approval and flag, and a reshard, leave the row where it is.
	w.apply(recs...)
	one, err := deadlinetable.New(w.client, w.deadlines, w.kinds, deadlinetable.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.Reshard(ctx); err != nil {
		t.Fatal(err)
	}
	overdue("replayed and resharded to one shard", one)
	if _, ok, err := one.Row(ctx, kind(deadlinekinds.Return), late); err != nil || ok {
		t.Errorf("replayed: return row %v, %v; want it out of the swept kind's rows", ok, err)
	}
	if _, err := w.commands.Bike(ctx, rental.ReturnBike{BikeID: "ret-late", RentalID: late}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	unlisted := func() bool {
		page, err := deadlines.List(ctx, one, w.kinds, deadlines.Query{Kind: deadlinekinds.Return, Limit: 10})
		return err == nil && !slices.ContainsFunc(page.Rows, func(r deadlines.Row) bool { return r.Subject == late })
	}
	w.pumpUntil("the return to settle the overdue row", unlisted)
	w.apply(recs...) // a late flag does not bring it back
	if !unlisted() {
		t.Errorf("a replayed flag listed the returned rental again")
	}
}

// TestAReturnFlaggedLateIsDeclined: the bike came back after the sweep's query saw
// the row and before its command arrived (the projector has not caught up): the
// bike declines FlagOverdueReturn, nothing is recorded, and the return settles
// the row.
func TestAReturnFlaggedLateIsDeclined(t *testing.T) {
	c := &clock{}
	w := newWorld(t, 2, command.WithClock(c.Now))
	id, due := w.approve("ret-back")
	now := due.Add(time.Minute)
	c.set(now)
	if _, err := w.commands.Bike(ctx, rental.ReturnBike{BikeID: "ret-back", RentalID: id}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	sum, err := sweepAt(w.sweeper(deadlinekinds.Receivers{Flagger: w.commands}), now)
	if k := of(sum, deadlinekinds.Return); err != nil || k.Found != 1 || k.Declined != 1 || k.Acted != 0 {
		t.Fatalf("returned meanwhile: %+v, %v; want it found and declined", k, err)
	}
	b, _, err := w.commands.LoadBike(ctx, "ret-back")
	if err != nil || !b.DueAt.IsZero() || b.Status != rental.StatusAvailable {
		t.Errorf("bike %+v, %v; want it available, never flagged", b, err)
	}
	w.pumpUntil("the return to settle the row", func() bool {
		_, ok := w.row(deadlinekinds.Return, id)
		return !ok
	})
}
