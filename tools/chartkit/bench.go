package chartkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBenchmarks reports input with no benchmark result in it.
var ErrNoBenchmarks = errors.New("no benchmark results in the input")

// Benchmarks are the results of `go test -bench`: each benchmark's metrics by
// unit, by its name without the GOMAXPROCS suffix.
type Benchmarks struct {
	Figures map[string]map[string]float64
	// Env holds the "goos:", "goarch:" and "cpu:" lines' values.
	Env map[string]string
}

// ParseBenchmarks reads `go test -bench` output. Lines that are no benchmark
// result are kept only for the goos, goarch and cpu they name. A benchmark
// reported twice (-count, or two runs in one file) must report the same value of
// every unit but ns/op and those varies says vary (times), since the others are
// counts; a result line whose metrics are not value-unit pairs is an error, and so
// is input without results (ErrNoBenchmarks).
func ParseBenchmarks(r io.Reader, varies func(unit string) bool) (Benchmarks, error) {
	res := Benchmarks{Figures: map[string]map[string]float64{}, Env: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		for _, key := range []string{"goos", "goarch", "cpu"} {
			if v, ok := strings.CutPrefix(text, key+": "); ok {
				res.Env[key] = strings.TrimSpace(v)
			}
		}
		fields := strings.Fields(text)
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // the name alone, as -v prints it
		}
		name := fields[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		metrics := fields[2:]
		if len(metrics)%2 != 0 {
			return Benchmarks{}, fmt.Errorf("line %d: %s: metrics are not value-unit pairs", line, name)
		}
		got := map[string]float64{}
		for i := 0; i < len(metrics); i += 2 {
			v, err := strconv.ParseFloat(metrics[i], 64)
			if err != nil {
				return Benchmarks{}, fmt.Errorf("line %d: %s: %s %q is not a number", line, name, metrics[i+1], metrics[i])
			}
			got[metrics[i+1]] = v
		}
		if prev, ok := res.Figures[name]; ok {
			for unit, v := range got {
				if unit != "ns/op" && (varies == nil || !varies(unit)) && prev[unit] != v {
					return Benchmarks{}, fmt.Errorf("line %d: %s reported %s %v before and %v now; counts should not vary", line, name, unit, prev[unit], v)
				}
			}
		}
		res.Figures[name] = got
	}
	if err := sc.Err(); err != nil {
		return Benchmarks{}, err
	}
	if len(res.Figures) == 0 {
		return Benchmarks{}, ErrNoBenchmarks
	}
	return res, nil
}

// Figure returns the metric unit of benchmark name, or an error naming what is
// missing.
func (b Benchmarks) Figure(name, unit string) (float64, error) {
	f, ok := b.Figures[name]
	if !ok {
		return 0, fmt.Errorf("no result for %s in the input", name)
	}
	v, ok := f[unit]
	if !ok {
		return 0, fmt.Errorf("%s: %s is missing", name, unit)
	}
	return v, nil
}

// Sub returns the sub-benchmarks of benchmark bench, sorted by name, each as a
// map of its name's key=value parts, with "name" its whole name and "table" a
// first part without "=" (what the sub-benchmarks ran on).
func (b Benchmarks) Sub(bench string) []map[string]string {
	var names []string
	for name := range b.Figures {
		if strings.HasPrefix(name, bench+"/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []map[string]string
	for _, name := range names {
		parts := map[string]string{"name": name}
		for i, p := range strings.Split(strings.TrimPrefix(name, bench+"/"), "/") {
			if k, v, ok := strings.Cut(p, "="); ok {
				parts[k] = v
			} else if i == 0 {
				parts["table"] = p
			}
		}
		out = append(out, parts)
	}
	return out
}
