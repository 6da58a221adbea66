// Package sweepmetrics writes a sweep's summary as CloudWatch metrics: one Embedded
// Metric Format document per sweep (through internal/lib/emf), which the sweep function
// writes to its standard output, where Lambda's log agent turns it into metrics
// without any API call.
package sweepmetrics

import (
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/lib/emf"
)

// Writer returns a deadline.Sweeper Report that writes each summary to w as one EMF
// document, with the dimension Service=service (METRICS_SERVICE, which tells
// deployments apart). A summary that cannot be written is reported to failed, if not
// nil.
func Writer(w *emf.Writer, service string, failed func(error)) func(deadline.Summary) {
	return func(sum deadline.Summary) {
		if err := w.Write(Document(sum, service)); err != nil && failed != nil {
			failed(err)
		}
	}
}

// Namespace is the CloudWatch namespace of the sweep's metrics.
const Namespace = "BikeRental/Sweep"

// Document is a summary as an EMF document, with the dimension Service=service.
func Document(sum deadline.Summary, service string) emf.Document {
	return emf.Document{
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
}
