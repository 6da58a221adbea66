// Startupbench measures the Lambda functions' start-up, in one run: each function's
// stripped binary size for arm64 and amd64 (built as make build builds them) and its
// cold start under the AWS Lambda Runtime Interface Emulator, next to a minimal
// aws-lambda-go function (internal/startup/hello) built the same way. It prints a
// markdown table of the sizes and, as median (p90) with the ratio of medians to
// hello's, of the init phase (the emulator's INIT REPORT), of the CPU time the
// bootstrap used until its first response, of the first invocation (init and one
// event) and of the time from starting the emulator to the first response; then the
// package inits of each (GODEBUG=inittrace=1) and the slowest of them.
//
// It starts its own moto server and creates the tables, so that every function's
// first invocation does its real work: the command function answers an unknown route
// (404, no AWS call), the stream functions an empty batch, and the sweep sweeps the
// empty to-do table index (queries to moto).
//
// Usage: go run ./cmd/startupbench [-n 20] [-inittrace 5] [-rie bin/aws-lambda-rie]
// [-env KEY=VALUE]... (make bench-startup). Cold starts are interleaved, function
// after function, so that a busy machine slows them all alike; the CPU column is the
// least sensitive to other load.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
	"github.com/bikerental/bikerental/tools/startup"
)

// function is one binary to measure and its first event.
type function struct {
	name, pkg string
	event     string
	check     func([]byte) error
}

// pkgOf returns the main's package of a service function, from the one table.
func pkgOf(name string) string {
	for _, f := range lambdas.All() {
		if f.Name == name {
			return f.Package
		}
	}
	return "" // not reached: the table names every function; the build would say so
}

var functions = []function{
	{name: "hello", pkg: "./tools/startup/hello", event: `{}`, check: func(b []byte) error {
		if string(b) != `"hello"` {
			return errors.New(`want "hello"`)
		}
		return nil
	}},
	{name: lambdas.Command, pkg: pkgOf(lambdas.Command),
		event: `{"version":"2.0","routeKey":"$default","rawPath":"/startup","headers":{},"requestContext":{"http":{"method":"GET","path":"/startup"},"requestId":"startup"}}`,
		check: func(b []byte) error {
			var resp struct {
				StatusCode int `json:"statusCode"`
			}
			if err := json.Unmarshal(b, &resp); err != nil || resp.StatusCode != 404 {
				return fmt.Errorf("want an API response with status 404 (err %v)", err)
			}
			return nil
		}},
	{name: lambdas.Process, pkg: pkgOf(lambdas.Process), event: `{"Records":[]}`, check: noFailures},
	{name: lambdas.Projector, pkg: pkgOf(lambdas.Projector), event: `{"Records":[]}`, check: noFailures},
	{name: lambdas.Sweep, pkg: pkgOf(lambdas.Sweep), event: `{"scheduledTime":"2026-01-01T00:00:00Z"}`, check: func(b []byte) error {
		var s awslambda.Summary
		if err := json.Unmarshal(b, &s); err != nil || s.Now.IsZero() {
			return fmt.Errorf("want a sweep summary (err %v)", err)
		}
		return nil
	}},
}

func noFailures(b []byte) error {
	var resp map[string]json.RawMessage
	var failures []json.RawMessage
	err := json.Unmarshal(b, &resp)
	if raw, ok := resp["batchItemFailures"]; err == nil && ok {
		err = json.Unmarshal(raw, &failures)
	} else if err == nil {
		err = errors.New("no batchItemFailures")
	}
	if err != nil || len(failures) != 0 {
		return fmt.Errorf("want a batch response with no failures (err %v)", err)
	}
	return nil
}

// arches are the architectures whose sizes are reported; the one of this machine
// is also run.
var arches = []string{"arm64", "amd64"}

