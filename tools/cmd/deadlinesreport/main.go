// Command deadlinesreport turns the deadlines module's cost and sizing benchmarks
// (deadlines/dynamo's BenchmarkWhatADeadlineCosts, BenchmarkApplyOnMoto,
// BenchmarkSizing and BenchmarkSweepReads, as `go test -bench` text) into
// Markdown: what a deadline costs at AWS's prices (tools/rentalcost), beside one
// EventBridge Scheduler schedule or one Step Functions execution per deadline;
// the index's shard count for a peak of 10,000 deadlines opened and settled a
// second; the sweep's concurrency for 100,000 rows; and a chart of the sweep's
// reads by rows open and due, as a PNG. With the machine it runs on and the date.
//
//	go run ./tools/cmd/deadlinesreport -in deadlines/docs/bench-deadlines.txt \
//		-md deadlines/docs/costs.md -chart deadlines/docs/sweep-reads.png
//
// `make bench-deadlines` runs the benchmarks at their full sizes and then this.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "deadlinesreport:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("deadlinesreport", flag.ContinueOnError)
	in := fs.String("in", "-", "`file` of the benchmarks' output; - for standard input")
	md := fs.String("md", "", "`file` to write the Markdown report to (required)")
	chart := fs.String("chart", "", "`file` to write the PNG chart of the sweep's reads to (required); the report links it by its name")
	command := fs.String("command", "make bench-deadlines", "the `commands` that produced the input, quoted in the report")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *md == "" || *chart == "" {
		return errors.New("-md and -chart are required")
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
	res, err := Parse(r)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	figures, err := Read(res)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	var png, report bytes.Buffer
	if err := Chart(&png, figures.Sweeps); err != nil {
		return err
	}
	m := Machine{Command: *command, Date: time.Now(), CPUs: runtime.NumCPU(), MemoryGiB: memoryGiB(), GoVersion: runtime.Version()}
	if cpu := res.Env["cpu"]; cpu != "" {
		m.GoVersion += ", " + res.Env["goos"] + "/" + res.Env["goarch"] + ", " + cpu
	}
	if err := Report(&report, figures, m, filepath.Base(*chart)); err != nil {
		return err
	}
	if err := os.WriteFile(*chart, png.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(*md, report.Bytes(), 0o644)
}

// memoryGiB is the machine's memory from /proc/meminfo, or 0 where there is none.
func memoryGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kb / (1 << 20)
			}
		}
	}
	return 0
}
