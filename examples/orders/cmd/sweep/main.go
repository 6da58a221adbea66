// Command sweep is the Lambda function EventBridge Scheduler invokes every minute:
// it cancels the orders left unconfirmed and reminds the invoices left unpaid.
package main

import "github.com/bikerental/bikerental/examples/orders/deadline"

func main() { deadline.Main(func(h deadline.Handlers) any { return h.Sweep }) }
