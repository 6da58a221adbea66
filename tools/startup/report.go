package startup

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is what was measured of one function.
type Result struct {
	Function string
	// Sizes are the stripped binary's sizes in bytes, by GOARCH.
	Sizes map[string]int64
	// Samples are the cold starts, in the order they ran.
	Samples []Sample
	// Trace is the package initialisation of one more cold start, run with
	// GODEBUG=inittrace=1 (zero if none was run).
	Trace InitTrace
}

func (r Result) durations(f func(Sample) time.Duration) []time.Duration {
	ds := make([]time.Duration, len(r.Samples))
	for i, s := range r.Samples {
		ds[i] = f(s)
	}
	return ds
}

// Init, FirstInvoke, StartToResponse, CPU and Waited return one measure of every
// sample.
func (r Result) Init() []time.Duration {
	return r.durations(func(s Sample) time.Duration { return s.Init })
}
func (r Result) FirstInvoke() []time.Duration {
	return r.durations(func(s Sample) time.Duration { return s.FirstInvoke })
}
func (r Result) StartToResponse() []time.Duration {
	return r.durations(func(s Sample) time.Duration { return s.StartToResponse })
}
func (r Result) CPU() []time.Duration {
	return r.durations(func(s Sample) time.Duration { return s.CPU })
}
func (r Result) Waited() []time.Duration {
	return r.durations(func(s Sample) time.Duration { return s.Waited })
}

// column is one timing of the table: its heading and its measure.
type column struct {
	heading string
	measure func(Result) []time.Duration
	ratio   bool // followed by a column of the median's ratio to the reference's
}

var columns = []column{
	{"init ms", Result.Init, true},
	{"CPU ms", Result.CPU, true},
	{"first invoke ms", Result.FirstInvoke, true},
	{"start → response ms", Result.StartToResponse, true},
	{"CPU wait ms", Result.Waited, false},
}

// Markdown writes results as a markdown table: sizes in MB (10^6 bytes) for each of
// arches, then the median and 90th percentile, "median (p90)", of each timing in
// milliseconds, most with the median's ratio to the median of the result named
// reference, and the package inits' total.
func Markdown(w io.Writer, results []Result, reference string, arches []string) error {
	var ref *Result
	for i := range results {
		if results[i].Function == reference {
			ref = &results[i]
		}
	}
	if ref == nil {
		return fmt.Errorf("startup: no result for the reference %q", reference)
	}
	var b strings.Builder
	b.WriteString("| function |")
	align := "|---|"
	for _, a := range arches {
		fmt.Fprintf(&b, " %s MB |", a)
		align += "---:|"
	}
	for _, c := range columns {
		fmt.Fprintf(&b, " %s |", c.heading)
		align += "---:|"
		if c.ratio {
			fmt.Fprintf(&b, " ÷ %s |", reference)
			align += "---:|"
		}
	}
	b.WriteString(" package inits ms |\n" + align + "---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s |", r.Function)
		for _, a := range arches {
			fmt.Fprintf(&b, " %.2f |", float64(r.Sizes[a])/1e6)
		}
		for _, c := range columns {
			ds := c.measure(r)
			fmt.Fprintf(&b, " %s (%s) |", ms(Percentile(ds, 50)), ms(Percentile(ds, 90)))
			if c.ratio {
				fmt.Fprintf(&b, " %s |", ratio(Percentile(ds, 50), Percentile(c.measure(*ref), 50)))
			}
		}
		if r.Trace.Packages != nil {
			fmt.Fprintf(&b, " %s |\n", ms(r.Trace.Clock))
		} else {
			b.WriteString(" – |\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func ratio(d, ref time.Duration) string {
	if ref <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(d)/float64(ref))
}
