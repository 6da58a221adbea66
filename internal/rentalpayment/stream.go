// Package rentalpayment is the rental-payment process: it asks the payment side for
// money when a bike is requested, approves or rejects the request when the payment
// settles, and gives up when asked to. It keeps its state as its own events, in one
// stream per rental.
package rentalpayment

// StreamID returns the id of the process's stream for a rental.
func StreamID(rentalID string) string { return "rentalpayment-" + rentalID }

// The types of the process's own events.
const (
	TypeRequested = "RentalPaymentRequested"
	TypeCompleted = "RentalPaymentProcessCompleted"
)
