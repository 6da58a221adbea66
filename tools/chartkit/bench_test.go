package chartkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/tools/chartkit"
)

func TestParseBenchmarksKeepsCountsAndLetsTimesVary(t *testing.T) {
	out := "goos: linux\ncpu: Example CPU\nBenchmarkX/table/n=5-2 1 9 ns/op 2 queries 3.5 ms/call\nBenchmarkX/table/n=5-2 1 8 ns/op 2 queries 4.1 ms/call\n"
	res, err := chartkit.ParseBenchmarks(strings.NewReader(out), func(unit string) bool { return unit == "ms/call" })
	if err != nil {
		t.Fatal(err)
	}
	if q, err := res.Figure("BenchmarkX/table/n=5", "queries"); err != nil || q != 2 {
		t.Errorf("queries %v, %v", q, err)
	}
	if _, err := res.Figure("BenchmarkX/table/n=5", "items"); err == nil || !strings.Contains(err.Error(), "items is missing") {
		t.Errorf("a missing metric: %v", err)
	}
	if subs := res.Sub("BenchmarkX"); len(subs) != 1 || subs[0]["table"] != "table" || subs[0]["n"] != "5" {
		t.Errorf("sub-benchmarks %v", subs)
	}
	if res.Env["goos"] != "linux" || res.Env["cpu"] != "Example CPU" {
		t.Errorf("env %v", res.Env)
	}
	if _, err := chartkit.ParseBenchmarks(strings.NewReader(out), nil); err == nil || !strings.Contains(err.Error(), "should not vary") {
		t.Errorf("times that vary, declared as counts: %v", err)
	}
	if _, err := chartkit.ParseBenchmarks(strings.NewReader("PASS\n"), nil); !errors.Is(err, chartkit.ErrNoBenchmarks) {
		t.Errorf("no results: %v", err)
	}
}
