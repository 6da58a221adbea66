package sweepmetrics_test

import (
	"maps"
	"strings"
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

// TestEachSweepMetricCountsWhatItIsNamedFor: a sweep writes one metric per count,
// each named for its part and for what it counts and read from that count, and
// nothing else: no metric twice under two names.
func TestEachSweepMetricCountsWhatItIsNamedFor(t *testing.T) {
	d := sweepmetrics.Document(summary, "bikerental-test")
	want := map[string]float64{
		"PaymentRowsFound": 11, "PaymentRowsActed": 12, "PaymentRowsDeclined": 13, "PaymentRowsNothingToDo": 14,
		"PaymentRowsFailed": 15, "PaymentRowsLeft": 18, "PaymentRowsOldestOverdue": 17,
		"StuckRowsFound": 25, "StuckRowsActed": 22, "StuckRowsDeclined": 23, "StuckRowsNothingToDo": 0,
		"StuckRowsFailed": 24, "StuckRowsLeft": 0, "StuckRowsOldestOverdue": 27,
		"ReturnRowsFound": 31, "ReturnRowsActed": 32, "ReturnRowsDeclined": 0, "ReturnRowsNothingToDo": 0,
		"ReturnRowsFailed": 0, "ReturnRowsLeft": 0, "ReturnRowsOldestOverdue": 0,
		"OwedCancellationsFound": 41, "OwedCancellationsMade": 42, "OwedCancellationsLeft": 43,
		"ParkedRecordsFound": 51, "ParkedRecordsRedelivered": 52, "ParkedRecordsLeft": 53, "ParkedRecordsOldestAge": 54,
	}
	if got := values(d); !maps.Equal(got, want) || len(d.Metrics) != len(want) {
		t.Errorf("the sweep wrote %d metrics %v,\nwant %v", len(d.Metrics), got, want)
	}
	for _, m := range d.Metrics {
		unit := "Count"
		if strings.Contains(m.Name, "Oldest") {
			unit = "Seconds"
		}
		if m.Unit != unit {
			t.Errorf("%s is in %s, want %s", m.Name, m.Unit, unit)
		}
	}
	if d.Namespace != sweepmetrics.Namespace || len(d.Dimensions) != 1 || d.Dimensions[0] != (emf.Dimension{Name: "Service", Value: "bikerental-test"}) {
		t.Errorf("namespace %s, dimensions %v; want %s, Service=bikerental-test", d.Namespace, d.Dimensions, sweepmetrics.Namespace)
	}
}

// TestAPartThatDidNotRunWritesNoMetric: a sweep of one row's own deadline (precise
// mode) writes its kind's metrics alone, and one whose time ran out before the
// owed cancellations and the parked records writes none of theirs: a zero there
// would let an alarm's Minimum read nothing owed, stuck or parked while something
// is. A sweep that ran every part but found nothing writes every metric.
func TestAPartThatDidNotRunWritesNoMetric(t *testing.T) {
	idle := values(sweepmetrics.Document(sweep.Summary{Now: summary.Now, Kinds: []deadline.KindSummary{
		{Kind: deadlinekinds.Payment}, {Kind: deadlinekinds.Stuck}, {Kind: deadlinekinds.Return}},
		Owed: owed.Summary{Swept: true}, Parked: parked.Summary{Swept: true}}, "bikerental-test"))
	all := values(sweepmetrics.Document(summary, "bikerental-test"))
	if len(idle) != len(all) {
		t.Errorf("an idle sweep wrote %v, want every metric a busy one writes (%d)", idle, len(all))
	}
	one := values(sweepmetrics.Document(sweep.Summary{Now: summary.Now, RentalID: "r", Kinds: []deadline.KindSummary{{Kind: deadlinekinds.Return, Found: 1}}}, "bikerental-test"))
	for name, v := range one {
		if !strings.HasPrefix(name, "ReturnRows") {
			t.Errorf("a sweep of one return's deadline wrote %s = %v", name, v)
		}
	}
	if one["ReturnRowsFound"] != 1 || len(one) != 7 {
		t.Errorf("a sweep of one return's deadline wrote %v, want the return's metrics, ReturnRowsFound 1", one)
	}
	outOfTime := values(sweepmetrics.Document(sweep.Summary{Now: summary.Now, Incomplete: true, Kinds: summary.Kinds}, "bikerental-test"))
	for name, v := range outOfTime {
		if strings.HasPrefix(name, "OwedCancellations") || strings.HasPrefix(name, "ParkedRecords") {
			t.Errorf("a sweep out of time before the owed cancellations wrote %s = %v", name, v)
		}
	}
	if outOfTime["StuckRowsFound"] != 25 {
		t.Errorf("a sweep out of time before the owed cancellations wrote StuckRowsFound %v, want 25", outOfTime["StuckRowsFound"])
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
