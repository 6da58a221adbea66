package deadline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// outage is a provider that can cancel, and does not answer while it is down.
type outage struct {
	generic.Provider
	mu       sync.Mutex
	down     bool
	canceled map[string]bool
	asked    int
}

func (o *outage) CreatePayment(_ context.Context, reference string, _ int64, _ string) (payment.Created, error) {
	return payment.Created{PaymentID: "pi_" + reference, ClientSecret: "pi_" + reference + "_secret_x"}, nil
}

func (o *outage) CancelPayment(_ context.Context, id string) (payment.CancelOutcome, payment.Told, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked++
	if o.down {
		return payment.ProviderCannotSay, payment.Told{}, errors.New("HTTP 503 from the provider")
	}
	o.canceled[id] = true
	return payment.CancelledAtProvider, payment.Told{}, nil
}

func (o *outage) set(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
}

func (o *outage) isCanceled(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.canceled[id]
}

// TestACancellationThatDidNotReachTheProviderIsMadeByTheSweep: the sweep gives up
// on a payment while the provider is down. The bike is released on time all the
// same, the cancellation is owed (in the to-do table, and reported as a metric),
// every sweep while the provider stays down leaves it owed, and the first sweep
// after it is back makes it: the payment is cancelled at the provider, and nothing
// is owed any more.
func TestACancellationThatDidNotReachTheProviderIsMadeByTheSweep(t *testing.T) {
	p := &outage{down: true, canceled: map[string]bool{}}
	w := newWorld(t, 2, command.WithProvider(p), command.WithCancelRetry(eventstore.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
	rentalID := w.request("owed1")
	ref := payment.ReferenceFor(rentalID)
	w.pumpUntil("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	owed := func() []string {
		rows, _, err := w.projection.OwedCancellations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.RentalID)
		}
		return ids
	}

	s := w.sweeper(nil)
	s.Owed.Retrier = w.commands
	now := time.Now().Add(20 * time.Minute)
	sum, err := s.Sweep(ctx, now)
	if err != nil || sum.Of(deadlinekinds.Payment).Acted != 1 {
		t.Fatalf("the sweep that gives up: %+v, %v", sum, err)
	}
	w.pumpUntil("the bike released and the cancellation owed", func() bool {
		return w.bikeStatus("owed1") == rental.StatusAvailable && slices.Equal(owed(), []string{rentalID})
	})
	docs := emftest.Parse(t, []byte(w.processLog.String()))
	if got := w.processLog.String(); len(docs) != 1 || docs[0].Values[process.MetricCancellationsOwed] != 1 || docs[0].Namespace != process.MetricsNamespace ||
		docs[0].Dimensions["Service"] != "bikerental-test" || strings.Contains(got, "_secret_") {
		t.Errorf("the process did not report the owed cancellation as a metric (or logged a secret):\n%s", got)
	}

	for range 2 { // the provider stays down
		sum, err = s.Sweep(ctx, now)
		if err != nil || sum.Owed.Owed != 1 || sum.Owed.Left != 1 || sum.Owed.Made != 0 || sum.Of(deadlinekinds.Payment).Acted != 0 {
			t.Fatalf("a sweep while the provider is down: %+v, %v", sum, err)
		}
	}
	if p.isCanceled("pi_" + ref) {
		t.Fatal("cancelled at a provider that was down")
	}

	p.set(false)
	sum, err = s.Sweep(ctx, now)
	if err != nil || sum.Owed.Owed != 1 || sum.Owed.Made != 1 || sum.Owed.Left != 0 {
		t.Fatalf("the sweep once the provider is back: %+v, %v", sum, err)
	}
	if !p.isCanceled("pi_" + ref) {
		t.Error("the payment is still payable at the provider")
	}
	w.pumpUntil("nothing owed any more", func() bool { return len(owed()) == 0 })
	asked := p.asked
	if sum, err := s.Sweep(ctx, now); err != nil || sum.Owed.Owed != 0 || p.asked != asked {
		t.Errorf("a sweep with nothing owed: %+v, %v, the provider asked %d more times", sum, err, p.asked-asked)
	}
	pay, _, _ := w.commands.LoadPayment(ctx, ref)
	if pay.Status != payment.StatusCancelled || pay.CancellationDue() || pay.LateSuccess {
		t.Errorf("the payment ends %+v", pay)
	}
}

