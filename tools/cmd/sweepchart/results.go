package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/bikerental/bikerental/tools/chartkit"
)

// benchName is the benchmark whose results the chart shows, as tools/sweepscale
// names it: one sub-benchmark per table size, "pending=<n>/overdue=<m>".
const benchName = "BenchmarkSweepItemsRead"

// The metrics BenchmarkSweepItemsRead reports.
const (
	sweepUnit = "items-read/sweep"
	scanUnit  = "items-read/scan"
)

// Point is one table size's result: how many items a sweep and a scan-and-filter
// read with Pending rows, Overdue of them overdue.
type Point struct {
	Pending, Overdue int
	Sweep, Scan      int
}

// Ratio is how many times more items the scan read than the sweep.
func (p Point) Ratio() float64 { return float64(p.Scan) / float64(p.Sweep) }

// Parse reads `go test -bench` output and returns the BenchmarkSweepItemsRead
// results, by pending rows. Other benchmarks are ignored. Items read are counts
// that do not vary between runs, so a size reported more than once (-count) must
// report the same figures every time; otherwise, and when no result is found or a
// result lacks a metric, Parse returns an error.
func Parse(r io.Reader) ([]Point, error) {
	res, err := chartkit.ParseBenchmarks(r, func(unit string) bool { return unit != sweepUnit && unit != scanUnit })
	if err != nil && !errors.Is(err, chartkit.ErrNoBenchmarks) {
		return nil, err
	}
	var points []Point
	for _, parts := range res.Sub(benchName) {
		p, err := point(res, parts)
		if err != nil {
			return nil, err
		}
		points = append(points, p)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("no %s results in the input", benchName)
	}
	sort.Slice(points, func(i, j int) bool { return points[i].Pending < points[j].Pending })
	return points, nil
}

// point reads one sub-benchmark's result: its name's pending= and overdue=, and
// the items the sweep and the scan read.
func point(res chartkit.Benchmarks, parts map[string]string) (Point, error) {
	name := parts["name"]
	var p Point
	for _, c := range []struct {
		key string
		n   *int
	}{{"pending", &p.Pending}, {"overdue", &p.Overdue}} {
		v, ok := parts[c.key]
		if !ok {
			return Point{}, fmt.Errorf("%s: the name lacks pending= or overdue=", name)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Point{}, fmt.Errorf("%s: %q is not <name>=<positive count>", name, c.key+"="+v)
		}
		*c.n = n
	}
	for _, c := range []struct {
		unit string
		n    *int
	}{{sweepUnit, &p.Sweep}, {scanUnit, &p.Scan}} {
		v, err := res.Figure(name, c.unit)
		if err != nil {
			return Point{}, err
		}
		if v < 1 || v != float64(int(v)) {
			return Point{}, fmt.Errorf("%s: %s %v is not a positive whole number", name, c.unit, v)
		}
		*c.n = int(v)
	}
	return p, nil
}

// Table writes points as a Markdown table.
func Table(w io.Writer, points []Point) error {
	var b strings.Builder
	b.WriteString("| pending rows | overdue | sweep reads | scan reads | scan / sweep |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: |\n")
	for _, p := range points {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", chartkit.Thousands(float64(p.Pending)), chartkit.Thousands(float64(p.Overdue)),
			chartkit.Thousands(float64(p.Sweep)), chartkit.Thousands(float64(p.Scan)), ratio(p.Ratio()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ratio formats r as a whole number when it is one, else to one decimal place.
func ratio(r float64) string {
	if r == float64(int(r)) {
		return chartkit.Thousands(r)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}