type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, " ") }
func (e *envFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("%q: want KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "startupbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	runs := flag.Int("n", 20, "cold starts of each function")
	rie := flag.String("rie", os.Getenv("RIE"), "the aws-lambda-rie executable (default $RIE, else bin/aws-lambda-rie)")
	traces := flag.Int("inittrace", 5, "cold starts of each with GODEBUG=inittrace=1 before the measured ones, for the package inits column (the median's)")
	var extra envFlags
	flag.Var(&extra, "env", "KEY=VALUE added to every function's environment (repeatable)")
	flag.Parse()
	if *runs < 1 {
		return errors.New("-n must be at least 1")
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the emulator runs on Linux only, not %s", runtime.GOOS)
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	if *rie == "" {
		*rie = filepath.Join(root, "bin", "aws-lambda-rie")
	}
	if *rie, err = filepath.Abs(*rie); err != nil {
		return err
	}
	if _, err := os.Stat(*rie); err != nil {
		return fmt.Errorf("the Runtime Interface Emulator: %w (make rie installs it)", err)
	}

	dir, err := os.MkdirTemp("", "startupbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	results := make([]startup.Result, len(functions))
	runDirs := make([]string, len(functions))
	for i, f := range functions {
		results[i] = startup.Result{Function: f.name, Sizes: map[string]int64{}}
		for _, arch := range arches {
			out := filepath.Join(dir, arch, f.name, "bootstrap")
			if results[i].Sizes[arch], err = startup.Build(ctx, root, f.pkg, arch, out); err != nil {
				return err
			}
			if arch == runtime.GOARCH {
				runDirs[i] = filepath.Dir(out)
			}
		}
		if runDirs[i] == "" {
			if _, err := startup.Build(ctx, root, f.pkg, runtime.GOARCH, filepath.Join(dir, runtime.GOARCH, f.name, "bootstrap")); err != nil {
				return err
			}
			runDirs[i] = filepath.Join(dir, runtime.GOARCH, f.name)
		}
	}
	fmt.Fprintf(os.Stderr, "built %d functions for %s\n", len(functions), strings.Join(arches, " and "))

	server, err := emulator.Start(ctx)
	if err != nil {
		return err
	}
	defer server.Stop()
	cfg, err := server.Config(ctx)
	if err != nil {
		return err
	}
	const eventsTable, deadlinesTable = "startup-events", "startup-pending"
	if err := local.CreateTables(ctx, cfg, eventsTable, deadlinesTable); err != nil {
		return err
	}
	env := append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"AWS_REGION=" + emulator.Region, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=test",
		"AWS_ENDPOINT_URL=" + server.Endpoint,
		wiring.EnvEventsTable + "=" + eventsTable, wiring.EnvDeadlinesTable + "=" + deadlinesTable,
		wiring.EnvWebhookSecret + "=" + local.DefaultWebhookSecret,
	}, extra...)
	runner := &startup.Runner{RIE: *rie, Env: env}

	coldStart := func(i int, r *startup.Runner) (startup.Sample, error) {
		s, err := r.ColdStart(ctx, runDirs[i], []byte(functions[i].event), functions[i].check)
		if err != nil {
			return s, fmt.Errorf("%s: %w", functions[i].name, err)
		}
		return s, nil
	}
	// Cold starts of each first, unmeasured, so that every binary is in the page
	// cache; with -inittrace they are traced.
	traced := &startup.Runner{RIE: *rie, Env: append(env[:len(env):len(env)], "GODEBUG=inittrace=1")}
	for i := range functions {
		if *traces < 1 {
			if _, err := coldStart(i, runner); err != nil {
				return err
			}
			continue
		}
		var ts []startup.InitTrace
		for range *traces {
			s, err := coldStart(i, traced)
			if err != nil {
				return err
			}
			ts = append(ts, startup.ParseInitTrace(s.FunctionOutput))
		}
		slices.SortFunc(ts, func(a, b startup.InitTrace) int { return cmp.Compare(a.Clock, b.Clock) })
		results[i].Trace = ts[len(ts)/2]
	}
	began := time.Now()
	for n := range *runs {
		for k := range functions {
			i := (n + k) % len(functions) // each round starts with the next function
			s, err := coldStart(i, runner)
			if err != nil {
				return err
			}
			results[i].Samples = append(results[i].Samples, s)
		}
	}

	fmt.Printf("Start-up, %d cold starts each under aws-lambda-rie on %s/%s (%d CPUs), %s, in %s.\n\n",
		*runs, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Since(began).Round(time.Second))
	if err := startup.Markdown(os.Stdout, results, "hello", arches); err != nil {
		return err
	}
	fmt.Println("\nEach timing is median (p90) in ms; ÷ hello is the ratio of medians. " +
		"Sizes: stripped linux binaries, CGO_ENABLED=0 go build " + strings.Join(startup.BuildFlags, " ") + ", MB = 10^6 bytes. " +
		"Init: the emulator's INIT REPORT, from starting the bootstrap to its first request for an event. " +
		"CPU: the bootstrap's time on a CPU (all threads) from its start to the first response; CPU wait: its time ready to run but waiting for a CPU. " +
		"First invoke: from sending the first event to its response (init and the event). " +
		"Start → response: from starting the emulator's process to the first response.")
	if *traces > 0 {
		fmt.Printf("\nSlowest package inits (GODEBUG=inittrace=1, the median of %d cold starts):\n", *traces)
		for _, r := range results {
			var top []string
			for _, p := range r.Trace.Packages[:min(3, len(r.Trace.Packages))] {
				top = append(top, fmt.Sprintf("%s %.2f ms", p.Package, float64(p.Clock)/float64(time.Millisecond)))
			}
			fmt.Printf("- %s: %d packages, %.2f ms, %d KB allocated; %s\n", r.Function, len(r.Trace.Packages),
				float64(r.Trace.Clock)/float64(time.Millisecond), r.Trace.Bytes/1000, strings.Join(top, ", "))
		}
	}
	return nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run it inside the module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}
