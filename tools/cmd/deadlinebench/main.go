// Deadlinebench measures how promptly the service gives up on payments that never
// arrive, on a local stack it brings up itself (moto's server, the tables, the four
// functions in this process). Behind `make bench-deadline`.
//
//	deadlinebench lateness [flags]   how late after its deadline each payment is cancelled
//	deadlinebench sweep [flags]      how long one sweep takes to call off many due payments
//
// lateness requests --rentals bikes over the local HTTP API, spread over --spread,
// never pays, waits until every payment is cancelled, and reads from the event store,
// for each payment, PaymentCancelled's recorded time minus (PaymentPrepared's recorded
// time plus PAYMENT_TIMEOUT). --mode sets DEADLINE_MODE for the stack ("sweep", or
// "precise": one one-time schedule per payment).
//
// sweep seeds --payments rentals whose payments all fall due at the same instant, as
// real histories (bike registered and requested, process started, payment prepared,
// one to-do table row each), and runs one sweep past their deadline per
// --concurrency value (SWEEP_CONCURRENCY), each over fresh tables, reporting its wall
// time, what it did, the calls it sent to the emulator and the CPU both sides used.
// After each sweep it replays the same calls for --replay-payments of its payments
// with raw SDK calls, on the same table at the same concurrency: the emulator's floor
// for that work. --cpuprofile writes a CPU profile of the sweep at
// --profile-concurrency only (read it with go tool pprof -top). Last it times trivial
// GetItem calls.
//
// The rest of the environment is passed on to the stack (AWS_ENDPOINT_URL,
// RECORDING_MODE, DEADLINES_SHARDS, ...); flags override it. Exit status 1 when a
// measurement fails (a payment not cancelled in time, a sweep that missed some), 2 on
// a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/tools/deadlinebench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deadlinebench:", err)
	}
	os.Exit(code)
}

const usage = `usage: deadlinebench lateness [flags]   how late after its deadline each payment is cancelled
       deadlinebench sweep [flags]      how long one sweep takes to call off many due payments
Run deadlinebench <command> -h for the flags of each.
`

// errUsage reports a usage error whose explanation was already printed.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2, nil
	}
	var err error
	switch args[0] {
	case "lateness":
		err = lateness(ctx, args[1:], stdout, stderr)
	case "sweep":
		err = sweep(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0, nil
	default:
		fmt.Fprintf(stderr, "deadlinebench: unknown command %q\n%s", args[0], usage)
		return 2, nil
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, nil
	case errors.Is(err, errUsage):
		return 2, nil
	case err != nil:
		var bad usageError
		if errors.As(err, &bad) {
			return 2, err
		}
		return 1, err
	}
	return 0, nil
}

// usageError is a flag value the program refuses.
type usageError struct{ error }

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

func logger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func lateness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadlinebench lateness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: deadlinebench lateness [flags]

Brings up a local stack, requests bikes over its HTTP API, never pays, waits until
every payment is cancelled and prints how late after its deadline each was cancelled
(PaymentCancelled's recorded time minus PaymentPrepared's plus the timeout, read from
the event store): median, p90, p99 and max.

