// Command projector is the Lambda function of the Orders table's stream: it keeps
// the Deadlines table, the orders' to-do list, from the events.
package main

import "github.com/bikerental/bikerental/examples/orders/deadline"

func main() { deadline.Main(func(h deadline.Handlers) any { return h.Projector }) }
