package deadlinekinds_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// oneRow is the input of a row's own one-time schedule (precise mode).
func oneRow(kind, key string) json.RawMessage {
	b, _ := json.Marshal(deadlines.Trigger{Kind: kind, Key: key})
	return b
}

// TestSweepOne: a payment's own one-time schedule, through the sweep function's
// handler, cancels it once it is overdue, reading one item; fired twice, or for a
// payment settled meanwhile, it finds nothing; a key named as another kind's is
// refused. Fired early with less time left than the wait, it fails for Scheduler
// to retry; with time to wait, it waits for the due time, then cancels.
func TestSweepOne(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	overdue, settled, early := w.request("one-overdue"), w.request("one-settled"), w.request("one-early")
	w.pumpUntil("the payments to be listed", func() bool { return w.listed(overdue) && w.listed(settled) && w.listed(early) })
	if _, err := w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(settled)}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	w.pumpUntil("the settled payment to leave the list", func() bool { return !w.listed(settled) })

	s := w.sweeper(deadlinekinds.Receivers{})
	later := time.Now().Add(time.Hour)
	handler := awslambda.Sweep(s, awslambda.Clock(func() time.Time { return later }), awslambda.Logger(slog.New(slog.DiscardHandler)))
	sum, err := handler(ctx, oneRow(deadlinekinds.Payment, payment.ReferenceFor(overdue)))
	if k := of(sum, deadlinekinds.Payment); err != nil || k.Found != 1 || k.Acted != 1 || k.ItemsRead != 1 || sum.Subject != overdue || len(sum.Kinds) != 1 {
		t.Fatalf("overdue: %+v, %v; want it found and cancelled after reading one item", sum, err)
	}
	w.pumpUntil("the bike to be released", func() bool { return w.bikeStatus("one-overdue") == rental.StatusAvailable })
	for name, id := range map[string]string{"fired twice": overdue, "settled": settled} {
		sum, err := handler(ctx, oneRow(deadlinekinds.Payment, payment.ReferenceFor(id)))
		if k := of(sum, deadlinekinds.Payment); err != nil || k.Found != 0 || k.Acted != 0 {
			t.Errorf("%s: %+v, %v; want nothing found", name, sum, err)
		}
	}
	if _, err := handler(ctx, oneRow(deadlinekinds.Stuck, payment.ReferenceFor(settled))); err == nil {
		t.Error("a payment's key named as another kind's was accepted")
	}

	// Fired early, with less time left than the wait: refused, for Scheduler to retry.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.SweepOne(short, deadlinekinds.Payment, payment.ReferenceFor(early), time.Now(), time.Second); !errors.Is(err, deadlines.ErrNotYetDue) {
		t.Errorf("early, 15 minutes before its deadline: %v, want ErrNotYetDue", err)
	}
	// Fired early with time to wait: it waits for the deadline, then cancels. The
	// row's due time is the one its kind had when it was projected: a table of its
	// own projects the payment under a timeout of two seconds.
	policy := deadlinekinds.Policy{Timeout: 2 * time.Second}
	twoSeconds := deadlinekinds.MustDeclare(policy, deadlinekinds.Receivers{})
	quick, err := deadlinetable.New(w.client, newDeadlinesTable(t, w.client), twoSeconds)
	if err != nil {
		t.Fatal(err)
	}
	records, err := w.store.Read(ctx, payment.StreamID(payment.ReferenceFor(early)), 0)
	if err != nil || len(records) == 0 {
		t.Fatalf("the early payment's stream: %v, %v", records, err)
	}
	applyTo(t, quick, records[0])
	start := time.Now()
	row, _, err := quick.Row(ctx, kind(deadlinekinds.Payment), early)
	if err != nil {
		t.Fatal(err)
	}
	one, err := newSweeper(t, quick, policy, deadlinekinds.Receivers{Canceller: w.process}, 0).SweepOne(short, deadlinekinds.Payment, payment.ReferenceFor(early), row.Due.Add(-time.Second), time.Second)
	if err != nil || one.Kind.Acted != 1 {
		t.Fatalf("early by a second: %+v, %v; want it cancelled after waiting", one, err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("cancelled after %v, before the deadline", waited)
	}
}

