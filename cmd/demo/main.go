// Demo tells the service's story against a running stack: renters and an operator
// sign in (bearer tokens from the local stack's POST /local/tokens); bikes are
// registered; a request without a token is refused; a bike is requested, kept from
// other renters' eyes, paid through a signed webhook and approved, while its renter's
// second request is refused; a second renter's payment never arrives and the sweep
// calls it off; an operator's late cancel changes nothing; a third renter's payment
// succeeds after the sweep gave up on it, and the money goes back while the rental
// stays cancelled; the audit trails are printed.
//
// By default it brings up its own local stack (its own emulator, PAYMENT_TIMEOUT=5s,
// a sweep every second) on a free port, so that the story takes seconds and never
// touches the stack of `make run`. The rest of the environment is passed on to that
// stack: PAYMENT_PROVIDER=stripe makes it take payments through Stripe (stripe-mock,
// started beside the emulator unless STRIPE_API_URL names a Stripe API; `make
// stripe-mock` installs it), and the demo then plays Stripe, signing its events with
// STRIPE_WEBHOOK_SECRET (a documented local default). DEMO_API=http://127.0.0.1:3000
// runs it against a local stack that is already running instead (start that one
// with a short PAYMENT_TIMEOUT; PAYMENT_PROVIDER and PAYMENT_WEBHOOK_SECRET or
// STRIPE_WEBHOOK_SECRET must match it, and MAX_PENDING_PER_RENTER must be 1, the
// default). The demo needs the local stack's token issuer, so it cannot run against
// a deployed API.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bikerental/bikerental/internal/dev/demo"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// usage is what -h prints.
const usage = `Usage: %s

Tells the service's story against a local stack it starts (or DEMO_API's). Settings come from the environment; see the package documentation (go doc ./cmd/demo).
`

func main() {
	// No flags: -h or --help prints the usage and starts nothing.
	if code := local.NoFlags("go run ./cmd/demo", usage, os.Args[1:], os.Stderr); code >= 0 {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "make demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// The demo's settings, over the environment, which is passed on to the stack.
	settings := map[string]string{
		wiring.EnvEventsTable:    "demo-events",
		wiring.EnvDeadlinesTable: "demo-pending",
		wiring.EnvWebhookSecret:  local.DefaultWebhookSecret,
		wiring.EnvPaymentTimeout: "5s",
	}
	for _, k := range []string{wiring.EnvWebhookSecret, paymentfn.EnvStripeWebhookSecret} {
		if v := os.Getenv(k); v != "" {
			settings[k] = v
		}
	}
	provider := os.Getenv(paymentfn.EnvProvider)
	if provider == paymentfn.Stripe && settings[paymentfn.EnvStripeWebhookSecret] == "" {
		settings[paymentfn.EnvStripeWebhookSecret] = local.DefaultStripeWebhookSecret
	}
	getenv := func(k string) string {
		if v, ok := settings[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	cfg := demo.Config{WebhookSecret: []byte(settings[wiring.EnvWebhookSecret]), Provider: provider,
		StripeWebhookSecret: []byte(settings[paymentfn.EnvStripeWebhookSecret]), Out: os.Stdout, Wait: 2 * time.Minute}
	if api := os.Getenv("DEMO_API"); api != "" {
		cfg.BaseURL = api
		return demo.Run(ctx, cfg)
	}

	logFile, err := createLog("")
	if err != nil {
		return err
	}
	defer logFile.Close()
	logPath := logFile.Name()
	listener, err := local.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer listener.Close()
	fmt.Printf("Bringing up a local stack for the demo (its logs: %s)...\n", logPath)
	// Its metrics go to the log too, but for the sweeps that found nothing, whose
	// lines are debug lines.
	up, err := local.StartWith(ctx, local.Options{Getenv: getenv, SweepInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(logFile, nil)), Progress: logFile, Metrics: local.QuietMetrics(logFile)})
	if err != nil {
		return err
	}
	defer up.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stackDone := make(chan error, 1)
	go func() { stackDone <- up.Run(ctx, listener) }()
	cfg.BaseURL = "http://" + listener.Addr().String()
	fmt.Printf("The API is at %s; payments time out after %s; the sweep runs every second.\n\n", cfg.BaseURL, getenv(wiring.EnvPaymentTimeout))
	err = demo.Run(ctx, cfg)
	cancel()
	<-stackDone
	return err
}

// createLog creates the stack's log file in dir (the temporary directory if empty),
// under a name of its own, so that demos run at the same time keep their own logs.
func createLog(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "bikerental-demo-*.log")
	if err != nil {
		return nil, fmt.Errorf("create the demo's log: %w", err)
	}
	return f, nil
}
