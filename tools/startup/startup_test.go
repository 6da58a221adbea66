package startup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/tools/startup"
)

func TestParseInitReport(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		ok   bool
	}{
		{"30 Nov 2026 02:28:15,770 [INFO] (rapid) INIT REPORT(durationMs: 3.181000)", 3181 * time.Microsecond, true},
		{"INIT REPORT(initType: on-demand, durationMs: 12.50, status: success, phase: init, errorType: )", 12500 * time.Microsecond, true},
		{"INIT REPORT(durationMs: 7)", 7 * time.Millisecond, true},
		{"INIT START(type: on-demand, phase: init)", 0, false},
		{"REPORT RequestId: x\tInit Duration: 0.02 ms\tDuration: 4.27 ms", 0, false},
	} {
		got, ok := startup.ParseInitReport(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseInitReport(%q) = %v, %v; want %v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseInitTrace(t *testing.T) {
	out := strings.Join([]string{
		"START RequestId: 1 Version: $LATEST",
		"init internal/bytealg @0.003 ms, 0 ms clock, 0 bytes, 0 allocs",
		"init github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas @1.2 ms, 0.60 ms clock, 586696 bytes, 3151 allocs",
		"init net/http @1.4 ms, 0.073 ms clock, 4712 bytes, 49 allocs",
		`{"level":"INFO","msg":"init done"}`,
	}, "\n")
	tr := startup.ParseInitTrace(out)
	if len(tr.Packages) != 3 || tr.Packages[0].Package != "github.com/aws/aws-sdk-go-v2/service/dynamodb/schemas" || tr.Packages[1].Package != "net/http" {
		t.Fatalf("packages %+v", tr.Packages)
	}
	if tr.Clock != 673*time.Microsecond || tr.Bytes != 586696+4712 {
		t.Errorf("clock %v bytes %d", tr.Clock, tr.Bytes)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {90, 9}, {100, 10}, {1, 1}} {
		if got := startup.Percentile(ds, tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := startup.Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v", got)
	}
	if ds[0] != 5 {
		t.Errorf("Percentile sorted its argument")
	}
}

func TestMarkdown(t *testing.T) {
	sample := func(init time.Duration) startup.Sample {
		return startup.Sample{Init: init, CPU: init, FirstInvoke: 2 * init, StartToResponse: 10 * init}
	}
	results := []startup.Result{
		{Function: "hello", Sizes: map[string]int64{"arm64": 5_830_000, "amd64": 6_290_000},
			Samples: []startup.Sample{sample(4 * time.Millisecond), sample(2 * time.Millisecond), sample(3 * time.Millisecond)}},
		{Function: "command", Sizes: map[string]int64{"arm64": 8_060_000, "amd64": 8_650_000},
			Samples: []startup.Sample{sample(6 * time.Millisecond), sample(5 * time.Millisecond), sample(4 * time.Millisecond)},
			Trace:   startup.InitTrace{Clock: 1500 * time.Microsecond, Packages: []startup.PackageInit{{Package: "x"}}}},
	}
	var b strings.Builder
	if err := startup.Markdown(&b, results, "hello", []string{"arm64", "amd64"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header, an alignment row and two rows:\n%s", b.String())
	}
	for _, want := range []string{"| command | 8.06 | 8.65 | 5.00 (6.00) | 1.67× | 5.00 (6.00) | 1.67× | 10.00 (12.00) | 1.67× |", "| 1.50 |"} {
		if !strings.Contains(lines[3], want) {
			t.Errorf("the command row lacks %q:\n%s", want, lines[3])
		}
	}
	if !strings.Contains(lines[2], "| hello | 5.83 | 6.29 | 3.00 (4.00) | 1.00× |") || !strings.HasSuffix(lines[2], "| – |") {
		t.Errorf("the hello row: %s", lines[2])
	}
	if cells := strings.Count(lines[0], "|"); cells != strings.Count(lines[1], "|") || cells != strings.Count(lines[3], "|") {
		t.Errorf("rows of different widths:\n%s", b.String())
	}
	if err := startup.Markdown(&b, results, "missing", nil); err == nil {
		t.Error("no error for a missing reference")
	}
}

// TestColdStartOfHello builds the reference function and starts it cold once under
// the emulator: the sample must hold every measure, and a wrong answer, a failing
// function and a bootstrap that dies at init must be errors that quote its output.
func TestColdStartOfHello(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED, the Runtime Interface Emulator runs on Linux only")
	}
	r := &startup.Runner{RIE: emulatortest.RIE(t, filepath.Join("..", "..")), Env: []string{"PATH=/usr/bin:/bin"}, Timeout: time.Minute}
	ctx := context.Background()
	dir := t.TempDir()
	size, err := startup.Build(ctx, filepath.Join("..", ".."), "./tools/startup/hello", runtime.GOARCH, filepath.Join(dir, "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	if size < 1_000_000 {
		t.Errorf("a %d-byte hello binary", size)
	}

	s, err := r.ColdStart(ctx, dir, []byte(`{}`), func(b []byte) error {
		if string(b) != `"hello"` {
			return errors.New("not hello")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Init <= 0 || s.CPU <= 0 || s.FirstInvoke < s.Init || s.StartToResponse < s.FirstInvoke {
		t.Errorf("sample %+v: every measure must be set, init within the first invocation within start to response", s)
	}
	if !strings.Contains(s.Output, "INIT REPORT") || strings.Contains(s.FunctionOutput, "INIT REPORT") {
		t.Errorf("the emulator's log belongs in Output only:\nOutput:\n%s\nFunctionOutput:\n%s", s.Output, s.FunctionOutput)
	}

	if _, err := r.ColdStart(ctx, dir, []byte(`{}`), func([]byte) error { return errors.New("wrong answer") }); err == nil || !strings.Contains(err.Error(), "wrong answer") || !strings.Contains(err.Error(), "INIT REPORT") {
		t.Errorf("a rejected answer: err = %v", err)
	}

	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "bootstrap"), []byte("#!/bin/sh\necho the bootstrap gives up >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ColdStart(ctx, broken, []byte(`{}`), nil); err == nil || !strings.Contains(err.Error(), "the bootstrap gives up") {
		t.Errorf("a bootstrap that dies at init: err = %v", err)
	}
}
