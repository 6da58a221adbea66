// Unitreport measures the DynamoDB request units of one rental along each path, on
// its own local AWS emulator, and prints them with the cost per million rentals as
// markdown tables (make bench-units), and what the to-do list's alternative designs
// would write and read along the same paths. Progress goes to standard error.
//
//	go run ./tools/cmd/unitreport [-modes append,command] [-history 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/tools/deadlinecost"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

func main() {
	modes := flag.String("modes", "append,command", "RECORDING_MODE values to measure, comma-separated; the first is the main one")
	history := flag.Int("history", 5, "approved rentals on one bike before the history measurement (0 leaves it out)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, strings.Split(*modes, ","), *history); err != nil {
		fmt.Fprintln(os.Stderr, "unitreport:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, modes []string, history int) error {
	if history < 0 {
		return fmt.Errorf("-history %d: want 0 or more", history)
	}
	fmt.Fprintln(os.Stderr, "starting the local AWS emulator (moto_server)...")
	srv, err := emulator.Start(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg, err := srv.Config(ctx)
	if err != nil {
		return err
	}
	report := rentalcost.Report{Prices: rentalcost.USEast1, Assumptions: rentalcost.Assumed, HistoryPrior: history}
	for i, mode := range modes {
		mode = strings.TrimSpace(mode)
		opts := rentalcost.Options{EventsTable: "units-events-" + mode, DeadlinesTable: "units-pending-" + mode, RecordingMode: mode}
		bench, err := rentalcost.Start(ctx, cfg, opts)
		if err != nil {
			return err
		}
		runs := rentalcost.ModeRuns{Mode: mode}
		for _, path := range rentalcost.Paths() {
			start := time.Now()
			m, err := bench.Run(ctx, path)
			if err != nil {
				bench.Close()
				return fmt.Errorf("RECORDING_MODE=%s, %s: %w", mode, path, err)
			}
			fmt.Fprintf(os.Stderr, "RECORDING_MODE=%s  %-26s %d calls  (%s)\n", mode, path, len(m.Calls), time.Since(start).Round(time.Millisecond))
			runs.Runs = append(runs.Runs, m)
		}
		if i == 0 {
			report.DeadlinesTable = opts.DeadlinesTable
			if history > 0 {
				fmt.Fprintf(os.Stderr, "RECORDING_MODE=%s  an approved rental after %d on the same bike...\n", mode, history)
				m, err := bench.RunAfter(ctx, rentalcost.Approved, history)
				if err != nil {
					bench.Close()
					return fmt.Errorf("history: %w", err)
				}
				report.History = &m
			}
		}
		if err := bench.Close(); err != nil {
			return err
		}
		report.Modes = append(report.Modes, runs)
	}
	alternatives, err := measureAlternatives(ctx, cfg, report)
	if err != nil {
		return err
	}
	if err := report.Markdown(os.Stdout); err != nil {
		return err
	}
	return alternatives.Markdown(os.Stdout)
}

// measureAlternatives measures the to-do list's alternative designs on every path,
// beside the rentals measured through the service (docs/decisions/0029-what-a-deadline-costs-to-keep.md).
func measureAlternatives(ctx context.Context, cfg aws.Config, report rentalcost.Report) (deadlinecost.Report, error) {
	start := time.Now()
	designs := deadlinecost.Designs()
	bench, err := deadlinecost.Start(ctx, cfg, "units-alternatives", designs)
	if err != nil {
		return deadlinecost.Report{}, err
	}
	results, err := bench.Results(ctx, designs)
	if err != nil {
		return deadlinecost.Report{}, err
	}
	fmt.Fprintf(os.Stderr, "the to-do list's alternatives: %d designs, %d paths and their promises  (%s)\n", len(designs), len(rentalcost.Paths()), time.Since(start).Round(time.Millisecond))
	return deadlinecost.Report{
		Results: results, Rentals: report.Modes[0].Runs, DeadlinesTable: report.DeadlinesTable,
		Prices: report.Prices, Assumptions: report.Assumptions,
	}, nil
}
