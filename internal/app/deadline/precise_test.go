package deadline_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/onetime"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

func TestAtExpression(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 11, 30, 9, 14, 0, 0, time.UTC):                     "at(2026-11-30T09:14:00)",
		time.Date(2026, 11, 30, 9, 14, 0, 1, time.UTC):                     "at(2026-11-30T09:14:00)",
		time.Date(2026, 12, 31, 23, 59, 59, 999e6, time.UTC):               "at(2026-12-31T23:59:59)",
		time.Date(2026, 11, 30, 10, 14, 0, 0, time.FixedZone("CET", 3600)): "at(2026-11-30T09:14:00)",
	} {
		got := onetime.AtExpression(in)
		if got != want {
			t.Errorf("AtExpression(%v) = %s, want %s", in, got, want)
		}
		back, err := onetime.ParseAtExpression(got)
		if err != nil || back.After(in) || in.Sub(back) >= time.Second {
			t.Errorf("ParseAtExpression(%s) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "rate(1 minute)", "at()", "at(2026-11-30 09:14:00)", "at(2026-11-30T09:14:00"} {
		if _, err := onetime.ParseAtExpression(bad); err == nil {
			t.Errorf("ParseAtExpression(%q) accepted", bad)
		}
	}
	long := "rp_" + string(make([]byte, 70))
	if n := onetime.ScheduleName(long); len(n) > 64 || n == onetime.ScheduleName(long+"x") {
		t.Errorf("ScheduleName of a long reference: %q", n)
	}
}

func TestSweepOne(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	overdue := w.request("one-overdue")
	settled := w.request("one-settled")
	early := w.request("one-early")
	w.pumpUntil("the payments to be listed", func() bool { return w.listed(overdue) && w.listed(settled) && w.listed(early) })
	if _, err := w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(settled)}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	w.pumpUntil("the settled payment to leave the list", func() bool { return !w.listed(settled) })

	s := w.sweeper(nil)
	later := time.Now().Add(time.Hour)
	sum, err := s.SweepOne(ctx, deadlinekinds.Payment, payment.ReferenceFor(overdue), later)
	if err != nil || sum.Of(deadlinekinds.Payment).Found != 1 || sum.Of(deadlinekinds.Payment).Acted != 1 || sum.Of(deadlinekinds.Payment).ItemsRead != 1 || sum.RentalID != overdue {
		t.Fatalf("overdue: %+v, %v; want it found and cancelled after reading one item", sum, err)
	}
	w.pumpUntil("the bike to be released", func() bool { return w.bikeStatus("one-overdue") == rental.StatusAvailable })
	for name, id := range map[string]string{"fired twice": overdue, "settled": settled} {
		sum, err := s.SweepOne(ctx, deadlinekinds.Payment, payment.ReferenceFor(id), later)
		if err != nil || sum.Of(deadlinekinds.Payment).Found != 0 || sum.Of(deadlinekinds.Payment).Acted != 0 {
			t.Errorf("%s: %+v, %v; want nothing found", name, sum, err)
		}
	}
	if _, err := s.SweepOne(ctx, deadlinekinds.Stuck, payment.ReferenceFor(settled), later); err == nil {
		t.Error("a payment's key named as another kind's was accepted")
	}

	// Fired early, with less time left than the wait: refused, for Scheduler to retry.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.SweepOne(short, deadlinekinds.Payment, payment.ReferenceFor(early), time.Now()); !errors.Is(err, deadline.ErrNotYetDue) {
		t.Errorf("early, 15 minutes before its deadline: %v, want ErrNotYetDue", err)
	}
	// Fired early with time to wait: it waits for the deadline, then cancels. The
	// row's due time is the one its kind had when it was projected: a table of its
	// own projects the payment under a timeout of two seconds.
	twoSeconds := deadlinekinds.MustDeclare(deadline.Policy{Timeout: 2 * time.Second}, deadlinekinds.Receivers{Canceller: w.process})
	table := emulatortest.CreateTable(t, w.client, schema.Deadlines, "pending")
	quick, err := deadlinetable.New(w.client, table, deadlinetable.DefaultShards, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	quick = quick.WithKinds(twoSeconds)
	records, err := w.store.Read(ctx, payment.StreamID(payment.ReferenceFor(early)), 0)
	if err != nil || len(records) == 0 {
		t.Fatalf("the early payment's stream: %v, %v", records, err)
	}
	if err := quick.Apply(ctx, records[0]); err != nil {
		t.Fatal(err)
	}
	s = &sweep.Sweep{Deadlines: &deadline.Sweeper{Index: quick, Kinds: twoSeconds}}
	start := time.Now()
	row, _, err := quick.Get(ctx, payment.ReferenceFor(early))
	if err != nil {
		t.Fatal(err)
	}
	sum, err = s.SweepOne(short, deadlinekinds.Payment, payment.ReferenceFor(early), row.PreparedAt.Add(time.Second))
	if err != nil || sum.Of(deadlinekinds.Payment).Acted != 1 {
		t.Fatalf("early by a second: %+v, %v; want it cancelled after waiting", sum, err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("cancelled after %v, before the deadline", waited)
	}
}

func TestSummaryJSONHasOldestOverdueInMilliseconds(t *testing.T) {
	in := sweep.Summary{Now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), RentalID: "b_x",
		Kinds:  []deadline.KindSummary{{Kind: deadlinekinds.Payment, Found: 2, OldestOverdue: 1500 * time.Millisecond, ItemsRead: 2}},
		Owed:   owed.Summary{Owed: 3, Due: 1, Left: 3, ItemsRead: 3},
		Parked: parked.Summary{Found: 1, Left: 1, OldestParked: 2500 * time.Millisecond, ItemsRead: 1}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Kinds  []map[string]any `json:"kinds"`
		Owed   map[string]any   `json:"owed"`
		Parked map[string]any   `json:"parked"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Kinds) != 1 || raw.Kinds[0]["oldestOverdueMs"] != 1500.0 || raw.Kinds[0]["found"] != 2.0 ||
		raw.Owed["left"] != 3.0 || raw.Parked["oldestParkedMs"] != 2500.0 {
		t.Errorf("summary JSON %s: want the payment's oldestOverdueMs 1500 and found 2, 3 owed left, oldestParkedMs 2500", b)
	}
	var out sweep.Summary
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: %+v, %v; want %+v", out, err, in)
	}
}
