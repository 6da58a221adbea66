// Command is the command Lambda function: the service's HTTP API behind API Gateway.
//
// Environment: EVENTS_TABLE, and PAYMENT_WEBHOOK_SECRET_ID (a Secrets Manager secret)
// or PAYMENT_WEBHOOK_SECRET; see internal/wiring.
package main

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
)

func main() { wiring.Run(commandfn.CommandFunction) }
