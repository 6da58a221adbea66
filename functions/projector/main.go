// Projector is the Lambda function that maintains the Deadlines table from the
// Events table's stream, reporting failed records by sequence number, and with
// DEADLINE_MODE=precise the payments' one-time schedules.
//
// Environment: DEADLINES_TABLE, DEADLINES_SHARDS, SETTLED_MARKER_TTL, PAYMENT_TIMEOUT,
// RENTAL_PERIOD, STREAM_CONCURRENCY and the DEADLINE_* settings; see internal/wiring.
package main

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
)

func main() { wiring.Run(projectorfn.ProjectorFunction) }
