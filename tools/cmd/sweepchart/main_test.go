package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// output is what `go test -bench BenchmarkSweepItemsRead -v` prints, trimmed.
const output = `goos: linux
goarch: amd64
pkg: github.com/bikerental/bikerental/tools/sweepscale
cpu: Intel(R) Xeon(R) Processor
BenchmarkSweepItemsRead
BenchmarkSweepItemsRead/pending=1000/overdue=10
BenchmarkSweepItemsRead/pending=1000/overdue=10-2         	       3	  81914969 ns/op	      1000 items-read/scan	        10.00 items-read/sweep	       100.0 scan/sweep
BenchmarkSweepItemsRead/pending=100000/overdue=10
BenchmarkSweepItemsRead/pending=100000/overdue=10-2       	       3	5298518988 ns/op	    100000 items-read/scan	        10.00 items-read/sweep	     10000 scan/sweep
BenchmarkSweepItemsRead/pending=10000/overdue=10
BenchmarkSweepItemsRead/pending=10000/overdue=10-2        	       3	 547927652 ns/op	     10000 items-read/scan	        10.00 items-read/sweep	      1000 scan/sweep
PASS
ok  	github.com/bikerental/bikerental/tools/sweepscale	64.1s
`

var want = []Point{
	{Pending: 1000, Overdue: 10, Sweep: 10, Scan: 1000},
	{Pending: 10000, Overdue: 10, Sweep: 10, Scan: 10000},
	{Pending: 100000, Overdue: 10, Sweep: 10, Scan: 100000},
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Point
		err      string
	}{
		{"go test output, sorted by pending rows", output, want, ""},
		{"a size repeated by -count with the same figures", output + output, want, ""},
		{"no GOMAXPROCS suffix (-cpu 1)", "BenchmarkSweepItemsRead/pending=5/overdue=2 1 9 ns/op 2 items-read/sweep 5 items-read/scan\n",
			[]Point{{Pending: 5, Overdue: 2, Sweep: 2, Scan: 5}}, ""},
		{"other benchmarks are ignored", "BenchmarkOther/pending=5-2 1 9 ns/op\n" + output, want, ""},
		{"no results", "PASS\nok  \tgithub.com/x\t1s\n", nil, "no BenchmarkSweepItemsRead results"},
		{"runs that disagree", output + strings.Replace(output, "10.00 items-read/sweep", "12.00 items-read/sweep", 1), nil, "should not vary"},
		{"a missing metric", "BenchmarkSweepItemsRead/pending=5/overdue=2-2 1 9 ns/op 2 items-read/sweep\n", nil, "items-read/scan is missing"},
		{"a fractional count", "BenchmarkSweepItemsRead/pending=5/overdue=2-2 1 9 ns/op 2.5 items-read/sweep 5 items-read/scan\n", nil, "not a positive whole number"},
		{"a zero count", "BenchmarkSweepItemsRead/pending=5/overdue=2-2 1 9 ns/op 0 items-read/sweep 5 items-read/scan\n", nil, "not a positive whole number"},
		{"a name without overdue", "BenchmarkSweepItemsRead/pending=5-2 1 9 ns/op 2 items-read/sweep 5 items-read/scan\n", nil, "lacks pending= or overdue="},
		{"a malformed name", "BenchmarkSweepItemsRead/pending=lots/overdue=2-2 1 9 ns/op 2 items-read/sweep 5 items-read/scan\n", nil, `"pending=lots"`},
		{"odd metrics", "BenchmarkSweepItemsRead/pending=5/overdue=2-2 1 9 ns/op 2\n", nil, "value-unit pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, append(want, Point{Pending: 1500, Overdue: 4, Sweep: 4, Scan: 1500 + 2})); err != nil {
		t.Fatal(err)
	}
	wantTable := `| pending rows | overdue | sweep reads | scan reads | scan / sweep |
| ---: | ---: | ---: | ---: | ---: |
| 1,000 | 10 | 10 | 1,000 | 100 |
| 10,000 | 10 | 10 | 10,000 | 1,000 |
| 100,000 | 10 | 10 | 100,000 | 10,000 |
| 1,500 | 4 | 4 | 1,502 | 375.5 |
`
	if b.String() != wantTable {
		t.Errorf("Table wrote\n%s\nwant\n%s", b.String(), wantTable)
	}
}

func TestRunWritesAPNGAndTheTable(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "bench.txt"), filepath.Join(dir, "chart.png")
	if err := os.WriteFile(in, []byte(output), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := run([]string{"-in", in, "-out", out}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 560 {
		t.Errorf("the chart is %dx%d pixels, want 900x560", b.Dx(), b.Dy())
	}
	if !strings.Contains(stdout.String(), "| 100,000 | 10 | 10 | 100,000 | 10,000 |") {
		t.Errorf("the table lacks the 100,000 row:\n%s", stdout.String())
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "chart.png")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		err   string
	}{
		{"no -out", []string{"-in", "-"}, output, "-out is required"},
		{"a missing input file", []string{"-in", filepath.Join(dir, "absent.txt"), "-out", out}, "", "no such file"},
		{"input without results", []string{"-out", out}, "PASS\n", "no BenchmarkSweepItemsRead results"},
		{"stray arguments", []string{"-out", out, "extra"}, output, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, strings.NewReader(tc.stdin), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("run error = %v, want one containing %q", err, tc.err)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Errorf("a chart was written despite the error")
			}
		})
	}
}

func TestRenderRefusesWhatALogScaleCannotShow(t *testing.T) {
	for _, points := range [][]Point{nil, {{Pending: 10, Overdue: 1, Sweep: 0, Scan: 10}}} {
		var b bytes.Buffer
		if err := Render(&b, points); err == nil || b.Len() != 0 {
			t.Errorf("Render(%+v) = %v with %d bytes written, want an error and nothing written", points, err, b.Len())
		}
	}
}
