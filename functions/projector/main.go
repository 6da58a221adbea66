// Projector is the Lambda function that maintains the PendingPayments table from the
// Events table's stream, reporting failed records by sequence number.
//
// Environment: EVENTS_TABLE, PENDING_TABLE, PENDING_SHARDS, SETTLED_MARKER_TTL; see
// internal/wiring.
package main

import "github.com/bikerental/bikerental/internal/wiring"

func main() { wiring.Run(wiring.ProjectorFunction) }
