// Command rentalctl is the operator's tool for the bike rental service, against the
// local stack or AWS by configuration alone: history prints a rental's audit trail,
// pending lists outstanding payments, cancel sends CancelRentalPayment, sweep runs
// the sweep (or shows what it would do), audit checks every invariant of the event
// store and the projection, and rebuild rebuilds the Deadlines projection while
// the sweep's schedule is paused. Run `rentalctl -h` for usage. It exits 0 on
// success, 1 on failure and 2 for a bad command line or configuration.
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
	os.Exit(exitStatus(err))
}

// exitStatus is the exit status for what run returned: 0 for success, 2 for a bad
// command line or configuration, 1 for any other failure.
func exitStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}
