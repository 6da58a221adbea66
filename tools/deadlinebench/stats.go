package deadlinebench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Distribution summarises a sample of durations.
type Distribution struct {
	N                          int
	Min, Median, P90, P99, Max time.Duration
	Mean                       time.Duration
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, by the
// nearest-rank method: the smallest value such that at least p percent of the sample
// is no greater than it. It is always a value of the sample, so the median of an
// even-sized sample is the lower of its two middle values. sorted must be in
// ascending order and not empty.
func Percentile(sorted []time.Duration, p float64) (time.Duration, error) {
	if len(sorted) == 0 {
		return 0, fmt.Errorf("deadlinebench: percentile of an empty sample")
	}
	if !(p > 0 && p <= 100) {
		return 0, fmt.Errorf("deadlinebench: percentile %v: want more than 0 and at most 100", p)
	}
	// n*p is exact for whole percentages, so its quotient by 100 is an integer exactly
	// when it should be, and the ceiling is the nearest rank.
	n := len(sorted)
	rank := int(math.Ceil(float64(n) * p / 100))
	rank = max(1, min(rank, n))
	return sorted[rank-1], nil
}

// Summarize returns the distribution of sample, which it does not change. An empty
// sample is an error.
func Summarize(sample []time.Duration) (Distribution, error) {
	if len(sample) == 0 {
		return Distribution{}, fmt.Errorf("deadlinebench: summary of an empty sample")
	}
	sorted := slices.Clone(sample)
	slices.Sort(sorted)
	d := Distribution{N: len(sorted), Min: sorted[0], Max: sorted[len(sorted)-1]}
	var sum time.Duration
	for _, v := range sorted {
		sum += v
	}
	d.Mean = sum / time.Duration(len(sorted))
	for _, q := range []struct {
		p  float64
		to *time.Duration
	}{{50, &d.Median}, {90, &d.P90}, {99, &d.P99}} {
		v, err := Percentile(sorted, q.p)
		if err != nil {
			return Distribution{}, err
		}
		*q.to = v
	}
	return d, nil
}
