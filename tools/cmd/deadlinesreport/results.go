package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Results are the benchmarks' figures: by benchmark name (without the GOMAXPROCS
// suffix), each metric by its unit. Lines that are no benchmark result are kept
// only for the goos, goarch, pkg and cpu they name.
type Results struct {
	Figures map[string]map[string]float64
	// Env holds the "goos:", "goarch:" and "cpu:" lines' values.
	Env map[string]string
}

// Parse reads `go test -bench` output. A benchmark reported twice (-count, or
// two runs in one file) must report the same figures, all of which are counts;
// a result line whose metrics are not value-unit pairs is an error.
func Parse(r io.Reader) (Results, error) {
	res := Results{Figures: map[string]map[string]float64{}, Env: map[string]string{}}
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
			return Results{}, fmt.Errorf("line %d: %s: metrics are not value-unit pairs", line, name)
		}
		got := map[string]float64{}
		for i := 0; i < len(metrics); i += 2 {
			v, err := strconv.ParseFloat(metrics[i], 64)
			if err != nil {
				return Results{}, fmt.Errorf("line %d: %s: %s %q is not a number", line, name, metrics[i+1], metrics[i])
			}
			got[metrics[i+1]] = v
		}
		if prev, ok := res.Figures[name]; ok {
			for unit, v := range got {
				if unit != "ns/op" && !timing(unit) && prev[unit] != v {
					return Results{}, fmt.Errorf("line %d: %s reported %s %v before and %v now; counts should not vary", line, name, unit, prev[unit], v)
				}
			}
		}
		res.Figures[name] = got
	}
	if err := sc.Err(); err != nil {
		return Results{}, err
	}
	if len(res.Figures) == 0 {
		return Results{}, fmt.Errorf("no benchmark results in the input")
	}
	return res, nil
}

// timing reports whether unit is a time, which varies between runs.
func timing(unit string) bool {
	return unit == "ms/apply" || unit == "min/200k-applies"
}

// figure returns the metric unit of benchmark name, or an error naming what is
// missing.
func (r Results) figure(name, unit string) (float64, error) {
	f, ok := r.Figures[name]
	if !ok {
		return 0, fmt.Errorf("no result for %s in the input", name)
	}
	v, ok := f[unit]
	if !ok {
		return 0, fmt.Errorf("%s reports no %s", name, unit)
	}
	return v, nil
}

// sub returns the sub-benchmarks of benchmark bench, as maps of their name's
// key=value parts (and "table", the first part, for the table they ran on),
// sorted by name.
func (r Results) sub(bench string) []map[string]string {
	var names []string
	for name := range r.Figures {
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

// atoi reads a whole number of a sub-benchmark's name.
func atoi(parts map[string]string, key string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(parts[key], "pct"))
	if err != nil {
		return 0, fmt.Errorf("%s: %s=%q is not a whole number", parts["name"], key, parts[key])
	}
	return n, nil
}
