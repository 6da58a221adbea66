package deadlinekinds_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
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

	sum, err := sweepAt(w.sweeper(deadlinekinds.Receivers{}), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if k := of(sum, deadlinekinds.Payment); k.Found != 1 || k.Acted != 1 || k.ItemsRead != 1 {
		t.Fatalf("summary %+v, want one found, cancelled and read", sum)
	}
	w.pumpUntil("the row to leave the list", func() bool { return !w.listed(rentalID) })
	w.pumpUntil("the bike to be released", func() bool { return w.bikeStatus("b1") == rental.StatusAvailable })

	// The sweep wrote nothing itself; a second sweep finds nothing.
	again, err := sweepAt(w.sweeper(deadlinekinds.Receivers{}), time.Now().Add(time.Hour))
	if err != nil || of(again, deadlinekinds.Payment).Found != 0 {
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
	sum, err := sweepAt(w.sweeper(deadlinekinds.Receivers{}), time.Now())
	if k := of(sum, deadlinekinds.Payment); err != nil || k.Found != 0 || k.ItemsRead != 0 {
		t.Fatalf("sweep of fresh payments: %+v, %v; want nothing found or read", sum, err)
	}
	// An hour later only the outstanding one is overdue; the confirmed one is gone.
	sum, err = sweepAt(w.sweeper(deadlinekinds.Receivers{}), time.Now().Add(time.Hour))
	if k := of(sum, deadlinekinds.Payment); err != nil || k.Found != 1 || k.Acted != 1 {
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
	sum, err := sweepAt(w.sweeper(deadlinekinds.Receivers{Canceller: confirmingFirst{w}}), time.Now().Add(time.Hour))
	if k := of(sum, deadlinekinds.Payment); err != nil || k.Declined != 1 || k.Acted != 0 {
		t.Fatalf("summary %+v, %v; want one declined", sum, err)
	}
	w.pumpUntil("the bike to be rented", func() bool { return w.bikeStatus("b1") == rental.StatusRented })
	w.pumpUntil("the row to leave the list", func() bool { return !w.listed(rentalID) })
}

// project writes payments' rows straight through the projection, as their events
// would, prepared at preparedAt.
func project(t *testing.T, w *world, n int, preparedAt time.Time) []string {
	t.Helper()
	var ids []string
	for i := range n {
		rentalID := rental.NewRentalID(fmt.Sprintf("bike%d", i), fmt.Sprintf("%022d", preparedAt.UnixMilli()%1e9*1000+int64(i)))
		w.apply(prepared(t, rentalID, preparedAt))
		ids = append(ids, rentalID)
	}
	return ids
}

// The document has eight metrics for each of the five swept kinds.
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
	s := newSweeper(t, w.table, deadlinekinds.Policy{Timeout: 15 * time.Minute}, deadlinekinds.Receivers{Canceller: fake}, 3)
	sum, err := sweepAt(s, now, awslambda.Report(sweepmetrics.NewWriter(emf.NewWriter(&metrics), "bikerental-test", func(err error) { t.Error(err) }).Report))
	if err != nil {
		t.Fatal(err)
	}
	got, want := of(sum, deadlinekinds.Payment), deadlines.KindSummary{Found: 12, Acted: 9, Declined: 1, NothingToDo: 1, Failed: 1, ItemsRead: 12}
	if got.Found != want.Found || got.Acted != want.Acted || got.Declined != want.Declined ||
		got.NothingToDo != want.NothingToDo || got.Failed != want.Failed || got.ItemsRead != want.ItemsRead {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if got.OldestOverdue < 4*time.Minute || got.OldestOverdue > 6*time.Minute {
		t.Errorf("oldest overdue = %s, want about 5m", got.OldestOverdue)
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
	if doc.Values["PaymentRowsActed"] != 9 || doc.Values["PaymentRowsFailed"] != 1 || doc.Namespace != sweepmetrics.Namespace || len(doc.Values) != 5*8 || doc.Values["ReturnRowsFound"] != 0 ||
		doc.Values["StuckRowsFound"] != 0 || doc.Values["CancellationRowsLeft"] != 0 || doc.Dimensions["Service"] != "bikerental-test" || !doc.Timestamp.Equal(now.Truncate(time.Millisecond)) {
		t.Errorf("EMF document: %s", metrics.String())
	}
}

func TestSweepReadsAtMostOneEmptyPagePerShardWhenNothingIsOverdue(t *testing.T) {
	w := newWorld(t, 8)
	project(t, w, 40, time.Now())
	sum, err := sweepAt(newSweeper(t, w.table, deadlinekinds.Policy{Timeout: time.Minute}, deadlinekinds.Receivers{Canceller: &recording{}}, 0), time.Now())
	if k := of(sum, deadlinekinds.Payment); err != nil || k.Found != 0 || k.ItemsRead != 0 {
		t.Fatalf("summary %+v, %v; want nothing found or read", sum, err)
	}
}

func TestSweepStopsBeforeItsDeadline(t *testing.T) {
	w := newWorld(t, 2)
	project(t, w, 5, time.Now().Add(-time.Hour))
	fake := &recording{}
	tight, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s := newSweeper(t, w.table, deadlinekinds.Policy{Timeout: time.Minute}, deadlinekinds.Receivers{Canceller: fake}, 0)
	sum, err := sweepWithin(tight, s, time.Now(), awslambda.Margin(5*time.Second))
	if err != nil || !sum.Incomplete || len(fake.calls) != 0 {
		t.Fatalf("summary %+v, err %v, %d calls; want an incomplete sweep that sent nothing", sum, err, len(fake.calls))
	}
}

func TestTwoSweepsAtOnce(t *testing.T) {
	w := newWorld(t, deadlinetable.DefaultShards)
	a, b := w.request("b1"), w.request("b2")
	w.pumpUntil("both payments listed", func() bool { return w.listed(a) && w.listed(b) })
	var wg sync.WaitGroup
	sums := make([]awslambda.Summary, 2)
	for i := range sums {
		wg.Go(func() {
			var err error
			if sums[i], err = sweepAt(w.sweeper(deadlinekinds.Receivers{}), time.Now().Add(time.Hour)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c := of(sums[0], deadlinekinds.Payment).Acted + of(sums[1], deadlinekinds.Payment).Acted; c != 2 {
		t.Errorf("two sweeps cancelled %d payments in all, want 2: %+v", c, sums)
	}
	for _, bike := range []string{"b1", "b2"} {
		w.pumpUntil("bike "+bike+" released", func() bool { return w.bikeStatus(bike) == rental.StatusAvailable })
		if recs, _ := w.store.Read(ctx, payment.StreamID(payment.ReferenceFor(id(bike))), 0); len(recs) != 2 {
			t.Errorf("payment of %s has %d events, want 2 (prepared, cancelled once)", bike, len(recs))
		}
	}
}
