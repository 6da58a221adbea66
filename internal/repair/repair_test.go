package repair_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventfilter"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/rebuild/rebuildtest"
	"github.com/bikerental/bikerental/internal/rental"
	"github.com/bikerental/bikerental/internal/rentalpayment"
	"github.com/bikerental/bikerental/internal/rentalview"
	"github.com/bikerental/bikerental/internal/repair"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// stuck leaves a rental as a dead-lettered settlement does: the bike requested, the
// payment prepared and confirmed, and the process never started, because
// BikeRequested never reached it and the confirmation it did see was retried until
// it was given up on.
func stuck(t *testing.T, w *rebuildtest.World, bikeID string) string {
	t.Helper()
	ctx := context.Background()
	rentalID := rental.NewRentalID(bikeID, "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: bikeID}, rental.RequestBike{BikeID: bikeID, Renter: "renter-" + bikeID, RentalID: rentalID}} {
		if _, err := w.Commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	ref := payment.ReferenceFor(rentalID)
	if _, err := w.Commands.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "evt-" + bikeID, Kind: payment.ProviderSucceeded, Reference: ref, Digest: "d"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	confirmed := w.Read(payment.StreamID(ref))[1]
	if err := w.Process.Handle(ctx, confirmed); !errors.Is(err, rentalpayment.ErrProcessNotStarted) {
		t.Fatalf("the confirmation before the start: %v", err)
	}
	return rentalID
}

// TestARepairedRentalEndsAsItsEventsSay repairs a stuck rental from the event store
// alone: a dry run changes nothing, the repair approves the rental through the
// process's own handler, and a second repair changes nothing more.
func TestARepairedRentalEndsAsItsEventsSay(t *testing.T) {
	ctx := context.Background()
	w := rebuildtest.NewWorld(t)
	rentalID := stuck(t, w, "stuck")
	projection := w.Projection(2)
	r := &repair.Repairer{Store: w.Store, Consumers: map[string]repair.Handler{
		eventfilter.Process: w.Process.Handle, eventfilter.Projector: projection.Apply,
	}}
	count := func() int {
		n := 0
		for _, s := range []string{rental.StreamID("stuck"), payment.StreamID(payment.ReferenceFor(rentalID)), rentalpayment.StreamID(rentalID)} {
			n += len(w.Read(s))
		}
		return n
	}
	before := count()
	plan, err := r.Repair(ctx, rentalID, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"process BikeRequested", "projector BikeRequested", "projector PaymentPrepared", "process PaymentConfirmed", "projector PaymentConfirmed"}
	var got []string
	for _, d := range plan.Deliveries {
		got = append(got, d.Consumer+" "+d.Type)
	}
	if len(got) != len(want) || count() != before || plan.Before != rentalview.StatusAwaitingPayment || plan.Case != repair.CaseStartMissing {
		t.Fatalf("dry run: %v (status %s, case %s), wrote %d events; want %v and nothing written", got, plan.Before, plan.Case, count()-before, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("dry run delivers %v, want %v", got, want)
		}
	}
	res, err := r.Repair(ctx, rentalID, false)
	if err != nil || res.After != rentalview.StatusApproved {
		t.Fatalf("repair: %+v, %v; want the rental approved", res, err)
	}
	bike, _, _ := w.Commands.LoadBike(ctx, "stuck")
	if bike.Status != rental.StatusRented || bike.RentalID != rentalID {
		t.Errorf("the bike after the repair: %+v", bike)
	}
	after := count()
	if _, err := r.Repair(ctx, rentalID, false); err != nil || count() != after {
		t.Errorf("a second repair wrote %d events (%v)", count()-after, err)
	}
	if _, err := r.Repair(ctx, rental.NewRentalID("stuck", "ZZZZZZZZZZZZZZZZZZZZZZ"), false); !errors.Is(err, rentalview.ErrNotFound) {
		t.Errorf("repairing a rental that never was: %v", err)
	}
}

// TestTheSweepRepairsOnlyWhatNeedsNoOperator: a rental whose process never started
// and whose payment was never prepared is left alone (a repair would ask the renter
// for money long after the request); one whose payment was prepared and settled is
// repaired, and then reads completed.
func TestTheSweepRepairsOnlyWhatNeedsNoOperator(t *testing.T) {
	ctx := context.Background()
	w := rebuildtest.NewWorld(t)
	projection := w.Projection(2)
	r := &repair.Repairer{Store: w.Store, Consumers: map[string]repair.Handler{
		eventfilter.Process: w.Process.Handle, eventfilter.Projector: projection.Apply,
	}}

	notStarted := rental.NewRentalID("alone", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: "alone"}, rental.RequestBike{BikeID: "alone", Renter: "renter-alone", RentalID: notStarted}} {
		if _, err := w.Commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	repaired, reason, err := r.RepairStuck(ctx, notStarted)
	if err != nil || repaired {
		t.Fatalf("not started: repaired %v (%s), %v; want it left for an operator", repaired, reason, err)
	}
	if n := len(w.Read(rentalpayment.StreamID(notStarted))) + len(w.Read(payment.StreamID(payment.ReferenceFor(notStarted)))); n != 0 {
		t.Errorf("leaving it alone wrote %d events", n)
	}

	settled := stuck(t, w, "settled")
	repaired, reason, err = r.RepairStuck(ctx, settled)
	if err != nil || !repaired {
		t.Fatalf("settled: repaired %v (%s), %v; want it repaired", repaired, reason, err)
	}
	v, err := rentalview.Load(ctx, w.Store, settled)
	if err != nil || v.Status != rentalview.StatusApproved {
		t.Errorf("after the repair: %+v, %v; want approved", v, err)
	}
	if again, _ := r.Repair(ctx, settled, true); again.Case != repair.CaseCompleted {
		t.Errorf("case after the repair %s, want %s", again.Case, repair.CaseCompleted)
	}
}

func TestEveryCaseSaysWhetherTheSweepRepairsIt(t *testing.T) {
	for c, want := range map[repair.Case]bool{
		repair.CaseNoRequest: false, repair.CaseNotStarted: false, repair.CaseStartMissing: true,
		repair.CaseOutstanding: true, repair.CaseSettled: true, repair.CaseCompleted: true,
	} {
		if got, why := c.Automatic(); got != want || why == "" {
			t.Errorf("%s: automatic %v (%q), want %v with a reason", c, got, why, want)
		}
	}
}
