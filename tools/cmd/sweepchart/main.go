// Command sweepchart charts how many items the sweep reads against how many a
// scan-and-filter reads as the Deadlines table grows. It reads the output of
// tools/sweepscale's BenchmarkSweepItemsRead (`go test -bench` text), writes the
// chart as a PNG and prints the figures as a Markdown table:
//
//	go run ./cmd/sweepchart -in docs/sweep-scaling.txt -out docs/sweep-scaling.png
//
// `make bench-sweep-chart` runs the benchmark at 1,000, 10,000 and 100,000 pending
// rows and then this.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sweepchart:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("sweepchart", flag.ContinueOnError)
	in := fs.String("in", "-", "`file` of BenchmarkSweepItemsRead output; - for standard input")
	out := fs.String("out", "", "`file` to write the PNG chart to (required)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return errors.New("-out is required")
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
	points, err := Parse(r)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	var png bytes.Buffer
	if err := Render(&png, points); err != nil {
		return err
	}
	if err := os.WriteFile(*out, png.Bytes(), 0o644); err != nil {
		return err
	}
	return Table(stdout, points)
}