`)
		fs.PrintDefaults()
	}
	modeDefault := os.Getenv(wiring.EnvDeadlineMode)
	if modeDefault == "" {
		modeDefault = wiring.ModeSweep
	}
	var cfg deadlinebench.LatenessConfig
	fs.IntVar(&cfg.Rentals, "rentals", 100, "rentals to request, none ever paid")
	fs.DurationVar(&cfg.Spread, "spread", 10*time.Second, "time over which the requests are spread evenly")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "the stack's PAYMENT_TIMEOUT")
	fs.DurationVar(&cfg.Interval, "interval", 5*time.Second, "how often the local runner runs the sweep")
	fs.StringVar(&cfg.Mode, "mode", modeDefault, `the stack's DEADLINE_MODE: "sweep" or "precise" (default $DEADLINE_MODE, else sweep)`)
	fs.DurationVar(&cfg.Wait, "wait", 0, "bound of the wait for every payment to be cancelled after the last request (0: timeout + 3 intervals + 1m)")
	verbose := fs.Bool("v", false, "log the stack's info lines (each sweep, each stream batch) to stderr, not only warnings and errors")
	if err := parse(fs, args); err != nil {
		return err
	}
	if cfg.Mode != wiring.ModeSweep && cfg.Mode != wiring.ModePrecise {
		return usageError{fmt.Errorf("--mode %q: want %s or %s", cfg.Mode, wiring.ModeSweep, wiring.ModePrecise)}
	}
	cfg.Getenv, cfg.Logger, cfg.Progress = os.Getenv, logger(stderr, *verbose), stderr
	rep, err := deadlinebench.Lateness(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Deadline lateness, mode %s: %d payments, PAYMENT_TIMEOUT %s, sweep interval %s, requests spread over %s\n",
		rep.Mode, rep.Rentals, rep.Timeout, rep.Interval, rep.Spread)
	fmt.Fprintln(stdout, "deadline = PaymentPrepared's recorded time + PAYMENT_TIMEOUT; lateness = PaymentCancelled's recorded time - deadline;")
	fmt.Fprintln(stdout, "bike released = the process's RentalPaymentProcessCompleted recorded time - deadline; all times from the event store")
	fmt.Fprintf(stdout, "%-36s %5s %8s %8s %8s %8s %8s %8s\n", "after the deadline", "n", "min", "median", "p90", "p99", "max", "mean")
	for _, row := range []struct {
		what string
		d    deadlinebench.Distribution
	}{{"payment cancelled (lateness)", rep.Lateness}, {"process completed (bike released)", rep.Released}} {
		d := row.d
		fmt.Fprintf(stdout, "%-36s %5d %8s %8s %8s %8s %8s %8s\n", row.what, d.N, secs(d.Min), secs(d.Median), secs(d.P90), secs(d.P99), secs(d.Max), secs(d.Mean))
	}
	return nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func sweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadlinebench sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: deadlinebench sweep [flags]

Seeds payments that all fall due at the same instant, as real rental histories, and
runs one sweep past their deadline per concurrency, each over fresh tables; prints
each sweep's wall time, what it did, the calls it sent to the emulator, the CPU used
on both sides, and the emulator's floor for the same calls replayed without our code.

