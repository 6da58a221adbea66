// Package sweepmetrics writes a sweep's summary (sweep.Summary) as CloudWatch metrics: one Embedded
// Metric Format document per sweep (through internal/lib/emf), which the sweep function
// writes to its standard output, where Lambda's log agent turns it into metrics
// without any API call.
package sweepmetrics

import (
	"strings"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/lib/emf"
)

// Writer is the sweep's sweep.Reporter that writes each summary to Out as one
// EMF document, with the dimension Service=Service (METRICS_SERVICE, which tells
// deployments apart). A summary that cannot be written is reported to Failed, if
// not nil.
type Writer struct {
	Out     *emf.Writer
	Service string
	Failed  func(error)
}

var _ sweep.Reporter = (*Writer)(nil)

// NewWriter returns the Writer of sweep summaries to w under the dimension
// Service=service, reporting what cannot be written to failed.
func NewWriter(w *emf.Writer, service string, failed func(error)) *Writer {
	return &Writer{Out: w, Service: service, Failed: failed}
}

// Report implements sweep.Reporter. A summary that counts no part (a sweep of one
// row's own deadline that found the row settled) writes no document.
func (w *Writer) Report(sum sweep.Summary) {
	d := Document(sum, w.Service)
	if len(d.Metrics) == 0 {
		return
	}
	if err := w.Out.Write(d); err != nil && w.Failed != nil {
		w.Failed(err)
	}
}

// Namespace is the CloudWatch namespace of the sweep's metrics.
const Namespace = "BikeRental/Sweep"

// Document is a summary as an EMF document, with the dimension Service=service:
// for each kind its own metrics (KindMetrics), OverdueReturns among them, and the
// metrics deployed before kinds, derived from the kinds' and the other parts'
// summaries (LegacyMetrics), which the template's alarms watch.
func Document(sum sweep.Summary, service string) emf.Document {
	d := emf.Document{
		Namespace:  Namespace,
		Timestamp:  sum.Now,
		Dimensions: []emf.Dimension{{Name: "Service", Value: service}},
		Metrics:    LegacyMetrics(sum),
	}
	for _, k := range sum.Kinds {
		d.Metrics = append(d.Metrics, KindMetrics(k)...)
	}
	return d
}

// LegacyMetrics are the metrics of the summary as the sweep wrote them before
// kinds, under the same names and with the same meanings: Found, Cancelled,
// Declined, NothingToDo, Failed, ItemsRead and OldestOverdue are the payment due's
// (found, acted, declined, nothing to do, failed, its lane's items read, oldest
// overdue); StuckRentals, StuckRepaired and StuckLeft the process stuck's (found,
// acted, found but not repaired); CancellationsOwed, CancellationsMade and
// CancellationsLeft the owed cancellations' (owed, made, left: every owed one,
// due or put off, still owed after the sweep); Parked, Redelivered,
// RedeliveriesLeft and OldestParked the parked records' (found due, redelivered,
// left, oldest recorded). A group is written only when its part ran: a sweep of
// one row's own deadline (precise mode), or one out of time before the owed
// cancellations, writes no zero that an alarm's Minimum would read as nothing
// owed or stuck.
func LegacyMetrics(sum sweep.Summary) []emf.Metric {
	count := func(name string, v int) emf.Metric { return emf.Metric{Name: name, Unit: "Count", Value: float64(v)} }
	var out []emf.Metric
	if pay, ok := sum.Kind(deadlinekinds.Payment); ok {
		out = append(out, count("Found", pay.Found), count("Cancelled", pay.Acted), count("Declined", pay.Declined),
			count("NothingToDo", pay.NothingToDo), count("Failed", pay.Failed), count("ItemsRead", pay.ItemsRead),
			emf.Metric{Name: "OldestOverdue", Unit: "Seconds", Value: pay.OldestOverdue.Seconds()})
	}
	if stuck, ok := sum.Kind(deadlinekinds.Stuck); ok {
		out = append(out, count("StuckRentals", stuck.Found), count("StuckRepaired", stuck.Acted), count("StuckLeft", stuck.Found-stuck.Acted))
	}
	if sum.Owed.Swept {
		out = append(out, count("CancellationsOwed", sum.Owed.Owed), count("CancellationsMade", sum.Owed.Made), count("CancellationsLeft", sum.Owed.Left))
	}
	if sum.Parked.Swept {
		out = append(out, count("Parked", sum.Parked.Found), count("Redelivered", sum.Parked.Redelivered), count("RedeliveriesLeft", sum.Parked.Left),
			emf.Metric{Name: "OldestParked", Unit: "Seconds", Value: sum.Parked.OldestParked.Seconds()})
	}
	return out
}

// OverdueReturns is the metric of how many returns a sweep found overdue: the
// return-due kind's Found, which its alarm watches.
const OverdueReturns = "OverdueReturns"

// KindMetrics are one kind's metrics: <Kind>RowsFound, <Kind>RowsActed,
// <Kind>RowsDeclined, <Kind>RowsFailed, <Kind>RowsLeft and <Kind>RowsOldestOverdue,
// the kind's name capitalised (PaymentRowsFound, StuckRowsFound, ReturnRowsFound,
// ...); the return due's Found is also OverdueReturns.
func KindMetrics(k deadline.KindSummary) []emf.Metric {
	name := strings.ToUpper(k.Kind[:1]) + k.Kind[1:] + "Rows"
	out := []emf.Metric{
		{Name: name + "Found", Unit: "Count", Value: float64(k.Found)},
		{Name: name + "Acted", Unit: "Count", Value: float64(k.Acted)},
		{Name: name + "Declined", Unit: "Count", Value: float64(k.Declined)},
		{Name: name + "Failed", Unit: "Count", Value: float64(k.Failed)},
		{Name: name + "Left", Unit: "Count", Value: float64(k.Left)},
		{Name: name + "OldestOverdue", Unit: "Seconds", Value: k.OldestOverdue.Seconds()},
	}
	if k.Kind == deadlinekinds.Return {
		out = append(out, emf.Metric{Name: OverdueReturns, Unit: "Count", Value: float64(k.Found)})
	}
	return out
}
