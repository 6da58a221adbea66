// Command historychart charts what an approved rental reads against how many
// rentals its bike had before, as an SVG: the design that read the bike's whole
// stream against the one that reads its tail and the rental by key
// (docs/decisions/0008-bounded-bike-reads.md). It reads the output of
// internal/app/bikestream's TestBikeCommandsReadTheSameAtAnyAge (`go test -v`), whose
// table gives, by age, what the request, the approval and the return read:
//
//	go run ./cmd/historychart -in docs/bike-history.txt -out docs/bike-history.svg
//
// An approved rental's read units are -base (the approved path on a new bike, from
// make bench-units) plus what its three bike commands read more than on a new bike.
// -before gives the earlier design's figures, age:units, as BENCHMARKS.md measured
// and predicted them. `make bench-history` runs the test and this.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bikerental/bikerental/tools/chartkit"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "historychart:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("historychart", flag.ContinueOnError)
	in := fs.String("in", "-", "`file` of the test's -v output; - for standard input")
	out := fs.String("out", "", "`file` to write the SVG chart to (required)")
	base := fs.Float64("base", 9, "read units of an approved rental on a new bike (make bench-units)")
	before := fs.String("before", "0:9,5:12,10:17,100:96,1000:882,10000:8745", "the whole-stream design's read units, age:units,...")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 || *out == "" {
		return errors.New("usage: historychart -in FILE -out FILE.svg [-base 9] [-before age:units,...]")
	}
	r := stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	now, err := Parse(r, *base)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	old, err := parsePairs(*before)
	if err != nil {
		return fmt.Errorf("-before: %w", err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := Render(f, old, now); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "| earlier rentals of the bike | read units per approved rental, whole stream | tail and rental by key |")
	fmt.Fprintln(stdout, "| --- | --- | --- |")
	for _, p := range now {
		o := "-"
		if v, ok := lookup(old, p.Age); ok {
			o = strconv.FormatFloat(v, 'f', -1, 64)
		}
		fmt.Fprintf(stdout, "| %d | %s | %s |\n", p.Age, o, strconv.FormatFloat(p.Units, 'f', -1, 64))
	}
	return nil
}

// Point is one age's read units per approved rental.
type Point struct {
	Age   int
	Units float64
}

var row = regexp.MustCompile(`^\s*\|\s*(\d+)\s*\|\s*\d+ calls, ([\d.]+) read units\s*\|\s*\d+ calls, ([\d.]+) read units\s*\|\s*\d+ calls, [\d.]+ read units\s*\|\s*\d+ calls, ([\d.]+) read units\s*\|`)

// Parse reads the test's table: for each age, the request's, the approval's and the
// return's read units, and returns base plus what they read more than at age 0.
func Parse(r io.Reader, base float64) ([]Point, error) {
	type cmds struct{ request, approve, ret float64 }
	byAge := map[int]cmds{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		age, _ := strconv.Atoi(m[1])
		var c cmds
		c.request, _ = strconv.ParseFloat(m[2], 64)
		c.approve, _ = strconv.ParseFloat(m[3], 64)
		c.ret, _ = strconv.ParseFloat(m[4], 64)
		byAge[age] = c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	zero, ok := byAge[0]
	if !ok {
		return nil, errors.New("no result for a new bike (0 earlier rentals)")
	}
	var out []Point
	for age, c := range byAge {
		more := c.request + c.approve + c.ret - zero.request - zero.approve - zero.ret
		out = append(out, Point{Age: age, Units: base + more})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Age < out[j].Age })
	return out, nil
}

func parsePairs(s string) ([]Point, error) {
	var out []Point
	for _, f := range strings.Split(s, ",") {
		a, u, ok := strings.Cut(strings.TrimSpace(f), ":")
		age, err1 := strconv.Atoi(a)
		units, err2 := strconv.ParseFloat(u, 64)
		if !ok || err1 != nil || err2 != nil || age < 0 || units < 1 {
			return nil, fmt.Errorf("%q: want age:units with units at least 1", f)
		}
		out = append(out, Point{age, units})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Age < out[j].Age })
	return out, nil
}

func lookup(ps []Point, age int) (float64, bool) {
	for _, p := range ps {
		if p.Age == age {
			return p.Units, true
		}
	}
	return 0, false
}

// Render writes the chart: earlier rentals across on a log scale (0 drawn one
// decade below the first nonzero age), read units up on a log scale, a line per
// design, each point labelled.
func Render(w io.Writer, before, now []Point) error {
	if len(now) == 0 {
		return errors.New("no results to chart")
	}
	const width, height, left, right, top, bottom = 900.0, 560.0, 80.0, 30.0, 60.0, 70.0
	ages := append(append([]Point(nil), before...), now...)
	minAge := math.Inf(1)
	maxAge, maxUnits := 1.0, 10.0
	for _, p := range ages {
		if p.Age > 0 {
			minAge = math.Min(minAge, float64(p.Age))
		}
		maxAge = math.Max(maxAge, float64(p.Age))
		maxUnits = math.Max(maxUnits, p.Units)
	}
	if math.IsInf(minAge, 1) {
		minAge = 1
	}
	lo := math.Floor(math.Log10(minAge)) - 1 // where age 0 is drawn
	hi := math.Ceil(math.Log10(maxAge))
	top10 := math.Ceil(math.Log10(maxUnits))
	x := func(age int) float64 {
		v := lo
		if age > 0 {
			v = math.Log10(float64(age))
		}
		return left + (v-lo)/(hi-lo)*(width-left-right)
	}
	y := func(units float64) float64 {
		return height - bottom - math.Log10(units)/top10*(height-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="30" font-size="18" text-anchor="middle">Read units per approved rental against the bike's earlier rentals (log scales)</text>`+"\n", width/2)
	for d := 0.0; d <= top10; d++ {
		yy := y(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" font-size="12" text-anchor="end">%s</text>`+"\n",
			left, width-right, yy, yy, left-8, yy+4, chartkit.Thousands(math.Pow(10, d)))
	}
	ticks := []int{0}
	for d := lo + 1; d <= hi; d++ {
		ticks = append(ticks, int(math.Pow(10, d)))
	}
	for _, age := range ticks {
		xx := x(age)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`+"\n",
			xx, xx, top, height-bottom, xx, height-bottom+18, chartkit.Thousands(float64(age)))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13" text-anchor="middle">earlier rentals of the same bike</text>`+"\n", (left+width-right)/2, height-bottom+45)
	fmt.Fprintf(&b, `<text x="20" y="%.0f" font-size="13" text-anchor="middle" transform="rotate(-90 20 %.0f)">read units</text>`+"\n", (top+height-bottom)/2, (top+height-bottom)/2)
	series := []struct {
		name, color string
		points      []Point
	}{
		{"before: every bike command reads the whole stream (measured to 5, then predicted)", "#c0392b", before},
		{"now: the tail and the rental by key (measured on moto)", "#1f6fb4", now},
	}
	for i, s := range series {
		var path []string
		for _, p := range s.points {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p.Age), y(p.Units)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(path, " "))
		for _, p := range s.points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/><text x="%.1f" y="%.1f" font-size="11" fill="%s" text-anchor="middle">%s</text>`+"\n",
				x(p.Age), y(p.Units), s.color, x(p.Age), y(p.Units)-9, s.color, chartkit.Thousands(p.Units))
		}
		ly := top + 18 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/><text x="%.0f" y="%.1f" font-size="12">%s</text>`+"\n",
			left+15, left+45, ly, ly, s.color, left+52, ly+4, s.name)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
