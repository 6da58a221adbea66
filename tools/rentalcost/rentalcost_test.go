package rentalcost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// fn is what one function did for a rental: calls, write units (index writes
// included) and read units.
type fn struct {
	calls, writes int
	reads         float64
}

// want is what one rental must cost.
type want struct {
	calls, itemsRead, itemsWritten, writeUnits, indexWriteUnits int
	readUnits                                                   float64
	floor                                                       rentalcost.Floor
	// premium is what the rental's transactions cost above writing their items
	// once each: all that lies above the floor.
	premium   int
	functions map[string]fn
}

var (
	command   = rentalcost.FunctionCommand
	process   = rentalcost.FunctionProcess
	projector = rentalcost.FunctionProjector
	sweep     = rentalcost.FunctionSweep
)

// The request units of one rental on each path, counted through the real handlers.
// Every item the rentals write is well under 1 KB and every read well under 4 KB
// (checked below), so the few bytes that vary between runs (timestamps, numbers,
// random event ids) cannot change a unit: the counts are exact.
//
// Each rental is its renter's first. The request (POST /rentals) reads the bike's
// stream and the renter's newest event (a strongly consistent Query, Limit 1, of an
// empty stream: no item, the minimum of one read unit) and appends the bike's
// BikeRequested and the renter's RentalRequested in one TransactWriteItems: two
// items under 1 KB at two write units each. So every path has, against a single
// PutItem of BikeRequested, one call, one item written, one read unit and three
// write units more, in the command function alone; the floor has one event and one
// write unit more (RentalRequested, on its own), and the two units above it are the
// transaction's premium.
//
// The provider's webhook (POST /webhooks/payments, on the approved and rejected
// paths) is one provider event, applied once by its id: it reads the event's receipt
// stream (providerevent-generic-<id>: empty, no item, the minimum of one read unit;
// the receipts of events that settle nothing live there), reads the payment's
// stream, where a redelivery would find the receipt, and appends PaymentConfirmed
// (or PaymentRejected), which carries the receipt, in one conditional PutItem at
// the version it read: one item under 1 KB, one write unit, and nothing above the
// floor. Against the per-payment confirm and reject routes it replaces (one Query
// and one PutItem), it costs one call and one read unit more, in the command
// function alone. Neither stream consumer does anything more for it.
//
// The payment commands call the provider around the decider (the generic provider
// makes no call of its own): PreparePayment, on BikeRequested in the process, and
// CancelPayment, in the sweep or in the command function for an operator's cancel,
// load the payment's stream to decide whether to call the provider, and decide and
// append on what they loaded, so that the provider costs no read of its own.
var appendMode = map[rentalcost.Path]want{
	rentalcost.Approved: {
		calls: 21, itemsRead: 8, itemsWritten: 13, writeUnits: 15, indexWriteUnits: 6, readUnits: 9,
		floor:   rentalcost.Floor{Events: 8, EventUnits: 8, ProjectionUnits: 5, IndexUnits: 6},
		premium: requestPremium,
		functions: map[string]fn{
			// request: two reads, a two-item transaction (4 units); the webhook: two
			// reads, one conditional put (1 unit); return: reads a stream, appends
			// one event
			command: {8, 6, 5},
			// on BikeRequested two reads (its own stream, the payment's) and two
			// appends; on PaymentConfirmed two reads and two appends
			process: {8, 4, 4},
			// the payment's row and the process's, each created with its index
			// entry; the payment's settled out of the index, the process's taken
			// over by the return due on approval (a move of its index entry) and
			// settled on the return
			projector: {5, 11, 0},
		},
	},
	rentalcost.Rejected: {
		calls: 18, itemsRead: 5, itemsWritten: 11, writeUnits: 13, indexWriteUnits: 4, readUnits: 8,
		floor:     rentalcost.Floor{Events: 7, EventUnits: 7, ProjectionUnits: 4, IndexUnits: 4},
		premium:   requestPremium,
		functions: map[string]fn{command: {6, 5, 4}, process: {8, 4, 4}, projector: {4, 8, 0}},
	},
	rentalcost.TimedOut: {
		calls: 18, itemsRead: 6, itemsWritten: 11, writeUnits: 13, indexWriteUnits: 4, readUnits: 8,
		floor:   rentalcost.Floor{Events: 7, EventUnits: 7, ProjectionUnits: 4, IndexUnits: 4},
		premium: requestPremium,
		functions: map[string]fn{
			command: {3, 4, 2}, process: {8, 4, 4}, projector: {4, 8, 0},
			// CancelRentalPayment: the process's stream, the payment's, PaymentCancelled
			sweep: {3, 1, 2},
		},
	},
	rentalcost.Cancelled: {
		calls: 18, itemsRead: 6, itemsWritten: 11, writeUnits: 13, indexWriteUnits: 4, readUnits: 8,
		floor:     rentalcost.Floor{Events: 7, EventUnits: 7, ProjectionUnits: 4, IndexUnits: 4},
		premium:   requestPremium,
		functions: map[string]fn{command: {6, 5, 4}, process: {8, 4, 4}, projector: {4, 8, 0}},
	},
}

