// Package sweepmetrics writes a sweep's summary (awslambda.Summary) as CloudWatch metrics: one Embedded
// Metric Format document per sweep (through internal/lib/emf), which the sweep function
// writes to its standard output, where Lambda's log agent turns it into metrics
// without any API call.
package sweepmetrics

import (
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/lib/emf"
)

// Writer is the sweep's reporter (awslambda.Report) that writes each summary to Out as one
// EMF document, with the dimension Service=Service (METRICS_SERVICE, which tells
// deployments apart). A summary that cannot be written is reported to Failed, if
// not nil.
type Writer struct {
	Out     *emf.Writer
	Service string
	Failed  func(error)
}

// NewWriter returns the Writer of sweep summaries to w under the dimension
// Service=service, reporting what cannot be written to failed.
func NewWriter(w *emf.Writer, service string, failed func(error)) *Writer {
	return &Writer{Out: w, Service: service, Failed: failed}
}

// Report writes sum's document. A summary that counts no kind (a row's own
// deadline naming no row of a swept kind) writes none.
func (w *Writer) Report(sum awslambda.Summary) {
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
// one metric per count, named for the kind that counted it and for what it counts
// (KindMetrics). A sweep of one row's own deadline (precise mode) writes its
// kind's alone, so that no zero reaches an alarm's Minimum as nothing overdue
// while something is.
func Document(sum awslambda.Summary, service string) emf.Document {
	d := emf.Document{
		Namespace:  Namespace,
		Timestamp:  sum.Now,
		Dimensions: []emf.Dimension{{Name: "Service", Value: service}},
	}
	for _, k := range sum.Kinds {
		d.Metrics = append(d.Metrics, KindMetrics(k)...)
	}
	return d
}

// KindMetrics are one kind's metrics, the kind's name capitalised before Rows
// (PaymentRowsFound, StuckRowsFound, CancellationRowsFound, RedeliveryRowsFound,
// ...): <Kind>RowsFound, the overdue rows the sweep found; <Kind>RowsWaiting, those
// of them it held back for their backoff; what became of the others, one count an
// outcome, which add up to the rest: <Kind>RowsActed (the receiver acted: a
// payment cancelled, a stuck rental repaired, a return flagged overdue, a
// cancellation made at the provider, a parked record delivered again),
// <Kind>RowsDeclined (the receiver would not: a payment confirmed meanwhile, a
// stuck rental left for an operator), <Kind>RowsNothingToDo, <Kind>RowsFailed (the
// command failed: a provider that leaves a cancellation unanswered, a parked
// record that fails again) and <Kind>RowsLeft (not sent: out of time, or the kind
// has no command); and <Kind>RowsOldestOverdue, in seconds, how long past its due
// time the oldest was.
func KindMetrics(k deadlines.KindSummary) []emf.Metric {
	name := strings.ToUpper(k.Kind[:1]) + k.Kind[1:] + "Rows"
	return []emf.Metric{
		count(name+"Found", k.Found),
		count(name+"Waiting", k.Waiting),
		count(name+"Acted", k.Acted),
		count(name+"Declined", k.Declined),
		count(name+"NothingToDo", k.NothingToDo),
		count(name+"Failed", k.Failed),
		count(name+"Left", k.Left),
		seconds(name+"OldestOverdue", k.OldestOverdue),
	}
}

func count(name string, v int) emf.Metric {
	return emf.Metric{Name: name, Unit: "Count", Value: float64(v)}
}

func seconds(name string, d time.Duration) emf.Metric {
	return emf.Metric{Name: name, Unit: "Seconds", Value: d.Seconds()}
}
