package deadlinekinds_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

// Durations other than every default (PAYMENT_TIMEOUT 15m, STUCK_GRACE 10m,
// RENTAL_PERIOD 2h), so that a writer that stamps by a default is seen.
const (
	configuredTimeout = 7 * time.Minute
	configuredGrace   = 3 * time.Minute
	configuredPeriod  = 5 * time.Hour
)

// TestTheSweepsRedeliveriesStampByTheConfiguredDurations sets PAYMENT_TIMEOUT,
// STUCK_GRACE and RENTAL_PERIOD to values other than their defaults, parks every
// record the projector reads of a rental whose payment is outstanding and of one
// that was approved, and has the sweep function, as its recipe builds it
// (sweepfn.New), deliver them again to the projector, into a Deadlines table of
// their own: every row it leaves is due when the configured durations say.
func TestTheSweepsRedeliveriesStampByTheConfiguredDurations(t *testing.T) {
	w := newWorld(t, 2)
	outstanding := w.request("stamp-out")
	w.pumpUntil("the payment to be listed", func() bool { return w.listed(outstanding) })
	approved, _ := w.approve("stamp-in")
	table := newDeadlinesTable(t, w.client)
	settings := map[string]string{
		"AWS_REGION": emulator.Region, "AWS_ACCESS_KEY_ID": emulator.AccessKey, "AWS_SECRET_ACCESS_KEY": emulator.SecretKey,
		"AWS_ENDPOINT_URL":        emulatortest.Server(t).Endpoint,
		wiring.EnvEventsTable:     w.events,
		wiring.EnvDeadlinesTable:  table,
		wiring.EnvDeadlinesShards: "2",
		wiring.EnvPaymentTimeout:  configuredTimeout.String(),
		wiring.EnvStuckGrace:      configuredGrace.String(),
		wiring.EnvRentalPeriod:    configuredPeriod.String(),
	}
	getenv := func(k string) string { return settings[k] }
	cfg := emulatortest.Config(t)

	// Park every record the projector reads, as the projector function parks
	// what it cannot apply, and project the parkings, as it does.
	park := streamfn.Park(w.store, eventfilter.Projector)
	projection, err := wiring.DeadlineProjection(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	due := map[string]time.Time{}
	parkings := 0
	for _, id := range []string{outstanding, approved} {
		bike, _ := rental.BikeIDOf(id)
		for _, stream := range []string{rental.StreamID(bike), rentalpayment.StreamID(id), payment.StreamID(payment.ReferenceFor(id))} {
			records, err := w.store.Read(ctx, stream, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range records {
				if !eventfilter.Wakes(eventfilter.Projector, r.Type) {
					continue
				}
				if err := park(ctx, dynamo.RecordOf(r)); err != nil {
					t.Fatal(err)
				}
				parkings++
				at := r.RecordedAt.Truncate(time.Millisecond)
				switch {
				case id == outstanding && r.Type == (payment.PaymentPrepared{}).EventType():
					due[deadlinekinds.Payment+"/"+id] = at.Add(configuredTimeout)
				case id == outstanding && r.Type == (rental.BikeRequested{}).EventType():
					due[deadlinekinds.Stuck+"/"+id] = at.Add(configuredTimeout + configuredGrace)
				case id == approved && r.Type == (rental.RequestApproved{}).EventType():
					due[deadlinekinds.Return+"/"+id] = at.Add(configuredPeriod)
				}
			}
			parkedRecords, err := w.store.Read(ctx, parked.StreamOf(eventfilter.Projector, stream), 0)
			if err != nil {
				t.Fatal(err)
			}
			applyTo(t, projection, parkedRecords...)
		}
	}
	if len(due) != 3 {
		t.Fatalf("the rentals have %d deadlines, want a payment due, a process stuck and a return due: %v", len(due), due)
	}

	sweep, err := sweepfn.New(cfg, getenv, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sweep.Run(ctx, time.Now())
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != parkings || k.Acted+k.NothingToDo != parkings {
		t.Fatalf("the sweep's redeliveries: %+v, %v; want the %d parked records delivered again", sum, err, parkings)
	}
	reader, err := wiring.DeadlinesReader(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	for _, name := range []string{deadlinekinds.Payment, deadlinekinds.Stuck, deadlinekinds.Return} {
		k, _ := reader.Kinds.ByName(name)
		for _, id := range []string{outstanding, approved} {
			row, ok, err := reader.Index.Row(ctx, k, id)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				got[name+"/"+id] = row.Due
			}
		}
	}
	for key, want := range due {
		switch at, ok := got[key]; {
		case !ok:
			t.Errorf("%s: no outstanding row", key)
		case !at.Equal(want):
			t.Errorf("%s: due %s, want %s (the configured durations after its opening event; off by %s)", key, at, want, at.Sub(want))
		}
	}
	if len(got) != len(due) {
		t.Errorf("outstanding rows %v, want %v", got, due)
	}
}
