package deadline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// requested is the BikeRequested record of a rental, recorded at at.
func requested(t *testing.T, rentalID string, at time.Time) eventstore.Record {
	t.Helper()
	bikeID, err := rental.BikeIDOf(rentalID)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rental.BikeRequested{BikeID: bikeID, Renter: "r", RentalID: rentalID})
	return eventstore.Record{StreamID: rental.StreamID(bikeID), Version: 2, Event: eventstore.Event{ID: "req-" + rentalID, Type: "BikeRequested", Data: data, RecordedAt: at}}
}

// completed is the process's completion record of a rental, recorded at at.
func completed(rentalID string, at time.Time) eventstore.Record {
	data, _ := json.Marshal(rentalpayment.RentalPaymentProcessCompleted{RentalID: rentalID, Outcome: rentalpayment.CompletedCancelled})
	return eventstore.Record{StreamID: rentalpayment.StreamID(rentalID), Version: 2, Event: eventstore.Event{ID: "done-" + rentalID, Type: rentalpayment.TypeCompleted, Data: data, RecordedAt: at}}
}

func apply(t *testing.T, p *deadlinetable.Projection, recs ...eventstore.Record) {
	t.Helper()
	for _, r := range recs {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatalf("apply %s %s: %v", r.StreamID, r.Type, err)
		}
	}
}

