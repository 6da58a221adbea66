package main

import (
	"bufio"
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
// results, by pending rows. Other lines are ignored. Items read are counts that do
// not vary between runs, so a size reported more than once (-count) must report the
// same figures every time; otherwise, and when no result is found or a result line
// lacks a metric, Parse returns an error.
func Parse(r io.Reader) ([]Point, error) {
	byPending := map[int]Point{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[0], benchName+"/") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // the name alone, as -v prints it before the result
		}
		p, err := parseResult(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if prev, ok := byPending[p.Pending]; ok && prev != p {
			return nil, fmt.Errorf("line %d: pending=%d reported %+v before and %+v now; items read should not vary", line, p.Pending, prev, p)
		}
		byPending[p.Pending] = p
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(byPending) == 0 {
		return nil, fmt.Errorf("no %s results in the input", benchName)
	}
	points := make([]Point, 0, len(byPending))
	for _, p := range byPending {
		points = append(points, p)
	}
	sort.Slice(points, func(i, j int) bool { return points[i].Pending < points[j].Pending })
	return points, nil
}

// parseResult reads one result line split into fields: the name, the iteration
// count, then value-unit pairs.
func parseResult(fields []string) (Point, error) {
	var p Point
	name := strings.TrimPrefix(fields[0], benchName+"/")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i] // the GOMAXPROCS suffix
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		key, value, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(value)
		if !ok || err != nil || n <= 0 {
			return Point{}, fmt.Errorf("%s: %q is not <name>=<positive count>", fields[0], part)
		}
		switch key {
		case "pending":
			p.Pending = n
		case "overdue":
			p.Overdue = n
		}
	}
	if p.Pending == 0 || p.Overdue == 0 {
		return Point{}, fmt.Errorf("%s: the name lacks pending= or overdue=", fields[0])
	}
	metrics := fields[2:]
	if len(metrics)%2 != 0 {
		return Point{}, fmt.Errorf("%s: metrics are not value-unit pairs", fields[0])
	}
	for i := 0; i < len(metrics); i += 2 {
		unit := metrics[i+1]
		if unit != sweepUnit && unit != scanUnit {
			continue
		}
		v, err := strconv.ParseFloat(metrics[i], 64)
		if err != nil || v < 1 || v != float64(int(v)) {
			return Point{}, fmt.Errorf("%s: %s %q is not a positive whole number", fields[0], unit, metrics[i])
		}
		if unit == sweepUnit {
			p.Sweep = int(v)
		} else {
			p.Scan = int(v)
		}
	}
	if p.Sweep == 0 || p.Scan == 0 {
		return Point{}, fmt.Errorf("%s: %s or %s is missing", fields[0], sweepUnit, scanUnit)
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
