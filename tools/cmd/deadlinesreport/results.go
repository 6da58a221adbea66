package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bikerental/bikerental/tools/chartkit"
)

// Parse reads the benchmarks' `go test -bench` output: their figures are counts
// that do not vary between runs, but for the times BenchmarkApplyOnMoto takes.
func Parse(r io.Reader) (chartkit.Benchmarks, error) {
	return chartkit.ParseBenchmarks(r, timing)
}

// timing reports whether unit is a time, which varies between runs.
func timing(unit string) bool {
	return unit == "ms/apply" || unit == "min/200k-applies"
}

// atoi reads a whole number of a sub-benchmark's name.
func atoi(parts map[string]string, key string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(parts[key], "pct"))
	if err != nil {
		return 0, fmt.Errorf("%s: %s=%q is not a whole number", parts["name"], key, parts[key])
	}
	return n, nil
}
