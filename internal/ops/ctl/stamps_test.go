package ctl_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// Durations other than every default (PAYMENT_TIMEOUT 15m, STUCK_GRACE 10m,
// RENTAL_PERIOD 2h), so that a writer that stamps by a default is seen.
const (
	configuredTimeout = 7 * time.Minute
	configuredGrace   = 3 * time.Minute
	configuredPeriod  = 5 * time.Hour
)

// stampWorld is an Events table holding a rental whose payment is outstanding
// (a payment due and a process stuck) and one that was approved (a return due),
// the records of their streams, and when each row falls due by the configured
// durations.
type stampWorld struct {
	w       *rebuildtest.World
	records []eventstore.Record
	due     map[string]time.Time // kind/rental id: due time
	rentals []string
}

func newStampWorld(t *testing.T) *stampWorld {
	t.Helper()
	w := rebuildtest.NewWorld(t)
	sw := &stampWorld{w: w, due: map[string]time.Time{}}
	outstanding := w.Rent("stamp-out", rebuildtest.Outstanding)
	approved := w.Rent("stamp-in", rebuildtest.Confirmed)
	sw.rentals = []string{outstanding, approved}
	for _, id := range sw.rentals {
		bike, _ := rental.BikeIDOf(id)
		for _, stream := range []string{rental.StreamID(bike), rentalpayment.StreamID(id), payment.StreamID(payment.ReferenceFor(id))} {
			for _, r := range w.Read(stream) {
				sw.records = append(sw.records, r)
				at := r.RecordedAt.Truncate(time.Millisecond)
				switch {
				case id == outstanding && r.Type == (payment.PaymentPrepared{}).EventType():
					sw.due[deadlinekinds.Payment+"/"+id] = at.Add(configuredTimeout)
				case id == outstanding && r.Type == (rental.BikeRequested{}).EventType():
					sw.due[deadlinekinds.Stuck+"/"+id] = at.Add(configuredTimeout + configuredGrace)
				case id == approved && r.Type == (rental.RequestApproved{}).EventType():
					sw.due[deadlinekinds.Return+"/"+id] = at.Add(configuredPeriod)
				}
			}
		}
	}
	if len(sw.due) != 3 {
		t.Fatalf("the world has %d deadlines, want a payment due, a process stuck and a return due: %v", len(sw.due), sw.due)
	}
	return sw
}

// env is the settings of a stack on the world's Events table and the to-do table
// named table, with the configured durations and shards.
func (sw *stampWorld) env(table string, shards int) func(string) string {
	m := map[string]string{
		"AWS_REGION": emulator.Region, "AWS_ACCESS_KEY_ID": emulator.AccessKey, "AWS_SECRET_ACCESS_KEY": emulator.SecretKey,
		"AWS_ENDPOINT_URL":        emulatortest.Server(sw.w.T).Endpoint,
		wiring.EnvEventsTable:     sw.w.EventsTable,
		wiring.EnvDeadlinesTable:  table,
		wiring.EnvDeadlinesShards: strconv.Itoa(shards),
		wiring.EnvPaymentTimeout:  configuredTimeout.String(),
		wiring.EnvStuckGrace:      configuredGrace.String(),
		wiring.EnvRentalPeriod:    configuredPeriod.String(),
	}
	return func(k string) string { return m[k] }
}

// check reads every outstanding row of the table through the configured kinds, as
// the sweep, the API and rentalctl read them, and wants each deadline due when
// the configured durations say.
func (sw *stampWorld) check(t *testing.T, getenv func(string) string) {
	t.Helper()
	ctx := context.Background()
	reader, err := wiring.DeadlinesReader(emulatortest.Config(t), getenv)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	for _, name := range []string{deadlinekinds.Payment, deadlinekinds.Stuck, deadlinekinds.Return} {
		k, _ := reader.Kinds.ByName(name)
		for _, id := range sw.rentals {
			row, ok, err := reader.Index.Row(ctx, k, id)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				got[name+"/"+id] = row.Due
			}
		}
	}
	for key, want := range sw.due {
		switch at, ok := got[key]; {
		case !ok:
			t.Errorf("%s: no outstanding row", key)
		case !at.Equal(want):
			t.Errorf("%s: due %s, want %s (the configured durations after its opening event; off by %s)", key, at, want, at.Sub(want))
		}
	}
	if len(got) != len(sw.due) {
		t.Errorf("outstanding rows %v, want %v", got, sw.due)
	}
}

