package local

import (
	"encoding/json"
	"io"
)

// QuietMetrics returns a writer that passes on to w what the functions write to
// their standard output, one Embedded Metric Format document a write, except the
// documents whose every metric is zero: a sweep that found nothing, once an
// interval, which make run shows only at LOG_LEVEL=debug, as it logs that sweep.
// Anything that is not an EMF document passes on unchanged.
func QuietMetrics(w io.Writer) io.Writer { return quietMetrics{w} }

type quietMetrics struct{ w io.Writer }

func (q quietMetrics) Write(p []byte) (int, error) {
	if allZero(p) {
		return len(p), nil
	}
	return q.w.Write(p)
}

// allZero reports whether p is an EMF document whose metrics are all zero.
func allZero(p []byte) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(p, &members) != nil {
		return false
	}
	var meta struct {
		CloudWatchMetrics []struct {
			Metrics []struct{ Name string }
		}
	}
	if members["_aws"] == nil || json.Unmarshal(members["_aws"], &meta) != nil || len(meta.CloudWatchMetrics) == 0 {
		return false
	}
	for _, cw := range meta.CloudWatchMetrics {
		for _, m := range cw.Metrics {
			var v float64
			if json.Unmarshal(members[m.Name], &v) != nil || v != 0 {
				return false
			}
		}
	}
	return true
}
