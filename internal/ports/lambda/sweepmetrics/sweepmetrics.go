// Package sweepmetrics writes a sweep's summary as CloudWatch metrics: one Embedded
// Metric Format document per sweep (through internal/lib/emf), which the sweep function
// writes to its standard output, where Lambda's log agent turns it into metrics
// without any API call.
package sweepmetrics

import (
	"strings"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/lib/emf"
)

// Writer is the sweep's deadline.Reporter that writes each summary to Out as one
// EMF document, with the dimension Service=Service (METRICS_SERVICE, which tells
// deployments apart). A summary that cannot be written is reported to Failed, if
// not nil.
type Writer struct {
	Out     *emf.Writer
	Service string
	Failed  func(error)
}

var _ deadline.Reporter = (*Writer)(nil)

// NewWriter returns the Writer of sweep summaries to w under the dimension
// Service=service, reporting what cannot be written to failed.
func NewWriter(w *emf.Writer, service string, failed func(error)) *Writer {
	return &Writer{Out: w, Service: service, Failed: failed}
}

// Report implements deadline.Reporter.
func (w *Writer) Report(sum deadline.Summary) {
	if err := w.Out.Write(Document(sum, w.Service)); err != nil && w.Failed != nil {
		w.Failed(err)
	}
}

// Namespace is the CloudWatch namespace of the sweep's metrics.
const Namespace = "BikeRental/Sweep"

// Document is a summary as an EMF document, with the dimension Service=service:
// the counts the sweep reported before kinds, and for each kind its own (KindMetrics),
// OverdueReturns among them.
func Document(sum deadline.Summary, service string) emf.Document {
	d := emf.Document{
		Namespace:  Namespace,
		Timestamp:  sum.Now,
		Dimensions: []emf.Dimension{{Name: "Service", Value: service}},
		Metrics: []emf.Metric{
			{Name: "Found", Unit: "Count", Value: float64(sum.Found)},
			{Name: "Cancelled", Unit: "Count", Value: float64(sum.Cancelled)},
			{Name: "Declined", Unit: "Count", Value: float64(sum.Declined)},
			{Name: "NothingToDo", Unit: "Count", Value: float64(sum.NothingToDo)},
			{Name: "Failed", Unit: "Count", Value: float64(sum.Failed)},
			{Name: "ItemsRead", Unit: "Count", Value: float64(sum.ItemsRead)},
			{Name: "OldestOverdue", Unit: "Seconds", Value: sum.OldestOverdue.Seconds()},
			{Name: "StuckRentals", Unit: "Count", Value: float64(sum.Stuck)},
			{Name: "StuckRepaired", Unit: "Count", Value: float64(sum.StuckRepaired)},
			{Name: "StuckLeft", Unit: "Count", Value: float64(sum.StuckLeft)},
			{Name: "CancellationsOwed", Unit: "Count", Value: float64(sum.CancellationsOwed)},
			{Name: "CancellationsMade", Unit: "Count", Value: float64(sum.CancellationsMade)},
			{Name: "CancellationsLeft", Unit: "Count", Value: float64(sum.CancellationsLeft)},
			{Name: "Parked", Unit: "Count", Value: float64(sum.Parked)},
			{Name: "Redelivered", Unit: "Count", Value: float64(sum.Redelivered)},
			{Name: "RedeliveriesLeft", Unit: "Count", Value: float64(sum.RedeliveriesLeft)},
			{Name: "OldestParked", Unit: "Seconds", Value: sum.OldestParked.Seconds()},
		},
	}
	for _, k := range sum.Kinds {
		d.Metrics = append(d.Metrics, KindMetrics(k)...)
	}
	return d
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