`)
		fs.PrintDefaults()
	}
	var cfg deadlinebench.SweepConfig
	concurrency := fs.String("concurrency", "1,4,8,16,32", "SWEEP_CONCURRENCY values, comma-separated: one seeded sweep each")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the sweep at --profile-concurrency only to this file")
	fs.IntVar(&cfg.Payments, "payments", 1000, "outstanding payments that fall due together")
	fs.IntVar(&cfg.ProfileConcurrency, "profile-concurrency", deadlines.DefaultConcurrency, "the concurrency whose (first) sweep --cpuprofile profiles")
	fs.IntVar(&cfg.CeilingCalls, "ceiling-calls", 1000, "trivial GetItem calls that measure the emulator's ceiling, at concurrency 1 and each --concurrency (0: none)")
	fs.IntVar(&cfg.ReplayPayments, "replay-payments", 100, "payments of each sweep whose calls are then replayed without our code, on the same table at the same concurrency (0: none)")
	fs.IntVar(&cfg.Repeat, "repeat", 1, "times to go through the --concurrency values, round robin")
	fs.DurationVar(&cfg.Timeout, "timeout", deadlinekinds.DefaultTimeout, "the sweep's PAYMENT_TIMEOUT (the payments were prepared that long before the sweep's now)")
	fs.DurationVar(&cfg.Budget, "budget", 30*time.Minute, "bound of one sweep, as the Lambda function's timeout (the sweep stops starting work 3s before it)")
	verbose := fs.Bool("v", false, "log info lines (each sweep's summary) to stderr, not only warnings and errors")
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, f := range strings.Split(*concurrency, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return usageError{fmt.Errorf("--concurrency %q: want positive whole numbers, comma-separated", *concurrency)}
		}
		cfg.Concurrencies = append(cfg.Concurrencies, n)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Profile = f
	}
	cfg.Getenv, cfg.Logger, cfg.Progress = os.Getenv, logger(stderr, *verbose), stderr
	rep, err := deadlinebench.Sweep(ctx, cfg)
	printSweep(stdout, rep, cfg)
	if err == nil && *profile != "" {
		fmt.Fprintf(stdout, "\nCPU profile of the sweep at concurrency %d: %s (go tool pprof -top %s)\n", cfg.ProfileConcurrency, *profile, *profile)
	}
	return err
}

func printSweep(w io.Writer, rep deadlinebench.SweepReport, cfg deadlinebench.SweepConfig) {
	if len(rep.Runs) == 0 {
		return
	}
	fmt.Fprintf(w, "One sweep over %d payments due together (PAYMENT_TIMEOUT %s), fresh tables each\n", rep.Payments, cfg.Timeout)
	fmt.Fprintf(w, "%11s %9s %10s %6s %9s %6s %6s %6s %8s %9s %7s %7s %10s  %s\n", "concurrency", "wall", "payments/s", "found",
		"cancelled", "failed", "read", "calls", "ms/call", "in flight", "Go CPU", "emu CPU", "replay", "calls by operation")
	for _, r := range rep.Runs {
		s, _ := r.Summary.Kind(deadlinekinds.Payment)
		goCPU, emuCPU := "n/a", "n/a"
		if r.CPUMeasured {
			goCPU, emuCPU = pct(r.OwnCPU, r.Wall, 0), pct(r.EmulatorCPU, r.Wall, 0)
		}
		replay := "-"
		if r.Replay != nil {
			replay = fmt.Sprintf("%.1f", ms(r.Replay.Wall)/float64(r.Replay.Calls))
		}
		fmt.Fprintf(w, "%11d %9s %10.1f %6d %9d %6d %6d %6d %8.1f %9s %7s %7s %10s  %s\n",
			r.Concurrency, secs(r.Wall), float64(s.Acted)/r.Wall.Seconds(), s.Found, s.Acted, s.Failed, s.ItemsRead,
			r.TotalCalls, ms(r.Wall)/float64(max(r.TotalCalls, 1)), pct(r.InFlight, r.Wall, 1), goCPU, emuCPU, replay,
			deadlinebench.FormatCalls(r.Calls))
	}
	fmt.Fprintf(w, `in flight: share of the wall time during which at least one of the sweep's requests was waiting for its
  answer; the emulator lets one request at a time in, so the rest is time it had nothing of the sweep's to do.
Go CPU: this process (sweep, AWS SDK, and the in-process proxy in front of moto); emu CPU: moto's server.
replay: ms/call of the same calls (Query, Query, Query, PutItem per payment) for %d of the sweep's payments, replayed
  right after it with raw SDK calls, on the same table at the same concurrency: the emulator's floor.
`, cfg.ReplayPayments)
	if len(rep.Ceilings) == 0 {
		return
	}
	fmt.Fprintf(w, "\nTrivial calls, through the same proxy, on the last sweep's table\n")
	fmt.Fprintf(w, "%-10s %11s %6s %9s %8s %8s\n", "calls", "concurrency", "n", "wall", "calls/s", "ms/call")
	for _, c := range rep.Ceilings {
		fmt.Fprintf(w, "%-10s %11d %6d %9s %8.0f %8.1f\n", c.What, c.Concurrency, c.Calls, secs(c.Wall),
			float64(c.Calls)/c.Wall.Seconds(), ms(c.Wall)/float64(c.Calls))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(part, whole time.Duration, decimals int) string {
	if whole <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.*f%%", decimals, 100*part.Seconds()/whole.Seconds())
}
