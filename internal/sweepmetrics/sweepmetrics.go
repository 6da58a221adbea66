// Package sweepmetrics writes a sweep's summary as CloudWatch metrics: one Embedded
// Metric Format document per sweep, which the sweep function writes to its standard
// output, where Lambda's log agent turns it into metrics without any API call.
package sweepmetrics

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bikerental/bikerental/internal/deadline"
)

// Writer returns a deadline.Sweeper Report that writes each summary to w as one EMF
// document and a newline, with the dimension Service=service ("bikerental" if empty).
func Writer(w io.Writer, service string) func(deadline.Summary) {
	if service == "" {
		service = "bikerental"
	}
	return func(sum deadline.Summary) {
		if b, err := EMF(sum, service); err == nil {
			w.Write(append(b, '\n'))
		}
	}
}

// Namespace is the CloudWatch namespace of the sweep's metrics.
const Namespace = "BikeRental/Sweep"

// EMF renders a summary as a CloudWatch Embedded Metric Format document, with the
// dimension Service=service: written to a Lambda function's standard output, it
// becomes metrics without any API call.
func EMF(sum deadline.Summary, service string) ([]byte, error) {
	counts := []struct {
		name  string
		value float64
		unit  string
	}{
		{"Found", float64(sum.Found), "Count"},
		{"Cancelled", float64(sum.Cancelled), "Count"},
		{"Declined", float64(sum.Declined), "Count"},
		{"NothingToDo", float64(sum.NothingToDo), "Count"},
		{"Failed", float64(sum.Failed), "Count"},
		{"ItemsRead", float64(sum.ItemsRead), "Count"},
		{"OldestOverdue", sum.OldestOverdue.Seconds(), "Seconds"},
		{"StuckRentals", float64(sum.Stuck), "Count"},
		{"StuckRepaired", float64(sum.StuckRepaired), "Count"},
		{"StuckLeft", float64(sum.StuckLeft), "Count"},
		{"CancellationsOwed", float64(sum.CancellationsOwed), "Count"},
		{"CancellationsMade", float64(sum.CancellationsMade), "Count"},
		{"CancellationsLeft", float64(sum.CancellationsLeft), "Count"},
	}
	doc := map[string]any{"Service": service}
	var metrics []map[string]string
	for _, c := range counts {
		doc[c.name] = c.value
		metrics = append(metrics, map[string]string{"Name": c.name, "Unit": c.unit})
	}
	doc["_aws"] = map[string]any{
		"Timestamp": sum.Now.UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  Namespace,
			"Dimensions": [][]string{{"Service"}},
			"Metrics":    metrics,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("sweepmetrics: %w", err)
	}
	return b, nil
}