// requestPremium is what the request's transaction costs above writing its two
// items once each: one unit per item under 1 KB. The webhook's single put has none.
const requestPremium = 2

// commandMode is appendMode with the process recording through its own command
// handler, which reads the process's stream again before each of its two appends.
func commandMode() map[rentalcost.Path]want {
	out := map[rentalcost.Path]want{}
	for p, w := range appendMode {
		w.calls += 2
		w.readUnits += 2
		w.itemsRead += 1 // the second re-read finds RentalPaymentRequested
		fns := map[string]fn{}
		for name, f := range w.functions {
			fns[name] = f
		}
		f := fns[process]
		f.calls += 2
		f.reads += 2
		fns[process] = f
		w.functions = fns
		out[p] = w
	}
	return out
}

func TestUnitsPerRental(t *testing.T) {
	for _, mode := range []struct {
		name string
		want map[rentalcost.Path]want
	}{
		{"append", appendMode},
		{"command", commandMode()},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cfg := emulatortest.Config(t)
			ctx := context.Background()
			bench, err := rentalcost.Start(ctx, cfg, rentalcost.Options{
				EventsTable: emulatortest.TableName(t, "events"), DeadlinesTable: emulatortest.TableName(t, "pending"),
				RecordingMode: mode.name, Wait: time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := bench.Close(); err != nil {
					t.Error(err)
				}
			})
			var runs []rentalcost.Measurement
			for _, path := range rentalcost.Paths() {
				m, err := bench.Run(ctx, path)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				check(t, m, mode.want[path])
				runs = append(runs, m)
			}
			if mode.name == "append" {
				checkReport(t, runs)
				checkHistory(ctx, t, bench, runs[0])
			}
		})
	}
}

func check(t *testing.T, m rentalcost.Measurement, w want) {
	t.Helper()
	got := capacity.Total(m.PerRental())
	if got.Calls != w.calls || got.ItemsRead != w.itemsRead || got.ItemsWritten != w.itemsWritten ||
		got.WriteUnits != w.writeUnits || got.IndexWriteUnits != w.indexWriteUnits || got.ReadUnits != w.readUnits {
		t.Errorf("%s: got %d calls, %d items read, %d written, %d+%d write units, %g read units; want %d, %d, %d, %d+%d, %g",
			m.Path, got.Calls, got.ItemsRead, got.ItemsWritten, got.WriteUnits, got.IndexWriteUnits, got.ReadUnits,
			w.calls, w.itemsRead, w.itemsWritten, w.writeUnits, w.indexWriteUnits, w.readUnits)
	}
	if got.Errors != 0 || got.ConditionFailures != 0 {
		t.Errorf("%s: %d calls failed, %d on a condition; want none", m.Path, got.Errors, got.ConditionFailures)
	}
	if m.Floor != w.floor {
		t.Errorf("%s: floor %+v, want %+v", m.Path, m.Floor, w.floor)
	}
	// The target: write units within 1.5 times the floor.
	if ratio := float64(got.AllWriteUnits()) / float64(m.Floor.Units()); ratio > 1.5 {
		t.Errorf("%s: %d write units, %.2f times the floor of %d", m.Path, got.AllWriteUnits(), ratio, m.Floor.Units())
	}
	// Nothing but the request's transaction premium is above the floor.
	if p := m.TransactionPremium(); p != w.premium || got.AllWriteUnits()-m.Floor.Units() != p {
		t.Errorf("%s: %d write units above the floor, a transaction premium of %d; want both %d", m.Path, got.AllWriteUnits()-m.Floor.Units(), p, w.premium)
	}
	by := capacity.GroupBy(m.PerRental(), func(c capacity.Call, _ capacity.Usage) string { return c.Function })
	for _, name := range []string{command, process, projector, sweep} {
		f := by[name]
		if g := (fn{f.Calls, f.AllWriteUnits(), f.ReadUnits}); g != w.functions[name] {
			t.Errorf("%s: %s made %d calls, %d write units, %g read units; want %+v", m.Path, name, g.calls, g.writes, g.reads, w.functions[name])
		}
	}
	if approx := capacity.Approximations(m.Calls); len(approx) > 0 {
		t.Errorf("%s: approximate counts: %q", m.Path, approx)
	}
	for _, c := range m.Calls {
		for _, u := range c.Tables {
			if u.ItemsWritten > 0 && u.BytesWritten > 900*u.ItemsWritten {
				t.Errorf("%s: %s %s wrote %d bytes in %d items: too close to 1 KB for exact counts", m.Path, c.Function, c.Operation, u.BytesWritten, u.ItemsWritten)
			}
			if u.BytesRead > 3500 {
				t.Errorf("%s: %s %s read %d bytes: too close to 4 KB for exact counts", m.Path, c.Function, c.Operation, u.BytesRead)
			}
		}
	}
	// Each consumer is delivered the events of the types that wake it, and only those.
	for _, name := range []string{process, projector} {
		want := 0
		for _, e := range m.Events {
			if eventfilter.Wakes(name, e.Type) {
				want++
			}
		}
		if got := m.Functions[name].Records; got < want || want == 0 {
			t.Errorf("%s: %d of the %d events appended wake the %s, which got %d records", m.Path, want, len(m.Events), name, got)
		}
	}
	if m.Path == rentalcost.TimedOut {
		search := capacity.Total(filter(m.Calls, rentalcost.Amortized))
		var pay, stuck deadlines.KindSummary
		if m.Sweep != nil {
			pay, _ = m.Sweep.Kind(deadlinekinds.Payment)
			stuck, _ = m.Sweep.Kind(deadlinekinds.Stuck)
		}
		if search.Calls != 20 || search.ReadUnits != 10 || pay.Acted != 1 || stuck.Found != 0 {
			t.Errorf("sweep: %d queries, %g read units, summary %+v; want 20 queries (one per shard of each kind it sweeps: the payments due, the stuck processes, the returns due, the cancellations owed and the parked records' redeliveries), 10 read units, 1 cancelled, none stuck", search.Calls, search.ReadUnits, m.Sweep)
		}
	}
}

