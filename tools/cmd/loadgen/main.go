// Loadgen puts load on the service, optionally with faults between it and DynamoDB,
// and reports what happened. By default it brings up its own local stack (its own
// emulator, payments timing out after 3 seconds, a sweep every second) on a free
// port, with package faultproxy between the functions and the emulator; --api runs
// against a stack that is already running instead.
//
// It runs --renters renters over --bikes bikes for --rentals rentals or --duration,
// waits until the stack is quiet (no rental requested, awaiting payment or ending, no bike
// requested), checks every rental's end state against its intent and prints a
// summary (--json for the report as JSON). Every request carries the token its route
// needs, from the stack's local token issuer (POST /local/tokens), so --api must be a
// local stack. Each renter runs one rental after another; after a rental it did not
// see approved, which may still count against the stack's MAX_PENDING_PER_RENTER, it
// goes on as a new renter (see package load). It exits with status 1 on any unclean
// failure, stuck rental or wrong end state, or when the stack gives no token, and 2
// on a usage error.
//
//	go run ./cmd/loadgen --rentals 200 --renters 8 --bikes 6
//	go run ./cmd/loadgen --rentals 200 --renters 8 --bikes 6 --faults 0.2
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/tools/faultproxy"
	"github.com/bikerental/bikerental/tools/load"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
	}
	os.Exit(code)
}

