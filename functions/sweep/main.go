// Sweep is the Lambda function EventBridge Scheduler invokes once per interval: it
// finds overdue payments through the to-do table index and sends
// CancelRentalPayment for each. "now" is the scheduled time in its input, never later
// than the clock.
//
// Environment: EVENTS_TABLE, DEADLINES_TABLE, DEADLINES_SHARDS, PAYMENT_TIMEOUT,
// RENTAL_PERIOD, SWEEP_CONCURRENCY, RECORDING_MODE; see internal/wiring.
package main

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

func main() { wiring.Run(sweepfn.SweepFunction) }
