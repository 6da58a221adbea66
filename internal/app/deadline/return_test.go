package deadline_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
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
func (w *world) approve(bikeID string, ret deadline.Kind) (string, time.Time) {
	w.t.Helper()
	id := w.request(bikeID)
	w.pumpUntil("the payment to be listed", func() bool { return w.listed(id) })
	if _, err := w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(id)}, command.Meta{}); err != nil {
		w.t.Fatal(err)
	}
	var row deadline.Row
	w.pumpUntil("the return to be due", func() bool {
		r, ok, err := w.projection.Row(ctx, ret, id)
		if err != nil {
			w.t.Fatal(err)
		}
		row = r
		return ok && w.bikeStatus(bikeID) == rental.StatusRented
	})
	return id, row.Due
}

// TestTheSweepFlagsAnOverdueReturnOnceAndLeavesTheRestAlone: an approved rental's
// return is due the rental period after its approval; the sweep finds it through
// the index only once it is overdue, sends FlagOverdueReturn, which records
// ReturnOverdue, and the row leaves the index: the next sweep finds nothing.
func TestTheSweepFlagsAnOverdueReturnOnceAndLeavesTheRestAlone(t *testing.T) {
	c := &clock{}
	w := newWorld(t, 2, command.WithClock(c.Now))
	kinds := deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{Canceller: w.process, Flagger: w.commands})
	ret, _ := kinds.ByName(deadlinekinds.Return)
	late, due := w.approve("ret-late", ret)
	var metrics lockedBuffer
	s := &deadline.Sweeper{Index: w.projection, Kinds: kinds, Logger: slog.New(slog.DiscardHandler),
		Report: sweepmetrics.Writer(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) })}

	// At the due time exactly, nothing is overdue.
	sum, err := s.Sweep(ctx, due)
	if k, _ := sum.Kind(deadlinekinds.Return); err != nil || k.Found != 0 {
		t.Fatalf("at the due time: %+v, %v; want nothing found", k, err)
	}
	fresh, _ := w.approve("ret-fresh", ret) // approved now: due two hours on
	now := due.Add(time.Millisecond)
	c.set(now)
	sum, err = s.Sweep(ctx, now)
	k, _ := sum.Kind(deadlinekinds.Return)
	if err != nil || k.Found != 1 || k.Acted != 1 || k.OldestOverdue != time.Millisecond || sum.Found != 0 || sum.Stuck != 0 {
		t.Fatalf("a millisecond late: %+v (%+v), %v; want the late return flagged, nothing else", k, sum, err)
	}
	if lines := strings.Split(strings.TrimSpace(metrics.String()), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[0], `"OverdueReturns":0`) || !strings.Contains(lines[1], `"OverdueReturns":1,`) || !strings.Contains(lines[1], `"ReturnRowsActed":1,`) {
		t.Errorf("metrics %s: want OverdueReturns 0, then 1, and the return acted on", metrics.String())
	}
	w.pumpUntil("the flagged return to leave the index", func() bool {
		_, ok, err := w.projection.Row(ctx, ret, late)
		return err == nil && !ok
	})
	if _, ok, err := w.projection.Row(ctx, ret, fresh); err != nil || !ok {
		t.Errorf("the fresh rental's return: %v, %v; want it still due", ok, err)
	}
	b, _, err := w.commands.LoadBike(ctx, "ret-late")
	if err != nil || b.DueAt.IsZero() {
		t.Errorf("bike %+v, %v; want its rental flagged overdue", b, err)
	}
	sum, err = s.Sweep(ctx, now.Add(time.Millisecond))
	if k, _ := sum.Kind(deadlinekinds.Return); err != nil || k.Found != 0 {
		t.Errorf("after the flag: %+v, %v; want nothing found", k, err)
	}
}

// TestAReturnFlaggedLateIsDeclined: the bike came back after the sweep's query saw
// the row and before its command arrived (the projector has not caught up): the
// bike declines FlagOverdueReturn, nothing is recorded, and the return settles
// the row.
func TestAReturnFlaggedLateIsDeclined(t *testing.T) {
	c := &clock{}
	w := newWorld(t, 2, command.WithClock(c.Now))
	kinds := deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{Canceller: w.process, Flagger: w.commands})
	ret, _ := kinds.ByName(deadlinekinds.Return)
	id, due := w.approve("ret-back", ret)
	now := due.Add(time.Minute)
	c.set(now)
	if _, err := w.commands.Bike(ctx, rental.ReturnBike{BikeID: "ret-back", RentalID: id}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	sum, err := (&deadline.Sweeper{Index: w.projection, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)}).Sweep(ctx, now)
	if k, _ := sum.Kind(deadlinekinds.Return); err != nil || k.Found != 1 || k.Declined != 1 || k.Acted != 0 {
		t.Fatalf("returned meanwhile: %+v, %v; want it found and declined", k, err)
	}
	b, _, err := w.commands.LoadBike(ctx, "ret-back")
	if err != nil || !b.DueAt.IsZero() || b.Status != rental.StatusAvailable {
		t.Errorf("bike %+v, %v; want it available, never flagged", b, err)
	}
	w.pumpUntil("the return to settle the row", func() bool {
		_, ok, err := w.projection.Row(ctx, ret, id)
		return err == nil && !ok
	})
}