func openIDs(t *testing.T, p *deadlinetable.Projection, cutoff time.Time) []string {
	t.Helper()
	open, _, err := p.OpenBefore(ctx, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range open {
		ids = append(ids, o.RentalID)
	}
	return ids
}

// TestAProcessIsOpenFromTheRequestUntilItsCompletion follows the open-process rows:
// a request opens one, stamped with its time; the completion closes it, whichever
// reaches the projector first; a replayed request never reopens it; and the rows
// never show up among the outstanding payments.
func TestAProcessIsOpenFromTheRequestUntilItsCompletion(t *testing.T) {
	w := newWorld(t, 4)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	a, b, c := rental.NewRentalID("ba", "AAAAAAAAAAAAAAAAAAAAAA"), rental.NewRentalID("bb", "AAAAAAAAAAAAAAAAAAAAAA"), rental.NewRentalID("bc", "AAAAAAAAAAAAAAAAAAAAAA")
	apply(t, w.projection, requested(t, a, t0), requested(t, b, t0.Add(time.Minute)))
	// The completion of c arrives before its request (another stream, another shard).
	apply(t, w.projection, completed(c, t0.Add(3*time.Minute)), requested(t, c, t0.Add(2*time.Minute)))

	if got := openIDs(t, w.projection, t0); len(got) != 0 {
		t.Errorf("open before %v: %q, want none (the cutoff is exclusive)", t0, got)
	}
	if got := openIDs(t, w.projection, t0.Add(time.Millisecond)); !slices.Equal(got, []string{a}) {
		t.Errorf("open just after the first request: %q, want [%s]", got, a)
	}
	if got := openIDs(t, w.projection, time.Now()); !slices.Equal(got, []string{a, b}) {
		t.Errorf("open now: %q, want [%s %s], oldest first, and not %s, which completed", got, a, b, c)
	}
	open, _, err := w.projection.OpenBefore(ctx, time.Now())
	if err != nil || len(open) == 0 || !open[0].RequestedAt.Equal(t0) {
		t.Errorf("the first open process: %+v, %v; want it stamped %v", open, err, t0)
	}

	apply(t, w.projection, completed(a, t0.Add(20*time.Minute)), completed(a, t0.Add(20*time.Minute)), requested(t, a, t0))
	if got := openIDs(t, w.projection, time.Now()); !slices.Equal(got, []string{b}) {
		t.Errorf("open after a's completion and a replayed request: %q, want [%s]", got, b)
	}
	if rows, err := w.projection.List(ctx, 100); err != nil || len(rows) != 0 {
		t.Errorf("outstanding payments: %+v, %v; want none: open processes are not payments", rows, err)
	}
	if rows, err := w.projection.Overdue(ctx, time.Now(), 100); err != nil || len(rows) != 0 {
		t.Errorf("overdue payments: %+v, %v; want none", rows, err)
	}
}

func TestACorruptRequestOrCompletionIsRefused(t *testing.T) {
	w := newWorld(t, 1)
	for _, r := range []eventstore.Record{
		{StreamID: "bike-x", Version: 2, Event: eventstore.Event{Type: "BikeRequested", Data: []byte(`{`)}},
		{StreamID: "bike-x", Version: 2, Event: eventstore.Event{Type: "BikeRequested", Data: []byte(`{"rentalId":""}`)}},
		{StreamID: "rentalpayment-x", Version: 2, Event: eventstore.Event{Type: rentalpayment.TypeCompleted, Data: []byte(`{"rentalId":"a b"}`)}},
	} {
		if err := w.projection.Apply(ctx, r); !errors.Is(err, eventstore.ErrCorruptRecord) {
			t.Errorf("%s %s: %v, want ErrCorruptRecord", r.Type, r.Data, err)
		}
	}
	if got := openIDs(t, w.projection, time.Now()); len(got) != 0 {
		t.Errorf("open %q after refused records, want none", got)
	}
}

// repairs is a StuckRepairer that answers per rental and records what it was asked.
type repairs struct {
	mu     sync.Mutex
	asked  []string
	answer func(rentalID string) (bool, error)
}

func (r *repairs) RepairStuck(_ context.Context, rentalID string) (bool, string, error) {
	r.mu.Lock()
	r.asked = append(r.asked, rentalID)
	r.mu.Unlock()
	ok, err := r.answer(rentalID)
	return ok, "test", err
}

// TestTheSweepFindsStuckRentalsThroughTheIndexAndRepairsThem: only a process open
// for longer than the timeout plus the grace is stuck; each goes to the repairer,
// and the outcomes are counted in the summary and the metrics. A rental whose
// payment the same sweep found overdue is being called off, not stuck.
func TestTheSweepFindsStuckRentalsThroughTheIndexAndRepairsThem(t *testing.T) {
	w := newWorld(t, 4)
	now := time.Now()
	var stuck []string
	for i := range 6 {
		id := rental.NewRentalID(fmt.Sprintf("stuck%d", i), "AAAAAAAAAAAAAAAAAAAAAA")
		stuck = append(stuck, id)
		apply(t, w.projection, requested(t, id, now.Add(-time.Hour).Add(time.Duration(i)*time.Second)))
	}
	for i := range 20 { // open, but within the timeout plus the grace
		apply(t, w.projection, requested(t, rental.NewRentalID(fmt.Sprintf("fresh%d", i), "AAAAAAAAAAAAAAAAAAAAAA"), now.Add(-20*time.Minute)))
	}
	// An old request whose payment is overdue right now: this sweep calls it off.
	overdue := project(t, w, 1, now.Add(-time.Hour))[0]
	apply(t, w.projection, requested(t, overdue, now.Add(-time.Hour)))

	r := &repairs{answer: func(id string) (bool, error) {
		switch id {
		case stuck[1]:
			return false, nil // left for an operator
		case stuck[2]:
			return false, errors.New("provider down")
		}
		return true, nil
	}}
	var metrics bytes.Buffer
	s := over(w.projection, &recording{}, deadline.Policy{Timeout: 15 * time.Minute, Grace: 10 * time.Minute}, r,
		sweep.Sweep{Reporter: sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) }), Logger: slog.New(slog.DiscardHandler)})
	sum, err := s.Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Of(deadlinekinds.Payment).Found != 1 || sum.Of(deadlinekinds.Stuck).Found != 6 || sum.Of(deadlinekinds.Stuck).Acted != 4 || (sum.Of(deadlinekinds.Stuck).Found-sum.Of(deadlinekinds.Stuck).Acted) != 2 || otherReads(sum) != 7 {
		t.Errorf("summary %+v, want 1 overdue, 6 stuck: 4 repaired, 2 left, from 7 items read", sum)
	}
	if !sum.Of(deadlinekinds.Stuck).Cutoff.Equal(now.Add(-25 * time.Minute).UTC()) {
		t.Errorf("stuck cutoff %v, want now minus 25m", sum.Of(deadlinekinds.Stuck).Cutoff)
	}
	if !slices.Equal(r.asked, stuck) {
		t.Errorf("repairs asked for %q, want the stuck rentals oldest first %q", r.asked, stuck)
	}
	var doc map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(metrics.Bytes()), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["StuckRowsFound"] != float64(6) || doc["StuckRowsActed"] != float64(4) || doc["StuckRowsDeclined"] != float64(1) || doc["StuckRowsFailed"] != float64(1) {
		t.Errorf("metrics %s, want StuckRowsFound 6, StuckRowsActed 4, StuckRowsDeclined 1, StuckRowsFailed 1", metrics.String())
	}

	// Without a repairer every stuck rental is left, and none is touched.
	report := over(w.projection, &recording{}, deadline.Policy{Timeout: 15 * time.Minute}, nil, sweep.Sweep{Logger: slog.New(slog.DiscardHandler)})
	sum, err = report.Sweep(ctx, now)
	if err != nil || sum.Of(deadlinekinds.Stuck).Found != 6 || (sum.Of(deadlinekinds.Stuck).Found-sum.Of(deadlinekinds.Stuck).Acted) != 6 || sum.Of(deadlinekinds.Stuck).Acted != 0 {
		t.Errorf("report-only sweep: %+v, %v; want 6 stuck, all left", sum, err)
	}
}
