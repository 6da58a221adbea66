package repair_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
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
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "evt-" + bikeID, Kind: payment.ProviderSucceeded, Reference: ref, Unstated: payment.AllFacts, Digest: "d"}); err != nil {
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
		eventfilter.Process: w.Process.Handle, eventfilter.Projector: rebuildtest.Projector(projection),
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
		eventfilter.Process: w.Process.Handle, eventfilter.Projector: rebuildtest.Projector(projection),
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

// logged is what a process logged (JSON lines) and wrote as metrics.
type logged struct{ log, metrics bytes.Buffer }

// messages returns the messages logged at level.
func (l *logged) messages(t *testing.T, level string) []string {
	t.Helper()
	var got []string
	for _, line := range bytes.Split(bytes.TrimSpace(l.log.Bytes()), []byte("\n")) {
		var e struct{ Level, Msg string }
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Level == level {
			got = append(got, e.Msg)
		}
	}
	return got
}

// TestARepairReportsOnlyTheRefundsItRecords: repairing a completed rental whose
// late payment is owed back says the refund owed stands, at info level, and counts
// no new one; a repair that records the refund owed itself reports it as a warning
// and counts it once.
func TestARepairReportsOnlyTheRefundsItRecords(t *testing.T) {
	ctx := context.Background()
	w := rebuildtest.NewWorld(t)
	var out logged
	proc, err := process.New(process.Config{Store: w.Store, Commands: w.Commands, Mode: process.RecordByAppend,
		Price:  process.Price{Amount: 1500, Currency: "EUR"},
		Logger: slog.New(slog.NewJSONHandler(&out.log, &slog.HandlerOptions{Level: slog.LevelDebug})), Metrics: emf.NewWriter(&out.metrics), MetricsService: "bikerental-test"})
	if err != nil {
		t.Fatal(err)
	}
	r := &repair.Repairer{Store: w.Store, Consumers: map[string]repair.Handler{eventfilter.Process: proc.Handle, eventfilter.Projector: rebuildtest.Projector(w.Projection(2))}}

	// Cancelled, then paid: the webhook records the late success and the refund owed.
	owed := w.Rent("owed", rebuildtest.Cancelled)
	ref := payment.ReferenceFor(owed)
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "late-owed", Kind: payment.ProviderSucceeded, Reference: ref, Unstated: payment.AllFacts, Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	if types := types(w, payment.StreamID(ref)); types[len(types)-1] != "RefundOwed" {
		t.Fatalf("the payment's events: %v, want a refund owed last", types)
	}
	for range 2 {
		if res, err := r.Repair(ctx, owed, false); err != nil || res.Case != repair.CaseCompleted {
			t.Fatalf("repair: %+v, %v", res, err)
		}
	}
	if warned := out.messages(t, "WARN"); slices.Contains(warned, "refund owed") {
		t.Errorf("repairing a rental whose refund was owed before warned %q: it reads as a new refund", warned)
	}
	if infos := out.messages(t, "INFO"); slices.Index(infos, "refund owed stands") < 0 {
		t.Errorf("the repair did not say the refund owed stands: %v", infos)
	}
	if n := len(emftest.Parse(t, out.metrics.Bytes())); n != 0 {
		t.Errorf("the repair counted %d refunds owed, want none: %s", n, out.metrics.String())
	}

	// Cancelled, then paid, with the refund never recorded (the webhook's refund
	// failed): the repair's delivery of the late success records it, and reports it.
	out.log.Reset()
	out.metrics.Reset()
	late := w.Rent("late", rebuildtest.Cancelled)
	lateRef := payment.ReferenceFor(late)
	data, err := json.Marshal(payment.PaymentSucceededAfterCancellation{Reference: lateRef, PaymentID: preparedID(t, w, lateRef), Amount: 1500, Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	stream := payment.StreamID(lateRef)
	if _, err := w.Store.Append(ctx, stream, int64(len(w.Read(stream))), eventstore.Event{ID: "late-success", Type: "PaymentSucceededAfterCancellation", Data: data, RecordedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Repair(ctx, late, false); err != nil {
		t.Fatal(err)
	}
	if types := types(w, stream); types[len(types)-1] != "RefundOwed" {
		t.Fatalf("after the repair the payment's events are %v, want a refund owed last", types)
	}
	if warned := out.messages(t, "WARN"); !slices.Equal(warned, []string{"refund owed"}) {
		t.Errorf("a repair that recorded a refund owed warned %q, want one \"refund owed\"", warned)
	}
	if bytes.Contains(out.log.Bytes(), []byte("_aws")) {
		t.Errorf("the log holds the metric's document; it belongs on a line of its own:\n%s", out.log.String())
	}
	docs := emftest.Parse(t, out.metrics.Bytes())
	if len(docs) != 1 || docs[0].Values["RefundsOwed"] != 1 || docs[0].Dimensions["Service"] != "bikerental-test" || docs[0].Namespace != process.MetricsNamespace {
		t.Errorf("metrics after a repair that recorded a refund owed: %+v, want one RefundsOwed", docs)
	}
}

// types are the event types of a stream of the world, in order.
func types(w *rebuildtest.World, stream string) []string {
	var out []string
	for _, r := range w.Read(stream) {
		out = append(out, r.Type)
	}
	return out
}

// preparedID is the provider's payment id of a prepared payment.
func preparedID(t *testing.T, w *rebuildtest.World, ref string) string {
	t.Helper()
	var e payment.PaymentPrepared
	if err := json.Unmarshal(w.Read(payment.StreamID(ref))[0].Data, &e); err != nil {
		t.Fatal(err)
	}
	return e.PaymentID
}
