// Local runs the service on this machine with no AWS account and no Docker: it starts
// moto's server (unless AWS_ENDPOINT_URL points elsewhere), creates the tables, serves
// the HTTP API on 127.0.0.1:$PORT through the command function's handler, feeds the
// Events table's stream to the rental-payment process and to the projector as
// Lambda's event source mappings would (one poller each, with its own position), and
// runs the sweep every SWEEP_INTERVAL with the scheduled time as its input, as
// EventBridge Scheduler would. When it is up it prints the shell block that points
// rentalctl at its stack (every variable rentalctl reads, with the stack's value),
// and the functions' metrics go to stdout as they go to Lambda's, one Embedded
// Metric Format document a line. Ctrl-C stops everything it started.
//
// Environment: PORT (3000), EVENTS_TABLE (bikerental-events), PENDING_TABLE
// (bikerental-pending), PAYMENT_WEBHOOK_SECRET (a documented local default),
// PAYMENT_TIMEOUT (15m), SWEEP_INTERVAL (5s), RECORDING_MODE, RENTAL_PRICE_CENTS,
// RENTAL_CURRENCY, PENDING_SHARDS, DEADLINE_MODE (sweep, or precise: one-time schedules
// per payment, which this runner fires when due), LOG_FORMAT (text, or json),
// LOG_LEVEL (info, or debug: also the sweeps that found nothing; warn, error),
// AWS_ENDPOINT_URL.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bikerental/bikerental/internal/local"
	"github.com/bikerental/bikerental/internal/wiring"
)

// usage is what -h prints.
const usage = `Usage: %s

Runs the whole service on this machine (moto, the functions, the API on 127.0.0.1:$PORT, the stream pollers and the sweep) until Ctrl-C. Settings come from the environment: PORT, EVENTS_TABLE, PENDING_TABLE, PAYMENT_WEBHOOK_SECRET, PAYMENT_TIMEOUT, SWEEP_INTERVAL, RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY, PENDING_SHARDS, DEADLINE_MODE, LOG_FORMAT, LOG_LEVEL, AWS_ENDPOINT_URL (go doc ./cmd/local says more).
`

func main() {
	// No flags: -h or --help prints the usage and starts nothing.
	if code := local.NoFlags("go run ./cmd/local", usage, os.Args[1:], os.Stderr); code >= 0 {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

var defaults = map[string]string{
	"PORT":                  "3000",
	wiring.EnvEventsTable:   "bikerental-events",
	wiring.EnvPendingTable:  "bikerental-pending",
	wiring.EnvWebhookSecret: local.DefaultWebhookSecret,
	"SWEEP_INTERVAL":        "5s",
	"LOG_FORMAT":            "text",
}

func getenv(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return defaults[name]
}

func run(ctx context.Context) error {
	logger, err := local.NewLogger(getenv, os.Stdout)
	if err != nil {
		return err
	}
	interval, err := time.ParseDuration(getenv("SWEEP_INTERVAL"))
	if err != nil || interval <= 0 {
		return fmt.Errorf("SWEEP_INTERVAL=%q: want a positive duration such as 5s", getenv("SWEEP_INTERVAL"))
	}
	// Claim the port first, so that a taken port is reported before anything starts.
	listener, err := local.Listen("127.0.0.1:" + getenv("PORT"))
	if err != nil {
		return err
	}
	defer listener.Close()

	// The functions' metrics (EMF) go to stdout, one JSON line each, as on Lambda;
	// those of the sweeps that found nothing only at LOG_LEVEL=debug, as their logs.
	metrics := io.Writer(os.Stdout)
	if !logger.Enabled(ctx, slog.LevelDebug) {
		metrics = local.QuietMetrics(os.Stdout)
	}
	up, err := local.StartWith(ctx, local.Options{Getenv: getenv, SweepInterval: interval, Logger: logger, Progress: os.Stdout, Metrics: metrics})
	if err != nil {
		return err
	}
	defer up.Stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-up.Died():
			cancel(fmt.Errorf("the AWS emulator stopped unexpectedly: %s", up.Reason()))
		case <-ctx.Done():
		}
	}()
	fmt.Println("\nrentalctl against this stack: paste this into a shell, then run go run ./cmd/rentalctl -h")
	up.OperatorEnv(os.Stdout)
	fmt.Println()
	fmt.Printf("API: http://%s   sweep every %s, payment timeout %s   (Ctrl-C stops everything)\n",
		listener.Addr(), interval, orDefault(getenv(wiring.EnvPaymentTimeout), "15m"))
	err = up.Run(ctx, listener)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
