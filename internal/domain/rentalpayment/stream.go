// Package rentalpayment is the rental-payment process's decider: its own events (the
// payment requested, the process completed), one stream per rental, the state they
// fold to, and the decisions to record them (Decide, Evolve, Fold), pure. Package
// process runs it: it reacts to the bike's and the payment's events and records
// through this decider.
package rentalpayment

import (
	"errors"
	"fmt"

	"github.com/bikerental/bikerental/internal/domain/eventtype"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// StreamPrefix begins the id of every process stream.
const StreamPrefix = "rentalpayment-"

// StreamID returns the id of the process's stream for a rental.
func StreamID(rentalID string) string { return StreamPrefix + rentalID }

// The types of the process's own events, as stored.
const (
	TypeRequested = "RentalPaymentRequested"
	TypeCompleted = "RentalPaymentProcessCompleted"
)

// RentalPaymentRequested records that the process asked for the rental's payment: it
// is written only after PreparePayment succeeded.
type RentalPaymentRequested struct {
	RentalID string `json:"rentalId"`
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// BikeVersion is the version of the BikeRequested the process started from,
	// where bikestream finds the rental's records on its bike; absent from processes
	// that started before it was recorded.
	BikeVersion int64 `json:"bikeVersion,omitempty"`
}

// RentalPaymentProcessCompleted records the process's end: it is written only after
// the rental side was told ApproveRequest or RejectRequest.
type RentalPaymentProcessCompleted struct {
	RentalID string     `json:"rentalId"`
	Outcome  Completion `json:"outcome"`
}

// Completion is how a process ended.
type Completion string

// The ways a process ends.
const (
	CompletedApproved  Completion = "approved"  // the payment was confirmed
	CompletedRejected  Completion = "rejected"  // the payment was rejected
	CompletedCancelled Completion = "cancelled" // the payment was called off
)

// Status is where a process stands.
type Status string

// Process statuses.
const (
	StatusNotStarted Status = "not-started"
	StatusRequested  Status = "requested"
	StatusCompleted  Status = "completed"
)

// State is the process's state, read back from its own events only.
type State struct {
	Status   Status
	RentalID string
	BikeID   string
	Renter   string
	Amount   int64
	Currency string
	Outcome  Completion
}

// Started reports whether the process has asked for the payment (and may have ended).
func (s State) Started() bool { return s.Status == StatusRequested || s.Status == StatusCompleted }

// ErrUnknownEventType reports an event type the process does not write.
var ErrUnknownEventType = eventtype.ErrUnknown

// Event is one of the process's own events. EventType returns its stored type.
type Event interface{ EventType() string }

// EventType returns TypeRequested.
func (RentalPaymentRequested) EventType() string { return TypeRequested }

// EventType returns TypeCompleted.
func (RentalPaymentProcessCompleted) EventType() string { return TypeCompleted }

// Starts reports whether an event of eventType starts a process: it asked for the
// rental's payment (RentalPaymentRequested).
func Starts(eventType string) bool { return eventType == TypeRequested }

// Ends reports whether an event of eventType ends a process
// (RentalPaymentProcessCompleted).
func Ends(eventType string) bool { return eventType == TypeCompleted }

// RentalOf returns the rental an event of the process belongs to, "" for one it
// does not know.
func RentalOf(e Event) string {
	switch e := e.(type) {
	case RentalPaymentRequested:
		return e.RentalID
	case RentalPaymentProcessCompleted:
		return e.RentalID
	}
	return ""
}

// CompletionFor returns how the process ends after a payment settles with an event
// of settlementType (payment.Settles): approved on a confirmation, rejected or
// cancelled on those; false for an event that settles nothing.
func CompletionFor(settlementType string) (Completion, bool) {
	switch settlementType {
	case payment.PaymentConfirmed{}.EventType():
		return CompletedApproved, true
	case payment.PaymentRejected{}.EventType():
		return CompletedRejected, true
	case payment.PaymentCancelled{}.EventType():
		return CompletedCancelled, true
	}
	return "", false
}

// events declares the process's own events: their names, structs and decoder.
var events = eventtype.Declare[Event]("rentalpayment",
	eventtype.Of[RentalPaymentRequested](),
	eventtype.Of[RentalPaymentProcessCompleted](),
)

// EventTypes returns the type of every event of the process, in a new slice.
func EventTypes() []string { return events.Types() }

// DecodeEvent decodes stored JSON data into the event named by eventType. Unknown
// JSON fields are ignored; an unknown type is an error wrapping ErrUnknownEventType.
func DecodeEvent(eventType string, data []byte) (Event, error) { return events.Decode(eventType, data) }

// Fold applies events in order to a process that has not started.
func Fold(events []Event) State {
	s := State{Status: StatusNotStarted}
	for _, e := range events {
		s = Evolve(s, e)
	}
	return s
}

// Evolve returns the state after event e. It is pure. A second start, or a second
// completion, changes nothing: the first one counts.
func Evolve(s State, e Event) State {
	switch e := e.(type) {
	case RentalPaymentRequested:
		if !s.Started() {
			s = State{Status: StatusRequested, RentalID: e.RentalID, BikeID: e.BikeID, Renter: e.Renter, Amount: e.Amount, Currency: e.Currency}
		}
	case RentalPaymentProcessCompleted:
		if s.Status != StatusCompleted {
			s.Status, s.Outcome = StatusCompleted, e.Outcome
		}
	}
	return s
}

// ErrProcessNotStarted reports an event that implies the process exists (a payment
// settled) arriving before the process recorded RentalPaymentRequested. Its stream
// record must fail and be retried until the state appears; it is never dropped.
var ErrProcessNotStarted = errors.New("rentalpayment: process not started yet")

// Command is a request to record one of the process's events. Only this package's
// command structs implement it.
type Command interface{ isCommand() }

// RecordPaymentRequested is the command that records RentalPaymentRequested.
type RecordPaymentRequested struct{ RentalPaymentRequested }

// RecordProcessCompleted is the command that records RentalPaymentProcessCompleted.
type RecordProcessCompleted struct{ RentalPaymentProcessCompleted }

func (RecordPaymentRequested) isCommand() {}
func (RecordProcessCompleted) isCommand() {}

// Decide returns what recording command c appends to a process in state s. Both
// commands are idempotent: recording the start of a started process, or the end of
// an ended one, appends nothing. Ending a process that has not started is
// ErrProcessNotStarted.
func Decide(s State, c Command) ([]Event, error) {
	switch c := c.(type) {
	case RecordPaymentRequested:
		if s.Started() {
			return nil, nil
		}
		return []Event{c.RentalPaymentRequested}, nil
	case RecordProcessCompleted:
		switch s.Status {
		case StatusCompleted:
			return nil, nil
		case StatusRequested:
			return []Event{c.RentalPaymentProcessCompleted}, nil
		}
		return nil, fmt.Errorf("%w: rental %s", ErrProcessNotStarted, c.RentalID)
	}
	return nil, fmt.Errorf("rentalpayment: unknown command %T", c)
}
