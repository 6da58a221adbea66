// Local runs the service on this machine with no AWS account and no Docker: it starts
// moto's server (unless AWS_ENDPOINT_URL points elsewhere), creates the tables, serves
// the HTTP API on 127.0.0.1:$PORT through the command function's handler, feeds the
// Events table's stream to the rental-payment process and to the projector as
// Lambda's event source mappings would (one poller each, with its own position), and
// runs the sweep every SWEEP_INTERVAL with the scheduled time as its input, as
// EventBridge Scheduler would. In front of the API it plays API Gateway's JWT
// authorizer and the per-route throttling template.yaml declares (429 over a
// route's rate or burst). When it is up it prints the shell block that points
// rentalctl at its stack (every variable rentalctl reads, with the stack's value),
// and the operator console's address (/console, signing in through the runner's own
// issuer), and the functions' metrics go to stdout as they go to Lambda's, one
// Embedded Metric Format document a line. Ctrl-C (or SIGTERM) stops everything it
// started and ends it with status 0; a refused setting, or a stack that cannot start
// or fails, ends it with status 1 and one line on stderr that names the problem (a
// setting in its one form, wiring.SettingError).
//
// Environment: PORT (3000), EVENTS_TABLE (bikerental-events), DEADLINES_TABLE
// (bikerental-deadlines), PAYMENT_WEBHOOK_SECRET (a documented local default),
// PAYMENT_TIMEOUT (15m), RENTAL_PERIOD (2h), SWEEP_INTERVAL (5s), RECORDING_MODE,
// RENTAL_PRICE_CENTS, RENTAL_CURRENCY, DEADLINES_SHARDS, DEADLINE_MODE (sweep, or precise: one-time schedules
// per payment, which this runner fires when due), CONSOLE_SIGN_IN (local: the
// console's "sign in (local)"; oidc with CONSOLE_ISSUER and CONSOLE_CLIENT_ID for a
// real provider), LOG_FORMAT (text, or json),
// LOG_LEVEL (info, or debug: also the sweeps that found nothing; warn, error),
// AWS_ENDPOINT_URL, and every other setting of the functions (PAYMENT_PROVIDER,
// MAX_PENDING_PER_RENTER, OPERATOR_SCOPE, STUCK_GRACE, ...). Every setting is checked
// before anything starts, and a bad one is refused with its name.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
)

// usage is what -h prints.
const usage = `Usage: %s

Runs the whole service on this machine (moto, the functions, the API on 127.0.0.1:$PORT, the stream pollers and the sweep) until Ctrl-C. Settings come from the environment: PORT, EVENTS_TABLE, DEADLINES_TABLE, PAYMENT_WEBHOOK_SECRET, PAYMENT_TIMEOUT, RENTAL_PERIOD, SWEEP_INTERVAL, RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY, DEADLINES_SHARDS, DEADLINE_MODE, CONSOLE_SIGN_IN, LOG_FORMAT, LOG_LEVEL, AWS_ENDPOINT_URL (go doc ./cmd/local says more).
`

func main() {
	// No flags: -h or --help prints the usage and starts nothing.
	if code := local.NoFlags("go run ./cmd/local", usage, os.Args[1:], os.Stderr); code >= 0 {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, withDefaults(os.Getenv), local.StartWith); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", explain(err))
		os.Exit(1)
	}
}

// explain is what the user is told of err: a refused setting as it is (the one
// form of wiring.SettingError), without the chain of the parts that read it.
func explain(err error) string {
	if se, ok := wiring.Refused(err); ok {
		return se.Error()
	}
	return err.Error()
}

var defaults = map[string]string{
	"PORT":                   "3000",
	wiring.EnvEventsTable:    "bikerental-events",
	wiring.EnvDeadlinesTable: "bikerental-deadlines",
	wiring.EnvWebhookSecret:  local.DefaultWebhookSecret,
	"SWEEP_INTERVAL":         "5s",
	"LOG_FORMAT":             "text",
}

// withDefaults returns getenv with the runner's defaults for what it leaves empty.
func withDefaults(getenv wiring.Getenv) wiring.Getenv {
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return defaults[name]
	}
}

// settings are the runner's own settings.
type settings struct {
	port     string
	interval time.Duration
	logger   *slog.Logger
}

// parseSettings reads and checks every setting, the runner's own (PORT,
// SWEEP_INTERVAL, LOG_FORMAT, LOG_LEVEL) and the functions' (local.CheckSettings),
// touching nothing: a bad one is refused, by name, before anything starts.
func parseSettings(getenv wiring.Getenv) (settings, error) {
	var set settings
	if n, err := strconv.Atoi(getenv("PORT")); err != nil || n < 0 || n > 65535 {
		return set, wiring.BadSetting("PORT", getenv("PORT"), "a port number from 0 to 65535")
	}
	set.port = getenv("PORT")
	interval, err := wiring.Duration(getenv, "SWEEP_INTERVAL", 5*time.Second)
	if err != nil {
		return set, err
	}
	set.interval = interval
	if set.logger, err = local.NewLogger(getenv, os.Stdout); err != nil {
		return set, err
	}
	return set, local.CheckSettings(getenv)
}

// startFunc brings the local stack up: local.StartWith, or a test's stand-in.
type startFunc func(ctx context.Context, o local.Options) (*local.Up, error)

func run(ctx context.Context, getenv wiring.Getenv, start startFunc) error {
	set, err := parseSettings(getenv)
	if err != nil {
		return err
	}
	logger := set.logger
	// Claim the port first, so that a taken port is reported before anything starts.
	listener, err := local.Listen("127.0.0.1:" + set.port)
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
	up, err := start(ctx, local.Options{Getenv: getenv, SweepInterval: set.interval, Logger: logger, Progress: os.Stdout, Metrics: metrics, Throttle: true, Edge: true})
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
		listener.Addr(), set.interval, orDefault(getenv(wiring.EnvPaymentTimeout), "15m"))
	fmt.Printf("Operator console: %s   (sign in (local) mints an operator token)\n", local.ConsoleURL("http://"+listener.Addr().String()))
	err = up.Run(ctx, listener)
	if cause := context.Cause(ctx); cause != nil {
		if !errors.Is(cause, context.Canceled) {
			return cause
		}
		// A stop was asked for (Ctrl-C, SIGTERM): what the stack was doing when it
		// came, such as a stream poller still describing its table, ends with the
		// context's error, which is the stop itself and no failure.
		return nil
	}
	return err
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
