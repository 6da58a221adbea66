// Package sweepmetrics writes a sweep's summary (sweep.Summary) as CloudWatch metrics: one Embedded
// Metric Format document per sweep (through internal/lib/emf), which the sweep function
// writes to its standard output, where Lambda's log agent turns it into metrics
// without any API call.
package sweepmetrics

import (
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
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

// Report implements sweep.Reporter. A summary that counts no part (a row's own
// deadline naming no row of a swept kind) writes no document.
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
// one metric per count, named for the part that counted it and for what it
// counts (KindMetrics, OwedMetrics, ParkedMetrics). A part is written only when
// it ran: a sweep of one row's own deadline (precise mode) writes its kind's
// alone, and one out of time before the owed cancellations and the parked
// records writes neither, so that no zero reaches an alarm's Minimum as
// nothing owed, stuck or parked while something is.
func Document(sum sweep.Summary, service string) emf.Document {
	d := emf.Document{
		Namespace:  Namespace,
		Timestamp:  sum.Now,
		Dimensions: []emf.Dimension{{Name: "Service", Value: service}},
	}
	for _, k := range sum.Kinds {
		d.Metrics = append(d.Metrics, KindMetrics(k)...)
	}
	if sum.Owed.Swept {
		d.Metrics = append(d.Metrics, OwedMetrics(sum.Owed)...)
	}
	if sum.Parked.Swept {
		d.Metrics = append(d.Metrics, ParkedMetrics(sum.Parked)...)
	}
	return d
}

// KindMetrics are one kind's metrics, the kind's name capitalised before Rows
// (PaymentRowsFound, StuckRowsFound, ReturnRowsFound, ...): <Kind>RowsFound, the
// overdue rows the sweep found; what became of each, one count an outcome, which
// add up to it: <Kind>RowsActed (the receiver acted: a payment cancelled, a stuck
// rental repaired, a return flagged overdue), <Kind>RowsDeclined (the receiver
// would not: a payment confirmed meanwhile, a stuck rental left for an operator),
// <Kind>RowsNothingToDo, <Kind>RowsFailed (the command failed) and <Kind>RowsLeft
// (not sent: out of time, or the kind has no command); and
// <Kind>RowsOldestOverdue, in seconds, how long past its due time the oldest was.
func KindMetrics(k deadline.KindSummary) []emf.Metric {
	name := strings.ToUpper(k.Kind[:1]) + k.Kind[1:] + "Rows"
	return []emf.Metric{
		count(name+"Found", k.Found),
		count(name+"Acted", k.Acted),
		count(name+"Declined", k.Declined),
		count(name+"NothingToDo", k.NothingToDo),
		count(name+"Failed", k.Failed),
		count(name+"Left", k.Left),
		seconds(name+"OldestOverdue", k.OldestOverdue),
	}
}

// OwedMetrics are the owed cancellations' metrics: OwedCancellationsFound, every
// cancellation owed to the provider that the sweep read, due or put off;
// OwedCancellationsMade, those its retries made; and
// OwedCancellationsLeft, those still owed after the sweep, due or put off.
func OwedMetrics(o owed.Summary) []emf.Metric {
	return []emf.Metric{
		count("OwedCancellationsFound", o.Owed),
		count("OwedCancellationsMade", o.Made),
		count("OwedCancellationsLeft", o.Left),
	}
}

// ParkedMetrics are the parked stream records' metrics: ParkedRecordsFound, those
// due; ParkedRecordsRedelivered, those delivered again; ParkedRecordsLeft, those
// still parked after the sweep; and ParkedRecordsOldestAge, in seconds, how long
// ago the oldest record it tried was recorded.
func ParkedMetrics(p parked.Summary) []emf.Metric {
	return []emf.Metric{
		count("ParkedRecordsFound", p.Found),
		count("ParkedRecordsRedelivered", p.Redelivered),
		count("ParkedRecordsLeft", p.Left),
		seconds("ParkedRecordsOldestAge", p.OldestParked),
	}
}

func count(name string, v int) emf.Metric {
	return emf.Metric{Name: name, Unit: "Count", Value: float64(v)}
}

func seconds(name string, d time.Duration) emf.Metric {
	return emf.Metric{Name: name, Unit: "Seconds", Value: d.Seconds()}
}