// TestTheSweepWithoutARetrierOnlyReportsOwedCancellations: with no Retrier the
// sweep lists what is owed as left, and asks nobody.
func TestTheSweepWithoutARetrierOnlyReportsOwedCancellations(t *testing.T) {
	m := newServiceMemory(2)
	id := rental.NewRentalID("owed", "AAAAAAAAAAAAAAAAAAAAAA")
	ref := payment.ReferenceFor(id)
	if err := m.Apply(ctx, eventstore.Record{StreamID: payment.StreamID(ref), Version: 3, Event: eventstore.Event{ID: "e3",
		Type: "CancellationOwedAtProvider", Data: []byte(`{"reference":"` + ref + `","paymentId":"p","attempts":3}`), RecordedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	sum, err := over(m, &recording{}, deadline.Policy{}, nil, sweep.Sweep{Logger: slog.New(slog.DiscardHandler)}).Sweep(ctx, time.Now())
	if err != nil || sum.Owed.Owed != 1 || sum.Owed.Left != 1 || sum.Owed.ItemsRead != 1 {
		t.Errorf("%+v, %v", sum, err)
	}
}

// unanswered is a provider's retry that goes unanswered until answered is set: it
// says the cancellation is still owed, and counts the calls.
type unanswered struct {
	mu       sync.Mutex
	answered bool
	calls    int
}

func (u *unanswered) RetryCancellation(context.Context, string, command.Meta) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	return !u.answered, nil
}

// TestAnOwedCancellationPutOffIsStillCountedOwed: in memory, an owed cancellation
// whose retry went unanswered is put off; every sweep before it is due again asks
// nobody, yet counts it owed and left, and the metric the still-owed alarm
// watches (OwedCancellationsLeft) stays 1, until the provider confirms the
// cancellation.
func TestAnOwedCancellationPutOffIsStillCountedOwed(t *testing.T) {
	m := newServiceMemory(2)
	ref := payment.ReferenceFor(rental.NewRentalID("putoff", "AAAAAAAAAAAAAAAAAAAAAA"))
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	record := func(e payment.Event, version int64, recorded time.Time) {
		t.Helper()
		data, _ := json.Marshal(e)
		if err := m.Apply(ctx, eventstore.Record{StreamID: payment.StreamID(ref), Version: version,
			Event: eventstore.Event{ID: fmt.Sprint(version), Type: e.EventType(), Data: data, RecordedAt: recorded}}); err != nil {
			t.Fatal(err)
		}
	}
	record(payment.CancellationOwedAtProvider{Reference: ref, PaymentID: "p", Attempts: 3}, 3, at)
	provider := &unanswered{}
	s := over(m, &recording{}, deadline.Policy{}, nil, sweep.Sweep{Owed: &owed.Retries{Retrier: provider}, Logger: slog.New(slog.DiscardHandler)})
	check := func(now time.Time, wantDue, wantCalls int) {
		t.Helper()
		sum, err := s.Sweep(ctx, now)
		left := metric(sweepmetrics.Document(sum, "s"), "OwedCancellationsLeft")
		if err != nil || sum.Owed.Owed != 1 || sum.Owed.Due != wantDue || sum.Owed.Left != 1 || left != 1 || provider.calls != wantCalls {
			t.Fatalf("sweep at %s: %+v, %v, OwedCancellationsLeft %v, %d retries; want 1 owed (%d due) and left, %d retries",
				now, sum.Owed, err, left, provider.calls, wantDue, wantCalls)
		}
	}
	check(at, 1, 1)
	record(payment.CancellationStillOwed{Reference: ref, PaymentID: "p", Tries: 3}, 4, at) // the retry the provider left unanswered
	putOff := at.Add(owed.Backoff(3))
	for _, now := range []time.Time{at.Add(time.Second), at.Add(time.Minute), putOff.Add(-time.Millisecond)} {
		check(now, 0, 1) // put off: asked nobody, still owed
	}
	provider.answered = true
	sum, err := s.Sweep(ctx, putOff)
	if err != nil || sum.Owed.Due != 1 || sum.Owed.Made != 1 || sum.Owed.Left != 0 || provider.calls != 2 {
		t.Fatalf("the sweep once due again, the provider back: %+v, %v", sum.Owed, err)
	}
	record(payment.CancellationDoneAtProvider{Reference: ref, PaymentID: "p"}, 5, putOff)
	if sum, err := s.Sweep(ctx, putOff.Add(time.Second)); err != nil || sum.Owed.Owed != 0 || metric(sweepmetrics.Document(sum, "s"), "OwedCancellationsLeft") != 0 {
		t.Errorf("a sweep once the provider confirmed: %+v, %v; want nothing owed", sum.Owed, err)
	}
}
