package deadline_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/memindex"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// The sweep's unit tests: on memindex.Memory, which keeps the same index contract as
// the Deadlines table (indextest), with no emulator.

// memoryWith is an index projected under policy p, as the sweep that reads it is
// configured, holding the payments prepared and the bikes requested at the times
// given.
func memoryWith(t *testing.T, p deadline.Policy, preparedAt map[string]time.Time, requestedAt map[string]time.Time) *memindex.Memory {
	t.Helper()
	m := memindex.NewWith(4, deadlinekinds.MustDeclare(p, deadlinekinds.Receivers{}))
	for id, at := range preparedAt {
		ref := payment.ReferenceFor(id)
		data, _ := json.Marshal(payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"})
		if err := m.Apply(ctx, eventstore.Record{StreamID: payment.StreamID(ref), Version: 1, Event: eventstore.Event{ID: ref, Type: "PaymentPrepared", Data: data, RecordedAt: at}}); err != nil {
			t.Fatal(err)
		}
	}
	for id, at := range requestedAt {
		if err := m.Apply(ctx, requested(t, id, at)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestTheSweepCancelsWhatThePolicySaysIsOverdue(t *testing.T) {
	now := time.Now()
	prepared := map[string]time.Time{}
	var overdue []string
	for i := range 12 {
		id := rental.NewRentalID(fmt.Sprintf("late%d", i), "AAAAAAAAAAAAAAAAAAAAAA")
		overdue = append(overdue, id)
		prepared[id] = now.Add(-20 * time.Minute)
	}
	for i := range 30 {
		prepared[rental.NewRentalID(fmt.Sprintf("fresh%d", i), "AAAAAAAAAAAAAAAAAAAAAA")] = now.Add(-5 * time.Minute)
	}
	fake := &recording{outcome: func(id string) (process.Outcome, error) {
		switch id {
		case overdue[0]:
			return process.OutcomeDeclined, nil
		case overdue[1]:
			return process.OutcomeNothingToDo, nil
		case overdue[2]:
			return "", errors.New("process unavailable")
		}
		return process.OutcomeCancelled, nil
	}}
	var metrics bytes.Buffer
	s := over(memoryWith(t, deadline.Policy{Timeout: 15 * time.Minute}, prepared, nil), fake, deadline.Policy{Timeout: 15 * time.Minute}, nil, sweep.Sweep{Deadlines: &deadline.Sweeper{Concurrency: 3}, Reporter: sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) }), Logger: slog.New(slog.DiscardHandler)})
	sum, err := s.Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Of(deadlinekinds.Payment).Found != 12 || sum.Of(deadlinekinds.Payment).Acted != 9 || sum.Of(deadlinekinds.Payment).Declined != 1 || sum.Of(deadlinekinds.Payment).NothingToDo != 1 || sum.Of(deadlinekinds.Payment).Failed != 1 || sum.Of(deadlinekinds.Payment).ItemsRead != 12 {
		t.Errorf("summary %+v, want 12 found: 9 cancelled, 1 declined, 1 nothing to do, 1 failed, 12 read", sum)
	}
	if m := fake.maxSeen.Load(); m > 3 {
		t.Errorf("%d commands at once, want at most 3", m)
	}
	if !bytes.Contains(metrics.Bytes(), []byte(`"PaymentRowsActed":9`)) {
		t.Errorf("metrics %s", metrics.String())
	}
	// A timeout of 30 minutes, and none of them is due yet.
	if sum, err := over(memoryWith(t, deadline.Policy{Timeout: 30 * time.Minute}, prepared, nil), &recording{}, deadline.Policy{Timeout: 30 * time.Minute}, nil, sweep.Sweep{}).Sweep(ctx, now); err != nil || sum.Of(deadlinekinds.Payment).Found != 0 {
		t.Errorf("with a 30m timeout: %+v, %v; want nothing found", sum, err)
	}
}

func TestTheSweepRepairsStuckRentalsButNotTheOnesItIsCancelling(t *testing.T) {
	now := time.Now()
	stuck := rental.NewRentalID("stuck", "AAAAAAAAAAAAAAAAAAAAAA")
	cancelling := rental.NewRentalID("cancelling", "AAAAAAAAAAAAAAAAAAAAAA")
	fresh := rental.NewRentalID("fresh", "AAAAAAAAAAAAAAAAAAAAAA")
	m := memoryWith(t, deadline.Policy{Timeout: 15 * time.Minute, Grace: 10 * time.Minute}, map[string]time.Time{cancelling: now.Add(-time.Hour)},
		map[string]time.Time{stuck: now.Add(-time.Hour), cancelling: now.Add(-time.Hour), fresh: now.Add(-20 * time.Minute)})
	r := &repairs{answer: func(string) (bool, error) { return true, nil }}
	sum, err := over(m, &recording{}, deadline.Policy{Timeout: 15 * time.Minute, Grace: 10 * time.Minute}, r, sweep.Sweep{}).Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Of(deadlinekinds.Payment).Found != 1 || sum.Of(deadlinekinds.Stuck).Found != 1 || sum.Of(deadlinekinds.Stuck).Acted != 1 || len(r.asked) != 1 || r.asked[0] != stuck {
		t.Errorf("summary %+v, repairs asked %q; want the cancelling one swept, the stuck one repaired, the fresh one left", sum, r.asked)
	}
}

func TestSweepOneWaitsForTheDeadlineAndFindsNothingSettled(t *testing.T) {
	id := rental.NewRentalID("one", "AAAAAAAAAAAAAAAAAAAAAA")
	ref := payment.ReferenceFor(id)
	preparedAt := time.Now().Add(-2 * time.Second)
	fake := &recording{}
	policy := deadline.Policy{Timeout: 2*time.Second + 200*time.Millisecond}
	kinds := deadlinekinds.MustDeclare(policy, deadlinekinds.Receivers{Canceller: fake})
	s := &sweep.Sweep{Deadlines: &deadline.Sweeper{Index: memoryWith(t, policy, map[string]time.Time{id: preparedAt}, nil), Kinds: kinds}}
	sum, err := s.SweepOne(ctx, deadlinekinds.Payment, ref, time.Now())
	if err != nil || sum.Of(deadlinekinds.Payment).Found != 1 || sum.Of(deadlinekinds.Payment).Acted != 1 || !sum.Now.After(preparedAt.Add(2*time.Second+200*time.Millisecond)) {
		t.Fatalf("SweepOne %+v, %v; want it to wait for the deadline, then cancel", sum, err)
	}
	if sum, err := s.SweepOne(ctx, deadlinekinds.Stuck, ref, time.Now()); err == nil {
		t.Errorf("a payment's key named as another kind's: %+v, no error", sum)
	}
	none := &sweep.Sweep{Deadlines: &deadline.Sweeper{Index: memindex.NewWith(1, kinds), Kinds: kinds}}
	if sum, err := none.SweepOne(ctx, deadlinekinds.Payment, ref, time.Now()); err != nil || sum.Of(deadlinekinds.Payment).Found != 0 {
		t.Errorf("SweepOne of a payment not outstanding: %+v, %v; want nothing found", sum, err)
	}
}

// TestASweepThatFindsNothingLogsAtDebugLevel: the summary of an idle sweep, the one
// logged every interval on a quiet day, is a debug line; one that found a payment
// is an info line.
func TestASweepThatFindsNothingLogsAtDebugLevel(t *testing.T) {
	now := time.Now()
	late := rental.NewRentalID("late", "AAAAAAAAAAAAAAAAAAAAAA")
	var logged bytes.Buffer
	s := over(memoryWith(t, deadline.Policy{Timeout: 15 * time.Minute}, map[string]time.Time{late: now.Add(-20 * time.Minute)}, nil), &recording{}, deadline.Policy{Timeout: 15 * time.Minute}, nil, sweep.Sweep{Deadlines: &deadline.Sweeper{Concurrency: 1},
		Logger: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	levels := func() []string {
		var got []string
		dec := json.NewDecoder(&logged)
		for dec.More() {
			var line struct{ Level, Msg string }
			if err := dec.Decode(&line); err != nil {
				t.Fatal(err)
			}
			if line.Msg == "sweep" {
				got = append(got, line.Level)
			}
		}
		return got
	}
	// Before the payment is due, the sweep finds nothing.
	if _, err := s.Sweep(ctx, now.Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := levels(); len(got) != 1 || got[0] != "DEBUG" {
		t.Errorf("an idle sweep logged its summary at %v, want DEBUG", got)
	}
	if sum, err := s.Sweep(ctx, now); err != nil || sum.Of(deadlinekinds.Payment).Found != 1 {
		t.Fatalf("sweep = %+v, %v; want one found", sum, err)
	}
	if got := levels(); len(got) != 1 || got[0] != "INFO" {
		t.Errorf("a sweep that cancelled a payment logged its summary at %v, want INFO", got)
	}
}
