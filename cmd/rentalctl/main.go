// Command rentalctl is the operator's tool for the bike rental service:
// rebuild-pending rebuilds the PendingPayments projection from the Events table while
// the sweep's schedule is paused, and audit checks every invariant of the event store
// and the projection. Run `rentalctl -h` for usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "rentalctl:", err)
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	os.Exit(1)
}
