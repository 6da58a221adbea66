package deadlinekinds_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
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

func (o *outage) calls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.asked
}

// owed returns the rentals whose payment's cancellation is owed, as operators
// list them.
func (w *world) owed() []deadlinekinds.OwedCancellation {
	w.t.Helper()
	rows, _, err := w.listing.OwedCancellations(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return rows
}

// giveUp sweeps w at now+20m, which gives up on rentalID's payment, and waits
// for its cancellation to be owed, returning the owed row's due time: when it
// became owed.
func (w *world) giveUp(rentalID string, r deadlinekinds.Receivers) time.Time {
	w.t.Helper()
	sum, err := sweepAt(w.sweeper(r), time.Now().Add(20*time.Minute))
	if err != nil || of(sum, deadlinekinds.Payment).Acted != 1 {
		w.t.Fatalf("the sweep that gives up: %+v, %v", sum, err)
	}
	var due time.Time
	w.pumpUntil("the cancellation owed", func() bool {
		owed := w.owed()
		if len(owed) == 1 && owed[0].RentalID == rentalID {
			due = owed[0].OwedAt
		}
		return !due.IsZero()
	})
	return due
}

// TestACancellationThatDidNotReachTheProviderIsMadeByTheSweep: the sweep gives up
// on a payment while the provider is down. The bike is released on time all the
// same, the cancellation is owed (a row of the cancellation kind, and a metric of
// the process), every sweep while the provider stays down finds it and fails to
// make it, and the first one after it is back makes it: the payment is cancelled
// at the provider, and nothing is owed any more.
func TestACancellationThatDidNotReachTheProviderIsMadeByTheSweep(t *testing.T) {
	p := &outage{down: true, canceled: map[string]bool{}}
	w := newWorld(t, 2, command.WithProvider(p), command.WithCancelRetry(eventstore.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
	rentalID := w.request("owed1")
	ref := payment.ReferenceFor(rentalID)
	w.pumpUntil("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	r := deadlinekinds.Receivers{Retrier: w.commands}
	due := w.giveUp(rentalID, r)
	w.pumpUntil("the bike released", func() bool { return w.bikeStatus("owed1") == rental.StatusAvailable })
	docs := emftest.Parse(t, []byte(w.processLog.String()))
	if got := w.processLog.String(); len(docs) != 1 || docs[0].Values[process.MetricCancellationsOwed] != 1 || docs[0].Namespace != process.MetricsNamespace ||
		docs[0].Dimensions["Service"] != "bikerental-test" || strings.Contains(got, "_secret_") {
		t.Errorf("the process did not report the owed cancellation as a metric (or logged a secret):\n%s", got)
	}

	// Sweeps a minute apart from when it became owed: the first two send it.
	s := w.sweeper(r)
	for i := range 2 { // the provider stays down
		sum, err := sweepAt(s, due.Add(time.Duration(i)*every+time.Millisecond))
		if k := of(sum, deadlinekinds.Cancellation); err != nil || k.Found != 1 || k.Failed != 1 || k.Acted != 0 || of(sum, deadlinekinds.Payment).Acted != 0 {
			t.Fatalf("a sweep while the provider is down: %+v, %v", sum, err)
		}
	}
	if p.isCanceled("pi_" + ref) {
		t.Fatal("cancelled at a provider that was down")
	}

	p.set(false)
	sum, err := sweepAt(s, due.Add(3*every+time.Millisecond))
	if k := of(sum, deadlinekinds.Cancellation); err != nil || k.Found != 1 || k.Acted != 1 || k.Failed != 0 {
		t.Fatalf("the sweep once the provider is back: %+v, %v", sum, err)
	}
	if !p.isCanceled("pi_" + ref) {
		t.Error("the payment is still payable at the provider")
	}
	w.pumpUntil("nothing owed any more", func() bool { return len(w.owed()) == 0 })
	asked := p.calls()
	if sum, err := sweepAt(s, due.Add(7*every+time.Millisecond)); err != nil || of(sum, deadlinekinds.Cancellation).Found != 0 || p.calls() != asked {
		t.Errorf("a sweep with nothing owed: %+v, %v, the provider asked %d more times", sum, err, p.calls()-asked)
	}
	pay, _, _ := w.commands.LoadPayment(ctx, ref)
	if pay.Status != payment.StatusCancelled || pay.CancellationDue() || pay.LateSuccess {
		t.Errorf("the payment ends %+v", pay)
	}
}

// TestTheSweepWithoutARetrierOnlyReportsOwedCancellations: with no Retrier the
// sweep counts what is owed found and left, and asks nobody.
func TestTheSweepWithoutARetrierOnlyReportsOwedCancellations(t *testing.T) {
	m := memory.New(serviceKinds, 2)
	at := time.Now()
	applyTo(t, m, owedAt(t, id("owed"), at))
	sum, err := sweepAt(newSweeper(t, m, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}}, 0), at.Add(time.Second))
	if k := of(sum, deadlinekinds.Cancellation); err != nil || k.Found != 1 || k.Left != 1 || k.ItemsRead != 1 {
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

func (u *unanswered) answer() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.answered = true
}

// TestAnOwedCancellationPutOffIsStillCountedOwed: in memory, an owed cancellation
// whose retry goes unanswered is sent again only at its next send time
// (CancellationRetry, counted from when it became owed); every sweep between asks
// nobody, yet finds it (CancellationRowsFound 1, the metric the still-owed alarm
// watches) and counts it waiting, until the provider confirms the cancellation.
func TestAnOwedCancellationPutOffIsStillCountedOwed(t *testing.T) {
	m := memory.New(serviceKinds, 2)
	rentalID := id("putoff")
	ref := payment.ReferenceFor(rentalID)
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	applyTo(t, m, owedAt(t, rentalID, at))
	provider := &unanswered{}
	s := newSweeper(t, m, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}, Retrier: provider}, 0)
	// sweep runs the sweep of the i-th minute since the cancellation became owed.
	sweep := func(i int, sent, waiting, calls int) {
		t.Helper()
		now := at.Add(time.Duration(i)*every + time.Millisecond)
		sum, err := sweepAt(s, now)
		k := of(sum, deadlinekinds.Cancellation)
		found := metric(sweepmetrics.Document(sum, "s"), "CancellationRowsFound")
		if err != nil || k.Found != 1 || k.Failed+k.Acted != sent || k.Waiting != waiting || found != 1 || provider.calls != calls {
			t.Fatalf("sweep at %s: %+v, %v, CancellationRowsFound %v, %d retries; want it found, %d sent, %d waiting, %d retries",
				now, k, err, found, provider.calls, sent, waiting, calls)
		}
	}
	sweep(0, 1, 0, 1)
	// The retry the provider left unanswered is recorded; it changes no row.
	applyTo(t, m, paymentRecord(t, rentalID, 4, payment.CancellationStillOwed{Reference: ref, PaymentID: "p", Tries: 1}, at.Add(time.Second)))
	sweep(1, 1, 0, 2) // a minute after: sent again
	sweep(2, 0, 1, 2) // put off: asked nobody, still owed
	provider.answer()
	sweep(3, 1, 0, 3) // three minutes after: sent, and made
	applyTo(t, m, paymentRecord(t, rentalID, 5, payment.CancellationDoneAtProvider{Reference: ref, PaymentID: "p"}, at.Add(3*time.Minute)))
	sum, err := sweepAt(s, at.Add(4*every+time.Millisecond))
	if err != nil || of(sum, deadlinekinds.Cancellation).Found != 0 || metric(sweepmetrics.Document(sum, "s"), "CancellationRowsFound") != 0 {
		t.Errorf("a sweep once the provider confirmed: %+v, %v; want nothing owed", sum, err)
	}
}

// retrier answers every retry: made, or still owed.
type retrier struct {
	mu    sync.Mutex
	owed  bool
	asked []string
}

func (r *retrier) RetryCancellation(_ context.Context, reference string, _ command.Meta) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, reference)
	return r.owed, nil
}

