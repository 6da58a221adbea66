package deadline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// The reference test: given a payment that has been outstanding, when sweeping with
// now an hour ahead, then it is called off and leaves the list, and the bike is
// released.
func TestGivenOutstandingPaymentWhenSweptThenCalledOffAndBikeReleased(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	rentalID := w.request("b1")
	w.pumpUntil("the payment to be listed", func() bool { return w.listed(rentalID) })

	sum, err := w.sweeper(nil).Sweep(ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Of(deadlinekinds.Payment).Found != 1 || sum.Of(deadlinekinds.Payment).Acted != 1 || sum.Of(deadlinekinds.Payment).ItemsRead != 1 {
		t.Fatalf("summary %+v, want one found, cancelled and read", sum)
	}
	w.pumpUntil("the row to leave the list", func() bool { return !w.listed(rentalID) })
	w.pumpUntil("the bike to be released", func() bool { return w.bikeStatus("b1") == rental.StatusAvailable })

	// The sweep wrote nothing itself; a second sweep finds nothing.
	again, err := w.sweeper(nil).Sweep(ctx, time.Now().Add(time.Hour))
	if err != nil || again.Of(deadlinekinds.Payment).Found != 0 {
		t.Fatalf("second sweep: %+v, %v; want nothing found", again, err)
	}
}

func TestSweepLeavesWhatIsNotOverdueOrSettled(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	fresh := w.request("fresh")
	confirmed := w.request("paid")
	w.pumpUntil("both payments listed", func() bool { return w.listed(fresh) && w.listed(confirmed) })
	if _, err := w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(confirmed)}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	w.pumpUntil("the confirmed payment to leave the list", func() bool { return !w.listed(confirmed) })

	// Not yet overdue: now is the real now, the payment is seconds old.
	sum, err := w.sweeper(nil).Sweep(ctx, time.Now())
	if err != nil || sum.Of(deadlinekinds.Payment).Found != 0 || sum.Of(deadlinekinds.Payment).ItemsRead != 0 {
		t.Fatalf("sweep of fresh payments: %+v, %v; want nothing found or read", sum, err)
	}
	// An hour later only the outstanding one is overdue; the confirmed one is gone.
	sum, err = w.sweeper(nil).Sweep(ctx, time.Now().Add(time.Hour))
	if err != nil || sum.Of(deadlinekinds.Payment).Found != 1 || sum.Of(deadlinekinds.Payment).Acted != 1 {
		t.Fatalf("sweep an hour later: %+v, %v; want the one outstanding payment", sum, err)
	}
	w.pumpUntil("the bike to be released", func() bool { return w.bikeStatus("fresh") == rental.StatusAvailable })
	if s := w.bikeStatus("paid"); s != rental.StatusRented {
		t.Errorf("the paid bike is %s, want rented", s)
	}
}

// confirmingFirst plays the payment provider confirming between the sweep's read and
// its command.
type confirmingFirst struct {
	w *world
}

func (c confirmingFirst) CancelRentalPayment(ctx context.Context, rentalID string, meta command.Meta) (process.Outcome, error) {
	if _, err := c.w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)}, command.Meta{}); err != nil {
		return "", err
	}
	return c.w.process.CancelRentalPayment(ctx, rentalID, meta)
}

