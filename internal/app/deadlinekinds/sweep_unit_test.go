package deadlinekinds_test

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

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// The sweep's unit tests: the service's kinds on the module's in-memory index
// (deadlines/memory), which keeps the same index contract as the Deadlines table
// (TestMemoryKeepsTheIndexContract), with no emulator.

func TestTheSweepCancelsWhatThePolicySaysIsOverdue(t *testing.T) {
	now := time.Now()
	prepared := map[string]time.Time{}
	var overdue []string
	for i := range 12 {
		id := id(fmt.Sprintf("late%d", i))
		overdue = append(overdue, id)
		prepared[id] = now.Add(-20 * time.Minute)
	}
	for i := range 30 {
		prepared[id(fmt.Sprintf("fresh%d", i))] = now.Add(-5 * time.Minute)
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
	policy := deadlinekinds.Policy{Timeout: 15 * time.Minute}
	s := newSweeper(t, memoryWith(t, policy, prepared, nil), policy, deadlinekinds.Receivers{Canceller: fake}, 3)
	sum, err := sweepAt(s, now, awslambda.Report(sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) }).Report))
	if err != nil {
		t.Fatal(err)
	}
	if k := of(sum, deadlinekinds.Payment); k.Found != 12 || k.Acted != 9 || k.Declined != 1 || k.NothingToDo != 1 || k.Failed != 1 || k.ItemsRead != 12 {
		t.Errorf("summary %+v, want 12 found: 9 cancelled, 1 declined, 1 nothing to do, 1 failed, 12 read", sum)
	}
	if m := fake.maxSeen.Load(); m > 3 {
		t.Errorf("%d commands at once, want at most 3", m)
	}
	if !bytes.Contains(metrics.Bytes(), []byte(`"PaymentRowsActed":9`)) {
		t.Errorf("metrics %s", metrics.String())
	}
	// A timeout of 30 minutes, and none of them is due yet.
	policy = deadlinekinds.Policy{Timeout: 30 * time.Minute}
	if sum, err := sweepAt(newSweeper(t, memoryWith(t, policy, prepared, nil), policy, deadlinekinds.Receivers{Canceller: &recording{}}, 0), now); err != nil || of(sum, deadlinekinds.Payment).Found != 0 {
		t.Errorf("with a 30m timeout: %+v, %v; want nothing found", sum, err)
	}
}

func TestTheSweepRepairsStuckRentalsButNotTheOnesItIsCancelling(t *testing.T) {
	now := time.Now()
	stuck, cancelling, fresh := id("stuck"), id("cancelling"), id("fresh")
	policy := deadlinekinds.Policy{Timeout: 15 * time.Minute, Grace: 10 * time.Minute}
	m := memoryWith(t, policy, map[string]time.Time{cancelling: now.Add(-time.Hour)},
		map[string]time.Time{stuck: now.Add(-time.Hour), cancelling: now.Add(-time.Hour), fresh: now.Add(-20 * time.Minute)})
	r := &repairs{answer: func(string) (bool, error) { return true, nil }}
	sum, err := sweepAt(newSweeper(t, m, policy, deadlinekinds.Receivers{Canceller: &recording{}, Repairer: r}, 0), now)
	if err != nil {
		t.Fatal(err)
	}
	if of(sum, deadlinekinds.Payment).Found != 1 || of(sum, deadlinekinds.Stuck).Found != 1 || of(sum, deadlinekinds.Stuck).Acted != 1 || len(r.asked) != 1 || r.asked[0] != stuck {
		t.Errorf("summary %+v, repairs asked %q; want the cancelling one swept, the stuck one repaired, the fresh one left", sum, r.asked)
	}
}

func TestSweepOneWaitsForTheDeadlineAndFindsNothingSettled(t *testing.T) {
	id := id("one")
	ref := payment.ReferenceFor(id)
	preparedAt := time.Now().Add(-2 * time.Second)
	fake := &recording{}
	policy := deadlinekinds.Policy{Timeout: 2*time.Second + 200*time.Millisecond}
	s := newSweeper(t, memoryWith(t, policy, map[string]time.Time{id: preparedAt}, nil), policy, deadlinekinds.Receivers{Canceller: fake}, 0)
	one, err := s.SweepOne(ctx, deadlinekinds.Payment, ref, time.Now(), time.Second)
	if err != nil || one.Kind.Found != 1 || one.Kind.Acted != 1 || !one.Now.After(preparedAt.Add(2*time.Second+200*time.Millisecond)) {
		t.Fatalf("SweepOne %+v, %v; want it to wait for the deadline, then cancel", one, err)
	}
	if one, err := s.SweepOne(ctx, deadlinekinds.Stuck, ref, time.Now(), time.Second); err == nil {
		t.Errorf("a payment's key named as another kind's: %+v, no error", one)
	}
	none := newSweeper(t, memory.New(deadlinekinds.MustDeclare(policy, deadlinekinds.Receivers{}), 1), policy, deadlinekinds.Receivers{Canceller: fake}, 0)
	if one, err := none.SweepOne(ctx, deadlinekinds.Payment, ref, time.Now(), time.Second); err != nil || one.Kind.Found != 0 {
		t.Errorf("SweepOne of a payment not outstanding: %+v, %v; want nothing found", one, err)
	}
}

