package deadlinebench

import (
	"slices"
	"testing"
	"time"
)

func seconds(vs ...int) []time.Duration {
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Second // 1s … 100s
	}
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"one value is every percentile", seconds(7), 50, 7 * time.Second},
		{"one value, p100", seconds(7), 100, 7 * time.Second},
		{"median of an odd sample is its middle", seconds(1, 2, 3, 4, 5), 50, 3 * time.Second},
		{"median of an even sample is the lower middle", seconds(1, 2, 3, 4), 50, 2 * time.Second},
		{"p90 of 10 is the 9th", seconds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Second},
		{"p99 of 10 is the largest", seconds(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Second},
		{"p99 of 100 is the 99th", hundred, 99, 99 * time.Second},
		{"p90 of 100 is the 90th", hundred, 90, 90 * time.Second},
		{"p50 of 100 is the 50th", hundred, 50, 50 * time.Second},
		{"a tiny percentile is the smallest", hundred, 0.1, time.Second},
		{"p100 is the largest", hundred, 100, 100 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Percentile(c.sorted, c.p)
			if err != nil || got != c.want {
				t.Fatalf("Percentile(p%v) = %v, %v; want %v", c.p, got, err, c.want)
			}
		})
	}
}

func TestPercentileRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		p      float64
	}{
		{"empty sample", nil, 50},
		{"p0", seconds(1), 0},
		{"negative", seconds(1), -5},
		{"over 100", seconds(1), 100.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Percentile(c.sorted, c.p); err == nil {
				t.Fatalf("Percentile(%v, %v) succeeded", c.sorted, c.p)
			}
		})
	}
}

func TestSummarizeLeavesTheSampleAlone(t *testing.T) {
	sample := seconds(5, 1, 4, 2, 3)
	d, err := Summarize(sample)
	if err != nil {
		t.Fatal(err)
	}
	want := Distribution{N: 5, Min: time.Second, Median: 3 * time.Second, P90: 5 * time.Second, P99: 5 * time.Second,
		Max: 5 * time.Second, Mean: 3 * time.Second}
	if d != want {
		t.Fatalf("Summarize = %+v, want %+v", d, want)
	}
	if got := seconds(5, 1, 4, 2, 3); !slices.Equal(sample, got) {
		t.Fatalf("Summarize reordered its input: %v", sample)
	}
	if _, err := Summarize(nil); err == nil {
		t.Fatal("Summarize(nil) succeeded")
	}
}
