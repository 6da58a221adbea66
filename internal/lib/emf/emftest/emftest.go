// Package emftest reads Embedded Metric Format documents back, for tests: it checks
// each line as CloudWatch would read it.
package emftest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// Doc is one document, read back.
type Doc struct {
	Namespace  string
	Timestamp  time.Time
	Dimensions map[string]string  // each dimension's value, from its top-level member
	Values     map[string]float64 // each metric's value, from its top-level member
	Units      map[string]string
}

// Parse reads every line of out that holds an EMF document (a JSON object with an
// _aws member) and fails the test unless each is valid: a millisecond Timestamp, one
// CloudWatchMetrics directive with a Namespace, Dimensions and Metrics, every
// dimension a non-empty top-level string and every metric a top-level number. Other
// lines are skipped.
func Parse(t testing.TB, out []byte) []Doc {
	t.Helper()
	var docs []Doc
	for _, line := range bytes.Split(out, []byte("\n")) {
		var members map[string]json.RawMessage
		if json.Unmarshal(line, &members) != nil || members["_aws"] == nil {
			continue
		}
		var meta struct {
			Timestamp         *int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		}
		if err := json.Unmarshal(members["_aws"], &meta); err != nil || meta.Timestamp == nil || len(meta.CloudWatchMetrics) != 1 {
			t.Fatalf("EMF document without a Timestamp and one CloudWatchMetrics directive: %s (%v)", line, err)
		}
		cw := meta.CloudWatchMetrics[0]
		if cw.Namespace == "" || len(cw.Dimensions) != 1 || len(cw.Metrics) == 0 {
			t.Fatalf("EMF directive without a Namespace, one dimension set and metrics: %s", line)
		}
		d := Doc{Namespace: cw.Namespace, Timestamp: time.UnixMilli(*meta.Timestamp).UTC(),
			Dimensions: map[string]string{}, Values: map[string]float64{}, Units: map[string]string{}}
		for _, name := range cw.Dimensions[0] {
			var v string
			if err := json.Unmarshal(members[name], &v); err != nil || v == "" {
				t.Fatalf("EMF dimension %q is not a non-empty top-level string: %s", name, line)
			}
			d.Dimensions[name] = v
		}
		for _, m := range cw.Metrics {
			var v float64
			if err := json.Unmarshal(members[m.Name], &v); err != nil || m.Unit == "" {
				t.Fatalf("EMF metric %q is not a top-level number with a unit: %s", m.Name, line)
			}
			d.Values[m.Name], d.Units[m.Name] = v, m.Unit
		}
		docs = append(docs, d)
	}
	return docs
}
