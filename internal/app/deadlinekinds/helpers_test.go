package deadlinekinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
)

// every is how often the tests' sweeps run (SWEEP_RATE), which the owed
// cancellations' and the parked records' backoff counts by.
const every = time.Minute

// newSweeper returns the service's sweeper over idx: its kinds declared under
// policy p, their commands sent to r, concurrency commands at once (the default
// for 0), run every minute.
func newSweeper(t testing.TB, idx deadlines.Index, p deadlinekinds.Policy, r deadlinekinds.Receivers, concurrency int) *deadlines.Sweeper {
	t.Helper()
	s, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: idx, Kinds: deadlinekinds.MustDeclare(p, r), Every: every,
		Concurrency: concurrency, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sweepAt runs s as the sweep function does (awslambda.Sweep, as sweepfn.Sweep.Run
// does) for a trigger at now, logging nowhere unless opts say otherwise.
func sweepAt(s *deadlines.Sweeper, now time.Time, opts ...awslambda.SweepOption) (awslambda.Summary, error) {
	return sweepWithin(ctx, s, now, opts...)
}

// sweepWithin is sweepAt within ctx's time.
func sweepWithin(ctx context.Context, s *deadlines.Sweeper, now time.Time, opts ...awslambda.SweepOption) (awslambda.Summary, error) {
	all := append([]awslambda.SweepOption{awslambda.Logger(slog.New(slog.DiscardHandler)), awslambda.Clock(func() time.Time { return now })}, opts...)
	return awslambda.Sweep(s, all...)(ctx, nil)
}

// of returns what sum says of the kind named kind (all zero if it did not cover it).
func of(sum awslambda.Summary, kind string) deadlines.KindSummary {
	k, _ := sum.Kind(kind)
	return k
}

// applyTo projects records into p, as the projector does.
func applyTo(t testing.TB, p deadlines.Projection, recs ...eventstore.Record) {
	t.Helper()
	for _, r := range recs {
		if err := p.Apply(ctx, dynamo.RecordOf(r)); err != nil {
			t.Fatalf("apply %s %s v%d: %v", r.StreamID, r.Type, r.Version, err)
		}
	}
}

// id is the rental id of a rental of bike.
func id(bike string) string { return rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA") }

// paymentRecord is e in the payment stream of rentalID at version, recorded at at.
func paymentRecord(t testing.TB, rentalID string, version int64, e payment.Event, at time.Time) eventstore.Record {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	ref := payment.ReferenceFor(rentalID)
	return eventstore.Record{StreamID: payment.StreamID(ref), Version: version,
		Event: eventstore.Event{ID: fmt.Sprintf("%s-%d", ref, version), Type: e.EventType(), Data: data, RecordedAt: at}}
}

// prepared is the PaymentPrepared of rentalID's payment, recorded at at.
func prepared(t testing.TB, rentalID string, at time.Time) eventstore.Record {
	ref := payment.ReferenceFor(rentalID)
	return paymentRecord(t, rentalID, 1, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, at)
}

// cancelled is the PaymentCancelled of rentalID's payment at version.
func cancelled(t testing.TB, rentalID string, version int64, at time.Time) eventstore.Record {
	return paymentRecord(t, rentalID, version, payment.PaymentCancelled{Reference: payment.ReferenceFor(rentalID)}, at)
}

// owedAt is the CancellationOwedAtProvider of rentalID's payment, at version 3.
func owedAt(t testing.TB, rentalID string, at time.Time) eventstore.Record {
	return paymentRecord(t, rentalID, 3, payment.CancellationOwedAtProvider{Reference: payment.ReferenceFor(rentalID), PaymentID: "p", Attempts: 3}, at)
}

// requested is the BikeRequested record of a rental, recorded at at.
func requested(t testing.TB, rentalID string, at time.Time) eventstore.Record {
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

// memoryWith is an in-memory index projected under policy p, as the sweep that
// reads it is configured, holding the payments prepared and the bikes requested at
// the times given.
func memoryWith(t *testing.T, p deadlinekinds.Policy, preparedAt map[string]time.Time, requestedAt map[string]time.Time) *memory.Index {
	t.Helper()
	m := memory.New(deadlinekinds.MustDeclare(p, deadlinekinds.Receivers{}), 4)
	for id, at := range preparedAt {
		applyTo(t, m, prepared(t, id, at))
	}
	for id, at := range requestedAt {
		applyTo(t, m, requested(t, id, at))
	}
	return m
}

// recording is a Canceller that records calls, answers with outcome, and tracks how
// many calls run at once.
type recording struct {
	mu       sync.Mutex
	calls    []string
	outcome  func(rentalID string) (process.Outcome, error)
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func (r *recording) CancelRentalPayment(_ context.Context, rentalID string, _ command.Meta) (process.Outcome, error) {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for {
		seen := r.maxSeen.Load()
		if n <= seen || r.maxSeen.CompareAndSwap(seen, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond) // hold the slot so that overlaps are observable
	r.mu.Lock()
	r.calls = append(r.calls, rentalID)
	r.mu.Unlock()
	if r.outcome != nil {
		return r.outcome(rentalID)
	}
	return process.OutcomeCancelled, nil
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

// metric returns the value of the metric named name in d, or -1 if d has none.
func metric(d emf.Document, name string) float64 {
	for _, m := range d.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	return -1
}
