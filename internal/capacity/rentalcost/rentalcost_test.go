package rentalcost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/capacity"
	"github.com/bikerental/bikerental/internal/capacity/rentalcost"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
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
	functions                                                   map[string]fn
}

var (
	command   = rentalcost.FunctionCommand
	process   = rentalcost.FunctionProcess
	projector = rentalcost.FunctionProjector
	sweep     = rentalcost.FunctionSweep
)

// The request units of one rental on each path, counted through the real handlers.
// Every item the rentals write is well under 1 KB and every read well under 4 KB
// (checked below), so the few bytes that vary between runs (timestamps, numbers)
// cannot change a unit: the counts are exact.
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
var appendMode = map[rentalcost.Path]want{
	rentalcost.Approved: {
		calls: 17, itemsRead: 8, itemsWritten: 10, writeUnits: 12, indexWriteUnits: 2, readUnits: 8,
		floor: rentalcost.Floor{Events: 8, EventUnits: 8, ProjectionUnits: 2, IndexUnits: 2},
		functions: map[string]fn{
			// request: two reads, a two-item transaction (4 units); confirm webhook,
			// return: each reads a stream, appends one event
			command:   {7, 6, 4},
			process:   {8, 4, 4}, // on BikeRequested and on PaymentConfirmed: two reads, two appends each
			projector: {2, 4, 0}, // row created with its index entry, then settled out of the index
		},
	},
	rentalcost.Rejected: {
		calls: 15, itemsRead: 5, itemsWritten: 9, writeUnits: 11, indexWriteUnits: 2, readUnits: 7,
		floor:     rentalcost.Floor{Events: 7, EventUnits: 7, ProjectionUnits: 2, IndexUnits: 2},
		functions: map[string]fn{command: {5, 5, 3}, process: {8, 4, 4}, projector: {2, 4, 0}},
	},
	rentalcost.TimedOut: {
		calls: 16, itemsRead: 6, itemsWritten: 9, writeUnits: 11, indexWriteUnits: 2, readUnits: 8,
		floor: rentalcost.Floor{Events: 7, EventUnits: 7, ProjectionUnits: 2, IndexUnits: 2},
		functions: map[string]fn{
			command: {3, 4, 2}, process: {8, 4, 4}, projector: {2, 4, 0},
			sweep: {3, 1, 2}, // CancelRentalPayment: the process's stream, the payment's, PaymentCancelled
		},
	},
	rentalcost.Cancelled: {
		calls: 16, itemsRead: 6, itemsWritten: 9, writeUnits: 11, indexWriteUnits: 2, readUnits: 8,
		floor:     rentalcost.Floor{Events: 7, EventUnits: 7, ProjectionUnits: 2, IndexUnits: 2},
		functions: map[string]fn{command: {6, 5, 4}, process: {8, 4, 4}, projector: {2, 4, 0}},
	},
}

// transactionPremium is what the request's transaction costs above writing its two
// items once each: one unit per item under 1 KB.
const transactionPremium = 2

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
		fns[process] = fn{10, 4, 6}
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
				EventsTable: emulatortest.TableName(t, "events"), PendingTable: emulatortest.TableName(t, "pending"),
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
	// Nothing but the request's transaction is above the floor.
	if p := m.TransactionPremium(); p != transactionPremium || got.AllWriteUnits()-m.Floor.Units() != p {
		t.Errorf("%s: %d write units above the floor, a transaction premium of %d; want both %d", m.Path, got.AllWriteUnits()-m.Floor.Units(), p, transactionPremium)
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
	if want := len(m.Events); m.Functions[process].Records < want || m.Functions[projector].Records < want {
		t.Errorf("%s: %d events appended, the process got %d records and the projector %d", m.Path, want, m.Functions[process].Records, m.Functions[projector].Records)
	}
	if m.Path == rentalcost.TimedOut {
		search := capacity.Total(filter(m.Calls, rentalcost.Amortized))
		if search.Calls != 4 || search.ReadUnits != 2 || m.Sweep == nil || m.Sweep.Cancelled != 1 {
			t.Errorf("sweep: %d queries, %g read units, summary %+v; want 4 queries (one per shard), 2 read units, 1 cancelled", search.Calls, search.ReadUnits, m.Sweep)
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
		"| approved | 17 | 8 | 10 | 12 + 2 = 14 | 8 | 12 | 1.17 |",
		"| timed out by the sweep | 16 | 6 | 9 | 11 + 2 = 13 | 8 | 11 | 1.18 |",
		// The floor, and the request's transaction as all that lies above it.
		"| approved | 8 | 8 | 2 | 2 | 12 | 14 | 2 | 2 |",
		// 14 write units at $0.625 and 8 read units at $0.125 per million.
		"| approved | $8.75 | $1.00 |",
		"| 4 | 1 | 2 | 43200 |",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report lacks %q:\n%s", s, out.String())
		}
	}
}
