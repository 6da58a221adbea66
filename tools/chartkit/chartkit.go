// Package chartkit holds what the tools' charts and reports share: the results of
// `go test -bench` read back (ParseBenchmarks), counts written with thousands
// separators, and a log axis ticked at every power of ten.
package chartkit

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// Thousands formats v, rounded to a whole number, with commas between groups of
// three digits: 100000 as "100,000".
func Thousands(v float64) string {
	n := int64(math.Round(v))
	if n < 0 {
		return "-" + Thousands(float64(-n))
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Decades ticks a log axis at every power of ten, labelled in full with thousands
// separators ("100,000" rather than "1e+05"), with minor ticks at 2 to 9 times each.
type Decades struct{}

var _ plot.Ticker = Decades{}

// Ticks implements plot.Ticker.
func (Decades) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(min))); e <= int(math.Ceil(math.Log10(max))); e++ {
		decade := math.Pow10(e)
		if decade >= min && decade <= max {
			label := Thousands(decade)
			if e < 0 {
				label = fmt.Sprint(decade)
			}
			ticks = append(ticks, plot.Tick{Value: decade, Label: label})
		}
		for m := 2.0; m < 10; m++ {
			if v := m * decade; v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}
