// Process is the rental-payment process Lambda function. It consumes the Events
// table's stream and reports failed records by sequence number, so that Lambda
// retries from the first one that failed.
//
// Environment: EVENTS_TABLE, RECORDING_MODE (append or command), RENTAL_PRICE_CENTS,
// RENTAL_CURRENCY; see internal/wiring.
package main

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

func main() { wiring.Run(paymentfn.ProcessFunction) }
