// Process is the rental-payment process Lambda function. It consumes the Events
// table's stream, handling the records of different rentals concurrently, and
// reports the earliest record to deliver again by sequence number.
//
// Environment: EVENTS_TABLE, RECORDING_MODE (append or command), RENTAL_PRICE_CENTS,
// RENTAL_CURRENCY, STREAM_CONCURRENCY, PAYMENT_PROVIDER and PAYMENT_PROVIDER_TIMEOUT;
// see internal/wiring.
package main

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/processfn"
)

func main() { wiring.Run(processfn.ProcessFunction) }
