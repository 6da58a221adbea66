package sweepmetrics_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// summary is a sweep's summary with a different count in every field, so that a
// metric read from the wrong one shows.
var summary = sweep.Summary{
	Now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
	Kinds: []deadline.KindSummary{
		{Kind: deadlinekinds.Payment, Found: 11, Acted: 12, Declined: 13, NothingToDo: 14, Failed: 15, ItemsRead: 16, OldestOverdue: 17 * time.Second, Left: 18},
		{Kind: deadlinekinds.Stuck, Found: 25, Acted: 22, Declined: 23, Failed: 24, ItemsRead: 26, OldestOverdue: 27 * time.Second},
		{Kind: deadlinekinds.Return, Found: 31, Acted: 32, ItemsRead: 36},
	},
	Owed:   owed.Summary{Swept: true, Owed: 41, Due: 40, Made: 42, Left: 43, ItemsRead: 44},
	Parked: parked.Summary{Swept: true, Found: 51, Redelivered: 52, Left: 53, OldestParked: 54 * time.Second, ItemsRead: 55},
}

// TestTheDeployedMetricsKeepTheirNamesAndMeanings: the metrics the sweep wrote
// before kinds are derived from the kinds' and the other parts' counts, each from
// the one it always meant: the payment due's for Found ... OldestOverdue, the
// process stuck's for the stuck rentals, the owed cancellations' and the parked
// records'; and the per-kind ones are there, OverdueReturns the return due's Found.
func TestTheDeployedMetricsKeepTheirNamesAndMeanings(t *testing.T) {
	got := values(sweepmetrics.Document(summary, "bikerental-test"))
	for name, want := range map[string]float64{
		"Found": 11, "Cancelled": 12, "Declined": 13, "NothingToDo": 14, "Failed": 15, "ItemsRead": 16, "OldestOverdue": 17,
		"StuckRentals": 25, "StuckRepaired": 22, "StuckLeft": 3,
		"CancellationsOwed": 41, "CancellationsMade": 42, "CancellationsLeft": 43,
		"Parked": 51, "Redelivered": 52, "RedeliveriesLeft": 53, "OldestParked": 54,
		"PaymentRowsFound": 11, "PaymentRowsActed": 12, "PaymentRowsLeft": 18, "StuckRowsFailed": 24, "ReturnRowsFound": 31,
		sweepmetrics.OverdueReturns: 31,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (written: %t), want %v", name, v, ok, want)
		}
	}
}

// TestEveryAlarmedSweepMetricIsWritten: every metric of the sweep's namespace that
// template.yaml alarms on is in the document a sweep writes, even a sweep that
// found nothing; a sweep of one row's own deadline (precise mode), or one whose
// time ran out before the owed cancellations and the parked records, writes none
// of the parts it did not run: a zero there would let an alarm's Minimum read
// nothing owed, stuck or parked while something is.
func TestEveryAlarmedSweepMetricIsWritten(t *testing.T) {
	template, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alarmed := regexp.MustCompile(`Namespace: `+regexp.QuoteMeta(sweepmetrics.Namespace)+`\s+MetricName: (\w+)`).FindAllSubmatch(template, -1)
	if len(alarmed) < 5 {
		t.Fatalf("found %d alarms on the sweep's metrics in template.yaml: the pattern misses them", len(alarmed))
	}
	idle := values(sweepmetrics.Document(sweep.Summary{Now: summary.Now, Kinds: []deadline.KindSummary{
		{Kind: deadlinekinds.Payment}, {Kind: deadlinekinds.Stuck}, {Kind: deadlinekinds.Return}},
		Owed: owed.Summary{Swept: true}, Parked: parked.Summary{Swept: true}}, "bikerental-test"))
	for _, m := range alarmed {
		if _, ok := idle[string(m[1])]; !ok {
			t.Errorf("template.yaml alarms on %s, which the sweep does not write", m[1])
		}
	}
	one := values(sweepmetrics.Document(sweep.Summary{Now: summary.Now, RentalID: "r", Kinds: []deadline.KindSummary{{Kind: deadlinekinds.Return, Found: 1}}}, "bikerental-test"))
	outOfTime := values(sweepmetrics.Document(sweep.Summary{Now: summary.Now, Incomplete: true, Kinds: summary.Kinds}, "bikerental-test"))
	for _, name := range []string{"CancellationsOwed", "CancellationsLeft", "Parked", "RedeliveriesLeft", "OldestParked", "StuckRentals", "StuckLeft", "Found", "OldestOverdue"} {
		if v, ok := one[name]; ok {
			t.Errorf("a sweep of one return's deadline wrote %s = %v", name, v)
		}
	}
	for _, name := range []string{"CancellationsOwed", "CancellationsLeft", "Parked", "RedeliveriesLeft", "OldestParked"} {
		if v, ok := outOfTime[name]; ok {
			t.Errorf("a sweep out of time before the owed cancellations wrote %s = %v", name, v)
		}
	}
	if one[sweepmetrics.OverdueReturns] != 1 {
		t.Errorf("a sweep of one return's deadline wrote OverdueReturns %v, want 1", one[sweepmetrics.OverdueReturns])
	}
}

// values returns the document's metrics by name, durations in seconds.
func values(d emf.Document) map[string]float64 {
	out := map[string]float64{}
	for _, m := range d.Metrics {
		out[m.Name] = m.Value
	}
	return out
}