func TestPaymentConfirmedDuringTheSweepIsDeclined(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	rentalID := w.request("b1")
	w.pumpUntil("the payment to be listed", func() bool { return w.listed(rentalID) })
	sum, err := w.sweeper(confirmingFirst{w}).Sweep(ctx, time.Now().Add(time.Hour))
	if err != nil || sum.Of(deadlinekinds.Payment).Declined != 1 || sum.Of(deadlinekinds.Payment).Acted != 0 {
		t.Fatalf("summary %+v, %v; want one declined", sum, err)
	}
	w.pumpUntil("the bike to be rented", func() bool { return w.bikeStatus("b1") == rental.StatusRented })
	w.pumpUntil("the row to leave the list", func() bool { return !w.listed(rentalID) })
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

// project writes rows straight through the projection, as its events would.
func project(t *testing.T, w *world, n int, preparedAt time.Time) []string {
	t.Helper()
	var ids []string
	for i := range n {
		rentalID := rental.NewRentalID(fmt.Sprintf("bike%d", i), fmt.Sprintf("%022d", preparedAt.UnixMilli()%1e9*1000+int64(i)))
		ref := payment.ReferenceFor(rentalID)
		data, _ := json.Marshal(payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"})
		rec := eventstore.Record{StreamID: payment.StreamID(ref), Version: 1, Event: eventstore.Event{ID: ref, Type: "PaymentPrepared", Data: data, RecordedAt: preparedAt}}
		if err := w.projection.Apply(ctx, rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rentalID)
	}
	return ids
}

// The document has seven metrics per kind (three kinds), and the owed
// cancellations' three and the parked records' four.
func TestSweepReadsOnlyOverdueRowsAndCountsOutcomes(t *testing.T) {
	w := newWorld(t, 4)
	now := time.Now()
	overdue := project(t, w, 12, now.Add(-20*time.Minute))
	project(t, w, 30, now.Add(-5*time.Minute))
	outcomes := map[string]process.Outcome{overdue[0]: process.OutcomeDeclined, overdue[1]: process.OutcomeNothingToDo}
	fake := &recording{outcome: func(id string) (process.Outcome, error) {
		if id == overdue[2] {
			return "", errors.New("process unavailable")
		}
		if o, ok := outcomes[id]; ok {
			return o, nil
		}
		return process.OutcomeCancelled, nil
	}}
	var metrics bytes.Buffer
	s := over(w.projection, fake, deadline.Policy{Timeout: 15 * time.Minute}, nil, sweep.Sweep{Deadlines: &deadline.Sweeper{Concurrency: 3}, Reporter: sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) })})
	sum, err := s.Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	got, want := sum.Of(deadlinekinds.Payment), deadline.KindSummary{Found: 12, Acted: 9, Declined: 1, NothingToDo: 1, Failed: 1, ItemsRead: 12}
	if got.Found != want.Found || got.Acted != want.Acted || got.Declined != want.Declined ||
		got.NothingToDo != want.NothingToDo || got.Failed != want.Failed || got.ItemsRead != want.ItemsRead {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if sum.Of(deadlinekinds.Payment).OldestOverdue < 4*time.Minute || sum.Of(deadlinekinds.Payment).OldestOverdue > 6*time.Minute {
		t.Errorf("oldest overdue = %s, want about 5m", sum.Of(deadlinekinds.Payment).OldestOverdue)
	}
	if m := fake.maxSeen.Load(); m > 3 || m < 2 {
		t.Errorf("%d commands ran at once, want at most 3 (and some overlap)", m)
	}
	if len(fake.calls) != 12 {
		t.Errorf("%d commands sent, want 12", len(fake.calls))
	}
	docs := emftest.Parse(t, metrics.Bytes())
	if len(docs) != 1 || strings.Count(metrics.String(), "\n") != 1 {
		t.Fatalf("metrics are not one EMF document on one line: %q", metrics.String())
	}
	doc := docs[0]
	if doc.Values["PaymentRowsActed"] != 9 || doc.Values["PaymentRowsFailed"] != 1 || doc.Namespace != sweepmetrics.Namespace || len(doc.Values) != 3*7+3+4 || doc.Values["ReturnRowsFound"] != 0 ||
		doc.Values["StuckRowsFound"] != 0 || doc.Values["OwedCancellationsLeft"] != 0 || doc.Dimensions["Service"] != "bikerental-test" || !doc.Timestamp.Equal(now.Truncate(time.Millisecond)) {
		t.Errorf("EMF document: %s", metrics.String())
	}
}

func TestSweepReadsAtMostOneEmptyPagePerShardWhenNothingIsOverdue(t *testing.T) {
	w := newWorld(t, 8)
	project(t, w, 40, time.Now())
	sum, err := over(w.projection, &recording{}, deadline.Policy{Timeout: time.Minute}, nil, sweep.Sweep{}).Sweep(ctx, time.Now())
	if err != nil || sum.Of(deadlinekinds.Payment).Found != 0 || sum.Of(deadlinekinds.Payment).ItemsRead != 0 {
		t.Fatalf("summary %+v, %v; want nothing found or read", sum, err)
	}
}

func TestSweepStopsBeforeItsDeadline(t *testing.T) {
	w := newWorld(t, 2)
	project(t, w, 5, time.Now().Add(-time.Hour))
	fake := &recording{}
	tight, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s := over(w.projection, fake, deadline.Policy{Timeout: time.Minute}, nil, sweep.Sweep{Margin: 5 * time.Second})
	sum, err := s.Sweep(tight, time.Now())
	if err != nil || !sum.Incomplete || len(fake.calls) != 0 {
		t.Fatalf("summary %+v, err %v, %d calls; want an incomplete sweep that sent nothing", sum, err, len(fake.calls))
	}
}

func TestTwoSweepsAtOnce(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	a, b := w.request("b1"), w.request("b2")
	w.pumpUntil("both payments listed", func() bool { return w.listed(a) && w.listed(b) })
	var wg sync.WaitGroup
	sums := make([]sweep.Summary, 2)
	for i := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if sums[i], err = w.sweeper(nil).Sweep(ctx, time.Now().Add(time.Hour)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if c := sums[0].Of(deadlinekinds.Payment).Acted + sums[1].Of(deadlinekinds.Payment).Acted; c != 2 {
		t.Errorf("two sweeps cancelled %d payments in all, want 2: %+v", c, sums)
	}
	for _, bike := range []string{"b1", "b2"} {
		w.pumpUntil("bike "+bike+" released", func() bool { return w.bikeStatus(bike) == rental.StatusAvailable })
		if recs, _ := w.store.Read(ctx, payment.StreamID(payment.ReferenceFor(rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA"))), 0); len(recs) != 2 {
			t.Errorf("payment of %s has %d events, want 2 (prepared, cancelled once)", bike, len(recs))
		}
	}
}