// output is what --json prints.
type output struct {
	Report     load.Report       `json:"report"`
	End        load.EndState     `json:"end"`
	Faults     *faultproxy.Stats `json:"faults,omitempty"`
	Violations []string          `json:"violations"`
	Audited    bool              `json:"audited"`
	SettleErr  string            `json:"settleError,omitempty"`
	StackErr   string            `json:"stackError,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg            load.Config
		mix            = fs.String("mix", "", "shares of intents, e.g. confirmed=0.5,rejected=0.2,never-paid=0.15,operator-cancelled=0.15 (default that)")
		faults         = fs.Float64("faults", 0, "share of the stack's AWS requests that get a fault, 0 to 1")
		kinds          = fs.String("fault-kinds", "all", "kinds of fault: all, or a list of "+fmt.Sprint(faultproxy.AllKinds()))
		scope          = fs.String("fault-scope", "dynamodb", "requests that may get a fault: dynamodb (the functions' DynamoDB calls) or all (also the local runner's stream reads and schedule look-ups)")
		spare          = fs.Bool("spare-last-attempt", false, "never fault the AWS SDK's last attempt of a request, so that every fault is one the SDK's retries overcome")
		seed           = fs.Int64("fault-seed", 1, "seed of the fault proxy's choices")
		paymentTimeout = fs.Duration("payment-timeout", 3*time.Second, "the stack's PAYMENT_TIMEOUT")
		sweepInterval  = fs.Duration("sweep-interval", time.Second, "how often the stack's sweep runs")
		settle         = fs.Duration("settle", 2*time.Minute, "how long to wait for the stack to be quiet after the load")
		api            = fs.String("api", "", "base URL of a running stack to load instead of starting one")
		secret         = fs.String("secret", local.DefaultWebhookSecret, "the webhook secret of the stack at --api")
		asJSON         = fs.Bool("json", false, "print the report as JSON")
		timeout        = fs.Duration("timeout", 30*time.Minute, "bound of the whole run, settling included")
	)
	fs.IntVar(&cfg.Rentals, "rentals", 200, "rentals to make (0: as many as --duration allows)")
	fs.IntVar(&cfg.Renters, "renters", 8, "concurrent renters")
	fs.IntVar(&cfg.Bikes, "bikes", 6, "bikes the renters share")
	fs.DurationVar(&cfg.Duration, "duration", 0, "how long to keep starting rentals (0: no limit)")
	fs.DurationVar(&cfg.Wait, "wait", 30*time.Second, "bound of each wait for an asynchronous step")
	fs.DurationVar(&cfg.Pause, "pause", 200*time.Millisecond, "about how long a renter waits after a 409 before trying another bike")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0, nil // the usage is printed
	} else if err != nil {
		return 2, nil
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: unexpected arguments %q\n", fs.Args())
		return 2, nil
	}
	ctx, cancelRun := context.WithTimeout(ctx, *timeout)
	defer cancelRun()
	if *mix != "" {
		m, err := load.ParseMix(*mix)
		if err != nil {
			return 2, err
		}
		cfg.Mix = m
	}
	faultCfg := faultproxy.Config{Rate: *faults, Seed: *seed, SpareFinalAttempt: *spare}
	var err error
	if faultCfg.Kinds, err = faultproxy.ParseKinds(*kinds); err != nil {
		return 2, err
	}
	switch *scope {
	case "dynamodb":
		faultCfg.Eligible = faultproxy.DynamoDBOnly
	case "all":
	default:
		return 2, fmt.Errorf("--fault-scope %q: want dynamodb or all", *scope)
	}

	var stack *load.Stack
	cfg.BaseURL, cfg.WebhookSecret = *api, []byte(*secret)
	if *api == "" {
		logFile, err := os.CreateTemp("", "bikerental-loadgen-*.log") // one per run: runs may overlap
		if err != nil {
			return 1, err
		}
		defer logFile.Close()
		logPath := logFile.Name()
		fmt.Fprintf(stderr, "Bringing up a local stack (faults on %.0f%% of its %s AWS requests; logs: %s)...\n", *faults*100, *scope, logPath)
		stack, err = load.StartStack(ctx, load.StackConfig{Faults: faultCfg, PaymentTimeout: *paymentTimeout,
			SweepInterval: *sweepInterval, Logger: slog.New(slog.NewTextHandler(logFile, nil))})
		if err != nil {
			return 1, err
		}
		defer stack.Close()
		cfg.BaseURL, cfg.WebhookSecret = stack.BaseURL, stack.WebhookSecret
		// A stack that stops by itself ends the run.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-stack.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	fmt.Fprintf(stderr, "Loading %s: %d renters, %d bikes, %d rentals, duration %v...\n", cfg.BaseURL, cfg.Renters, cfg.Bikes, cfg.Rentals, cfg.Duration)
	rep, err := load.Run(ctx, cfg)
	if errors.Is(err, load.ErrNoToken) {
		return 1, err
	}
	if err != nil && ctx.Err() == nil {
		return 2, err // an invalid configuration
	}
	out := output{Report: rep}
	if stopped := stackStopped(stack); stopped == nil {
		fmt.Fprintf(stderr, "Load done (%d requests); waiting for the stack to be quiet...\n", rep.Requests)
		out.End, err = load.Settle(ctx, cfg, rep, *settle)
		if err != nil {
			out.SettleErr = err.Error()
		}
	}
	out.Violations = load.Check(rep, out.End)
	if out.SettleErr != "" {
		out.Violations = append(out.Violations, out.SettleErr)
	}
	// Every run on its own stack ends with the auditor over the tables; any
	// violation fails the run. (A stack at --api is audited with rentalctl audit.)
	if stack != nil && stackStopped(stack) == nil {
		audited, err := stack.Audit(ctx, out.SettleErr == "")
		if err != nil {
			audited = []string{err.Error()}
		}
		out.Audited = true
		out.Violations = append(out.Violations, audited...)
	}
	if stopped := stackStopped(stack); stopped != nil {
		out.StackErr = stopped.Error()
		out.Violations = append([]string{out.StackErr}, out.Violations...)
	}
	if stack != nil {
		s := stack.Faults.Stats()
		out.Faults = &s
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	} else {
		rep.WriteSummary(stdout)
		out.End.WriteSummary(stdout)
		if out.Faults != nil {
			fmt.Fprintf(stdout, "AWS requests through the fault proxy: %v\n", *out.Faults)
			ops := slices.SortedFunc(maps.Keys(out.Faults.Operations), func(a, b string) int {
				return cmp.Or(cmp.Compare(out.Faults.Operations[b], out.Faults.Operations[a]), cmp.Compare(a, b))
			})
			for _, op := range ops {
				fmt.Fprintf(stdout, "  %-40s %7d\n", op, out.Faults.Operations[op])
			}
			if rep.Requests > 0 {
				fmt.Fprintf(stdout, "Event-store conflicts retried: %d, %.3f per API request\n",
					out.Faults.StoreConflicts(), float64(out.Faults.StoreConflicts())/float64(rep.Requests))
			}
		}
		if len(out.Violations) == 0 {
			fmt.Fprintln(stdout, "Every check held: no unclean failure, every rental ended as its intent says, the money of every late payment on its way back, no bike left requested.")
			if out.Audited {
				fmt.Fprintln(stdout, "The auditor found no violation in the tables.")
			}
		} else {
			fmt.Fprintf(stdout, "%d checks failed:\n", len(out.Violations))
			for _, v := range out.Violations {
				fmt.Fprintf(stdout, "  %s\n", v)
			}
		}
	}
	if len(out.Violations) > 0 {
		return 1, nil
	}
	return 0, ctx.Err()
}

// stackStopped returns why the stack stopped by itself, or nil if it runs (or there
// is none).
func stackStopped(stack *load.Stack) error {
	if stack == nil {
		return nil
	}
	select {
	case <-stack.Done():
		return fmt.Errorf("the local stack stopped during the run: %v", stack.Err())
	default:
		return nil
	}
}