// TestASweepThatFindsNothingLogsAtDebugLevel: the summary of an idle sweep, the one
// logged every interval on a quiet day, is a debug line; one that found a payment
// is an info line.
func TestASweepThatFindsNothingLogsAtDebugLevel(t *testing.T) {
	now := time.Now()
	policy := deadlinekinds.Policy{Timeout: 15 * time.Minute}
	var logged bytes.Buffer
	logger := awslambda.Logger(slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	s := newSweeper(t, memoryWith(t, policy, map[string]time.Time{id("late"): now.Add(-20 * time.Minute)}, nil), policy, deadlinekinds.Receivers{Canceller: &recording{}}, 1)
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
	if _, err := sweepAt(s, now.Add(-10*time.Minute), logger); err != nil {
		t.Fatal(err)
	}
	if got := levels(); len(got) != 1 || got[0] != "DEBUG" {
		t.Errorf("an idle sweep logged its summary at %v, want DEBUG", got)
	}
	if sum, err := sweepAt(s, now, logger); err != nil || of(sum, deadlinekinds.Payment).Found != 1 {
		t.Fatalf("sweep = %+v, %v; want one found", sum, err)
	}
	if got := levels(); len(got) != 1 || got[0] != "INFO" {
		t.Errorf("a sweep that cancelled a payment logged its summary at %v, want INFO", got)
	}
}

// hangs is a Canceller that never answers.
type hangs struct{}

func (hangs) CancelRentalPayment(ctx context.Context, _ string, _ command.Meta) (process.Outcome, error) {
	<-ctx.Done()
	return "", context.Cause(ctx)
}

// flags is a Flagger that notes the rentals it is asked to flag, and flags them.
type flags struct {
	mu   sync.Mutex
	sent []string
}

func (f *flags) FlagOverdueReturn(_ context.Context, rentalID string, _ command.Meta) (command.OverdueFlag, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, rentalID)
	return command.OverdueFlag{Outcome: command.OverdueFlagged}, nil
}

// approved is the RequestApproved record of a rental, recorded at at.
func approved(t testing.TB, rentalID string, at time.Time) eventstore.Record {
	t.Helper()
	bikeID, _ := rental.BikeIDOf(rentalID)
	data, _ := json.Marshal(rental.RequestApproved{BikeID: bikeID, Renter: "r", RentalID: rentalID})
	return eventstore.Record{StreamID: rental.StreamID(bikeID), Version: 4, Event: eventstore.Event{ID: "ok-" + rentalID, Type: "RequestApproved", Data: data, RecordedAt: at}}
}

// TestEachKindSweepsWithinItsShareOfTheTime: a kind whose receiver hangs (a
// provider that never answers a cancellation) uses up its share of the
// invocation's time, not the others': the overdue return is still flagged in the
// same sweep.
func TestEachKindSweepsWithinItsShareOfTheTime(t *testing.T) {
	kinds := deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})
	m := memory.New(kinds, 1)
	late, back := id("late-pay"), id("late-back")
	applyTo(t, m, prepared(t, late, t0), approved(t, back, t0))
	f := &flags{}
	s := newSweeper(t, m, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: hangs{}, Flagger: f}, 0)
	budget, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	sum, err := sweepWithin(budget, s, t0.Add(48*time.Hour), awslambda.Margin(time.Second))
	payments, returns := of(sum, deadlinekinds.Payment), of(sum, deadlinekinds.Return)
	if err != nil || payments.Found != 1 || payments.Failed != 1 || returns.Found != 1 || returns.Acted != 1 || !slices.Equal(f.sent, []string{back}) {
		t.Errorf("summary %+v, %v; flagged %v: want the hanging cancellation failed at the end of its share, the return flagged", sum, err, f.sent)
	}
}

// kindsRead is an index that notes the kinds whose rows are read. The sweep
// reads its shards concurrently, so the counts are kept under a lock.
type kindsRead struct {
	deadlines.Index
	mu    sync.Mutex
	kinds map[string]int
}

func (k *kindsRead) Rows(ctx context.Context, span deadlines.Span, fn func([]deadlines.Row) bool) (int, error) {
	k.mu.Lock()
	k.kinds[span.Kind.Name]++
	k.mu.Unlock()
	return k.Index.Rows(ctx, span, fn)
}