func filter(calls []capacity.Call, keep func(capacity.Call) bool) []capacity.Call {
	var out []capacity.Call
	for _, c := range calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// checkReport renders the report from the measurements and checks a few of its
// figures, which follow from the counts above and the prices.
func checkReport(t *testing.T, runs []rentalcost.Measurement) {
	t.Helper()
	var out strings.Builder
	r := rentalcost.Report{Modes: []rentalcost.ModeRuns{{Mode: "append", Runs: runs}}, Prices: rentalcost.USEast1, Assumptions: rentalcost.Assumed}
	if err := r.Markdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"| approved | 21 | 8 | 13 | 15 + 6 = 21 | 9 | 19 | 1.11 |",
		"| payment rejected | 18 | 5 | 11 | 13 + 4 = 17 | 8 | 15 | 1.13 |",
		"| timed out by the sweep | 18 | 6 | 11 | 13 + 4 = 17 | 8 | 15 | 1.13 |",
		// The floor, and the request's transaction as all that lies above it.
		"| approved | 8 | 8 | 5 | 6 | 19 | 21 | 2 | 2 |",
		"| timed out by the sweep | 7 | 7 | 4 | 4 | 15 | 17 | 2 | 2 |",
		// 21 write units at $0.625 and 9 read units at $0.125 per million.
		"| approved | $13.13 | $1.12 |",
		// The payments' shards and the open processes', one empty page each but
		// the overdue payment's.
		"| 20 | 1 | 10 | 43200 |",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report lacks %q:\n%s", s, out.String())
		}
	}
}

// checkHistory measures an approved rental on a bike with five approved rentals
// before it, through the same handlers: it writes exactly what one on a new bike
// writes, and reads one unit more (the request's check that its rental id was never
// used, by the stream of the process it would have), not five rentals' worth.
func checkHistory(ctx context.Context, t *testing.T, bench *rentalcost.Bench, fresh rentalcost.Measurement) {
	t.Helper()
	if fresh.Path != rentalcost.Approved {
		t.Fatalf("the first run is %s, want the approved path", fresh.Path)
	}
	later, err := bench.RunAfter(ctx, rentalcost.Approved, 5)
	if err != nil {
		t.Fatal(err)
	}
	a, b := capacity.Total(fresh.PerRental()), capacity.Total(later.PerRental())
	if later.BikeStreamBytes < 5*fresh.BikeStreamBytes {
		t.Errorf("the bike stream was %d bytes at the request, want at least five rentals' worth", later.BikeStreamBytes)
	}
	if b.ReadUnits != a.ReadUnits+1 || b.Calls != a.Calls+1 || b.AllWriteUnits() != a.AllWriteUnits() {
		t.Errorf("after 5 rentals: %d calls, %g read units, %d write units; on a new bike %d, %g, %d: want one call and one read unit more, the same writes",
			b.Calls, b.ReadUnits, b.AllWriteUnits(), a.Calls, a.ReadUnits, a.AllWriteUnits())
	}
}