// owedRows applies n owed cancellations, named after group, owed at at.
func owedRows(t *testing.T, m *memory.Index, group string, n int, at time.Time) []string {
	t.Helper()
	var refs []string
	for i := range n {
		rentalID := id(fmt.Sprintf("%s%04d", group, i))
		applyTo(t, m, owedAt(t, rentalID, at))
		refs = append(refs, payment.ReferenceFor(rentalID))
	}
	return refs
}

// TestTheSweepReadsEveryOwedCancellationAndSendsTheDueOnes: every owed
// cancellation is overdue from when it became owed, so the sweep reads each one,
// once, and counts it found; it sends those whose send time falls in its interval
// and counts the others waiting, reading nothing more than what it counts.
func TestTheSweepReadsEveryOwedCancellationAndSendsTheDueOnes(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m := memory.New(serviceKinds, 3)
	due := owedRows(t, m, "due", 103, now.Add(-30*time.Second))         // owed in this interval: sent
	later := owedRows(t, m, "later", 250, now.Add(-150*time.Second))    // sent 2m30s and 1m30s ago: next at 4m30s
	again := owedRows(t, m, "again", 7, now.Add(-every-30*time.Second)) // sent 1m30s ago: sent again 30s ago
	notYet := owedRows(t, m, "notyet", 5, now.Add(30*time.Second))      // owed after now: not overdue
	r := &retrier{}
	sum, err := sweepAt(newSweeper(t, m, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}, Retrier: r}, 0), now)
	k := of(sum, deadlinekinds.Cancellation)
	if err != nil || k.Found != len(due)+len(later)+len(again) || k.Acted != len(due)+len(again) || k.Waiting != len(later) || k.ItemsRead != k.Found {
		t.Errorf("%+v, %v: want %d found and read, %d made, %d waiting", k, err, len(due)+len(later)+len(again), len(due)+len(again), len(later))
	}
	want := append(slices.Clone(due), again...)
	slices.Sort(want)
	slices.Sort(r.asked)
	if !slices.Equal(r.asked, want) {
		t.Errorf("asked %d, want the %d whose send time fell in the interval", len(r.asked), len(want))
	}
	if slices.ContainsFunc(r.asked, func(ref string) bool { return slices.Contains(later, ref) || slices.Contains(notYet, ref) }) {
		t.Errorf("a cancellation put off, or not yet owed, was asked about")
	}
}

// TestAPutOffCancellationIsCountedWaitingAndAskedNobody: a row between its send
// times is found and counted waiting, and no retry is sent for it; a row at its
// send time whose retry goes unanswered fails, and stays owed.
func TestAPutOffCancellationIsCountedWaitingAndAskedNobody(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m := memory.New(serviceKinds, 1)
	sent := owedRows(t, m, "sent", 1, now.Add(-time.Second))
	owedRows(t, m, "off", 1, now.Add(-150*time.Second)) // sent 2m30s and 1m30s ago: next at 4m30s
	r := &retrier{owed: true}
	sum, err := sweepAt(newSweeper(t, m, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}, Retrier: r}, 0), now)
	k := of(sum, deadlinekinds.Cancellation)
	if err != nil || k.Found != 2 || k.Waiting != 1 || k.Failed != 1 || k.Acted != 0 || k.Left != 0 || !slices.Equal(r.asked, sent) {
		t.Errorf("%+v, %v, asked %v: want both found, the one put off waiting, the one sent failed", k, err, r.asked)
	}
}