// TestAKindWorkedOffByHandIsListedAndNeverSwept: the service's kinds worked off
// by hand, the refund owed and the overdue return, are projected and listed (the
// overdue return as a return), overdue from when they fell due; the sweep never
// reads their rows, reports nothing of them, and cannot be made to act on one by a
// trigger.
func TestAKindWorkedOffByHandIsListedAndNeverSwept(t *testing.T) {
	m := memory.New(serviceKinds, 2)
	ref := payment.ReferenceFor(id("owes"))
	dueBack := t0.Add(-time.Hour)
	data, _ := json.Marshal(rental.ReturnOverdue{BikeID: "late", Renter: "r", RentalID: id("late"), ApprovedAt: dueBack.Add(-rental.DefaultPeriod), DueAt: dueBack, FlaggedAt: t0})
	applyTo(t, m,
		paymentRecord(t, id("owes"), 5, payment.RefundOwed{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, t0),
		paymentRecord(t, id("paid"), 5, payment.RefundOwed{Reference: payment.ReferenceFor(id("paid")), PaymentID: "p", Amount: 1, Currency: "EUR"}, t0),
		paymentRecord(t, id("paid"), 6, payment.PaymentRefunded{Reference: payment.ReferenceFor(id("paid")), PaymentID: "p"}, t0),
		approved(t, id("late"), dueBack.Add(-rental.DefaultPeriod)),
		eventstore.Record{StreamID: rental.StreamID("late"), Version: 5, Event: eventstore.Event{ID: "flag", Type: "ReturnOverdue", Data: data, RecordedAt: t0}})
	yes := true
	for _, c := range []struct {
		kind, subject string
		due           time.Time
	}{{deadlinekinds.Refund, id("owes"), t0}, {deadlinekinds.Return, id("late"), dueBack}} {
		page, err := deadlines.List(ctx, m, serviceKinds, deadlines.Query{Kind: c.kind, Overdue: &yes, Now: t0.Add(time.Millisecond), Limit: 10})
		if err != nil || len(page.Rows) != 1 || page.Rows[0].Subject != c.subject || !page.Rows[0].Due.Equal(c.due) {
			t.Errorf("%s rows %+v, %v: want %s's, due %s, overdue just after", c.kind, page.Rows, err, c.subject, c.due)
		}
	}
	idx := &kindsRead{Index: m, kinds: map[string]int{}}
	s := newSweeper(t, idx, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}, Flagger: &flags{}}, 0)
	sum, err := sweepAt(s, t0.Add(time.Hour))
	if err != nil || idx.kinds[deadlinekinds.Refund] != 0 || idx.kinds[deadlinekinds.Overdue] != 0 || idx.kinds[deadlinekinds.Return] != 2 {
		t.Errorf("the sweep read the kinds %v (%v), want the returns once per shard and never the refunds or overdue returns", idx.kinds, err)
	}
	for _, k := range sum.Kinds {
		if k.Kind == deadlinekinds.Refund || k.Kind == deadlinekinds.Overdue || k.Found != 0 {
			t.Errorf("summary kinds %+v, want the swept kinds', nothing found", sum.Kinds)
		}
	}
	for kind, key := range map[string]string{deadlinekinds.Refund: "refund#" + ref, deadlinekinds.Overdue: deadlinekinds.StuckPrefix + id("late")} {
		if _, err := s.SweepOne(ctx, kind, key, t0.Add(time.Hour), time.Second); err == nil {
			t.Errorf("a trigger naming a row of %s, worked off by hand, was swept", kind)
		}
	}
}

// TestThePolicyIsTheOneRuleOfOverdue: a payment is overdue once it was prepared
// before now minus the timeout, not at its deadline exactly; a rental is stuck once
// its process has been open past the timeout and the grace; the zero policy is the
// defaults'.
func TestThePolicyIsTheOneRuleOfOverdue(t *testing.T) {
	p, err := deadlinekinds.NewPolicy(15*time.Minute, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	prepared := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	due := prepared.Add(15 * time.Minute)
	if got := p.Deadline(prepared); !got.Equal(due) {
		t.Errorf("deadline %v, want %v", got, due)
	}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{{due.Add(-time.Millisecond), false}, {due, false}, {due.Add(time.Millisecond), true}} {
		if got := p.Overdue(prepared, c.now); got != c.want {
			t.Errorf("overdue at %v: %v, want %v", c.now, got, c.want)
		}
		if got := prepared.Before(p.Cutoff(c.now)); got != c.want {
			t.Errorf("before the cutoff at %v: %v, want %v (Overdue and Cutoff must agree)", c.now, got, c.want)
		}
		// The payment kind declared under the policy says the same of its row.
		k, _ := deadlinekinds.MustDeclare(p, deadlinekinds.Receivers{}).ByName(deadlinekinds.Payment)
		if got := (deadlines.Row{Due: k.DueAt(deadlines.Change{}, prepared)}).Overdue(c.now); got != c.want {
			t.Errorf("the payment kind's row overdue at %v: %v, want %v", c.now, got, c.want)
		}
	}
	if got, want := p.StuckCutoff(due), prepared.Add(-10*time.Minute); !got.Equal(want) {
		t.Errorf("stuck cutoff %v, want %v", got, want)
	}
	var zero deadlinekinds.Policy
	if zero.PaymentTimeout() != deadlinekinds.DefaultTimeout || zero.StuckGrace() != deadlinekinds.DefaultGrace {
		t.Errorf("the zero policy: %s, %s; want the defaults", zero.PaymentTimeout(), zero.StuckGrace())
	}
	if _, err := deadlinekinds.NewPolicy(0, time.Minute); err == nil {
		t.Error("a zero timeout: no error")
	}
}