// TestEveryWriterStampsByTheConfiguredDurations sets PAYMENT_TIMEOUT, STUCK_GRACE
// and RENTAL_PERIOD to values other than their defaults and has each writer of
// the Deadlines table write the rows of the same rentals into a table of its own:
// the projector's projection, the sweep's repairer (which mends the stuck rentals,
// and delivers the parked records again) redelivering every record, rentalctl
// repair, rebuild and a rebuild that reshards. Every row each leaves is due when the configured
// durations say.
func TestEveryWriterStampsByTheConfiguredDurations(t *testing.T) {
	sw := newStampWorld(t)
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	writers := []struct {
		name  string
		write func(t *testing.T, getenv func(string) string)
	}{
		{"the projector", func(t *testing.T, getenv func(string) string) {
			p, err := wiring.DeadlineProjection(cfg, getenv)
			if err != nil {
				t.Fatal(err)
			}
			sw.w.Project(p, sw.records...)
		}},
		{"the sweep's repairs and redeliveries", func(t *testing.T, getenv func(string) string) {
			// Every record the projector is woken for is parked for it, and only the
			// parking streams' records are projected; the sweep function's recipe
			// then delivers them again through the projector's handler.
			p, err := wiring.DeadlineProjection(cfg, getenv)
			if err != nil {
				t.Fatal(err)
			}
			parker := &parked.Parker{Store: sw.w.Store, Consumer: eventfilter.Projector, NewID: ident.UUID, Known: eventfilter.Known}
			streams, records := map[string]bool{}, 0
			for _, rec := range sw.records {
				if eventfilter.Wakes(eventfilter.Projector, rec.Type) {
					if err := parker.Park(ctx, rec); err != nil {
						t.Fatal(err)
					}
					streams[parked.StreamOf(eventfilter.Projector, rec.StreamID)] = true
					records++
				}
			}
			for stream := range streams {
				sw.w.Project(p, sw.w.Read(stream)...)
			}
			sweep, err := sweepfn.New(cfg, getenv, logger, nil)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := sweep.Run(ctx, time.Now())
			if k, _ := sum.Kind(deadlinekinds.Redelivery); err != nil || k.Found != records || k.Acted+k.NothingToDo != k.Found {
				t.Fatalf("the sweep: %+v, %v; want every parked record delivered again", k, err)
			}
		}},
		{"rentalctl repair", func(t *testing.T, getenv func(string) string) {
			stack, err := ctl.Open(ctx, getenv, logger)
			if err != nil {
				t.Fatal(err)
			}
			repairs, err := stack.Repairs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repairs.Repair(ctx, sw.rentals, false, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"rentalctl rebuild", func(t *testing.T, getenv func(string) string) {
			stack, err := ctl.Open(ctx, getenv, logger)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stack.Rebuild(ctx, ctl.RebuildRequest{Trace: quietTrace{}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"rentalctl rebuild -reshard", func(t *testing.T, getenv func(string) string) {
			// The rows written four ways by the projector, then moved to their shards
			// under two.
			four := func(k string) string {
				if k == wiring.EnvDeadlinesShards {
					return "4"
				}
				return getenv(k)
			}
			p, err := wiring.DeadlineProjection(cfg, four)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckShards(ctx); err != nil {
				t.Fatal(err)
			}
			sw.w.Project(p, sw.records...)
			stack, err := ctl.Open(ctx, getenv, logger)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := stack.Rebuild(ctx, ctl.RebuildRequest{Reshard: true, Trace: quietTrace{}}); err != nil || res.Moved == 0 {
				t.Fatalf("rebuild -reshard: %+v, %v; want rows moved", res, err)
			}
		}},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			table := emulatortest.CreateTable(t, sw.w.Client, deadlinetable.Definition, "deadlines")
			getenv := sw.env(table, 2)
			w.write(t, getenv)
			sw.check(t, getenv)
		})
	}
}

// quietTrace follows a rebuild and says nothing.
type quietTrace struct{}

func (quietTrace) Resharding(error) {}
func (quietTrace) Resharded(int)    {}
func (quietTrace) Unpaused()        {}
func (quietTrace) Inherited(string) {}
func (quietTrace) Paused(string)    {}
func (quietTrace) Resumed(string)   {}
func (quietTrace) Started()         {}
func (quietTrace) Progress(int)     {}
func (quietTrace) Replayed(int)     {}