// TestSummaryJSONHasOldestOverdueInMilliseconds: what the sweep function returns
// (awslambda.Summary) names each kind's counts, its oldest overdue in whole
// milliseconds, and reads back as it was.
func TestSummaryJSONHasOldestOverdueInMilliseconds(t *testing.T) {
	in := awslambda.Summary{Now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Subject: "b_x", Kinds: []deadlines.KindSummary{
		{Kind: deadlinekinds.Payment, Found: 2, OldestOverdue: 1500 * time.Millisecond, ItemsRead: 2},
		{Kind: deadlinekinds.Cancellation, Found: 3, Waiting: 2, Left: 1, ItemsRead: 3},
		{Kind: deadlinekinds.Redelivery, Found: 1, Left: 1, OldestOverdue: 2500 * time.Millisecond, ItemsRead: 1},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Subject string           `json:"subject"`
		Kinds   []map[string]any `json:"kinds"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Kinds) != 3 || raw.Subject != "b_x" || raw.Kinds[0]["oldestOverdueMs"] != 1500.0 || raw.Kinds[0]["found"] != 2.0 ||
		raw.Kinds[1]["waiting"] != 2.0 || raw.Kinds[1]["left"] != 1.0 || raw.Kinds[2]["oldestOverdueMs"] != 2500.0 {
		t.Errorf("summary JSON %s: want the payment's oldestOverdueMs 1500 and found 2, the cancellations' 2 waiting and 1 left, the redelivery's oldestOverdueMs 2500", b)
	}
	var out awslambda.Summary
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: %+v, %v; want %+v", out, err, in)
	}
}

// TestTheSweepFindsStuckRentalsThroughTheIndexAndRepairsThem: only a process open
// for longer than the timeout plus the grace is stuck; each goes to the repairer,
// oldest first, and the outcomes are counted in the summary and the metrics. A
// rental whose payment the same sweep found overdue is being called off, not
// stuck.
func TestTheSweepFindsStuckRentalsThroughTheIndexAndRepairsThem(t *testing.T) {
	w := newWorld(t, 4)
	now := time.Now()
	var stuck []string
	for i := range 6 {
		rentalID := id(fmt.Sprintf("stuck%d", i))
		stuck = append(stuck, rentalID)
		w.apply(requested(t, rentalID, now.Add(-time.Hour).Add(time.Duration(i)*time.Second)))
	}
	for i := range 20 { // open, but within the timeout plus the grace
		w.apply(requested(t, id(fmt.Sprintf("fresh%d", i)), now.Add(-20*time.Minute)))
	}
	// An old request whose payment is overdue right now: this sweep calls it off.
	overdue := project(t, w, 1, now.Add(-time.Hour))[0]
	w.apply(requested(t, overdue, now.Add(-time.Hour)))

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
	policy := deadlinekinds.Policy{Timeout: 15 * time.Minute, Grace: 10 * time.Minute}
	s := newSweeper(t, w.table, policy, deadlinekinds.Receivers{Canceller: &recording{}, Repairer: r}, 0)
	sum, err := sweepAt(s, now, awslambda.Report(sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) }).Report))
	if err != nil {
		t.Fatal(err)
	}
	k := of(sum, deadlinekinds.Stuck)
	if of(sum, deadlinekinds.Payment).Found != 1 || k.Found != 6 || k.Acted != 4 || k.Declined != 1 || k.Failed != 1 || k.ItemsRead != 7 {
		t.Errorf("summary %+v, want 1 overdue, 6 stuck: 4 repaired, 1 left for an operator, 1 failed, from 7 items read", sum)
	}
	// The oldest stuck was requested an hour ago: stuck since 35 minutes.
	if k.OldestOverdue < 35*time.Minute || k.OldestOverdue >= 35*time.Minute+time.Millisecond {
		t.Errorf("oldest stuck %s, want 35m: stuck from the timeout plus the grace after the request", k.OldestOverdue)
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
	asked := len(r.asked)
	sum, err = sweepAt(newSweeper(t, w.table, policy, deadlinekinds.Receivers{Canceller: &recording{}}, 0), now)
	if k := of(sum, deadlinekinds.Stuck); err != nil || k.Found != 6 || k.Left != 6 || k.Acted != 0 || len(r.asked) != asked {
		t.Errorf("report-only sweep: %+v, %v; want 6 stuck, all left", sum, err)
	}
}
