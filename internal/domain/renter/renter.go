// Package renter is the decider for renters: one event stream per renter records each
// bike request the renter made, so that a renter can list their own rentals and can
// never hold more than a configured number of bikes awaiting payment at once.
// Decide and Evolve are pure; what the bikes say of earlier rentals is passed in.
package renter

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bikerental/bikerental/internal/domain/eventtype"
	"github.com/bikerental/bikerental/internal/domain/ident"
)

// Sentinel errors returned by Decide.
var (
	// ErrInvalidCommand wraps every refusal of a malformed command.
	ErrInvalidCommand = errors.New("invalid renter command")
	// ErrTooManyPendingRequests is returned by OpenRequest while the renter already
	// has the maximum number of outstanding requests (requested or awaiting payment).
	ErrTooManyPendingRequests = errors.New("renter already has the most outstanding requests allowed")
	// ErrUnknownEventType is returned, wrapped with the type name, by DecodeEvent for a
	// type this package does not write.
	ErrUnknownEventType = eventtype.ErrUnknown
)

// DefaultMaxPending is how many outstanding requests a renter may have when nothing
// else is configured.
const DefaultMaxPending = 1

// StreamID returns the event stream id of a renter: "renter-" + renter.
func StreamID(renter string) string { return "renter-" + renter }

// Event is a fact in a renter's stream; EventType is the stored type name.
type Event interface{ EventType() string }

// RentalRequested records that the renter asked for a bike under a rental id.
// Outstanding lists the renter's other rentals that were still outstanding when it
// was decided: with the rental itself, they are all that can still be outstanding
// later, which is what keeps the next decision to the stream's last event.
type RentalRequested struct {
	Renter      string   `json:"renter"`
	RentalID    string   `json:"rentalId"`
	BikeID      string   `json:"bikeId"`
	Outstanding []string `json:"outstanding,omitempty"`
}

// EventType returns "RentalRequested".
func (RentalRequested) EventType() string { return "RentalRequested" }

// events declares the renter's events: their names, structs and decoder.
var events = eventtype.Declare[Event]("renter", eventtype.Of[RentalRequested]())

// EventTypes returns the type name of every event of this package, in a new slice.
func EventTypes() []string { return events.Types() }

// DecodeEvent decodes stored JSON data into the event named by eventType; an
// unknown eventType yields an error wrapping ErrUnknownEventType.
func DecodeEvent(eventType string, data []byte) (Event, error) { return events.Decode(eventType, data) }

// State is what a decision needs of a renter's stream: the rentals that may still be
// outstanding. It is the state after the stream's last event, so loading it never
// needs more than that event.
type State struct {
	// Candidates are the renter's rentals that were not known to be settled when the
	// last request was decided, that request included, oldest first.
	Candidates []string
}

// Evolve returns the state after event e. A RentalRequested replaces the candidates
// with the ones it names, because its decision already knew everything before it.
func Evolve(s State, e Event) State {
	if e, ok := e.(RentalRequested); ok {
		return State{Candidates: append(slices.Clone(e.Outstanding), e.RentalID)}
	}
	return s
}

// Fold applies events in order to the empty state.
func Fold(events []Event) State {
	var s State
	for _, e := range events {
		s = Evolve(s, e)
	}
	return s
}

// OpenRequest asks to count a new bike request against the renter's limit.
// Settled names the candidates (State.Candidates) that their bikes say are settled
// (approved, rejected or returned): the caller reads them, the decider only counts.
type OpenRequest struct {
	Renter     string
	RentalID   string
	BikeID     string
	MaxPending int
	Settled    []string
}

// Decide returns the events OpenRequest produces for renter state s, or
// ErrTooManyPendingRequests when MaxPending candidates are still outstanding. A
// request for a rental already among the candidates is a repeat and yields nothing.
func Decide(s State, c OpenRequest) ([]Event, error) {
	switch {
	case !ident.Valid(c.Renter):
		return nil, fmt.Errorf("renter: %w: renter %q must match %s", ErrInvalidCommand, c.Renter, ident.Pattern)
	case !ident.Valid(c.RentalID) || !ident.Valid(c.BikeID):
		return nil, fmt.Errorf("renter: %w: rental and bike ids must match %s", ErrInvalidCommand, ident.Pattern)
	case c.MaxPending < 1:
		return nil, fmt.Errorf("renter: %w: MaxPending %d must be at least 1", ErrInvalidCommand, c.MaxPending)
	}
	if slices.Contains(s.Candidates, c.RentalID) {
		return nil, nil
	}
	var outstanding []string
	for _, id := range s.Candidates {
		if !slices.Contains(c.Settled, id) {
			outstanding = append(outstanding, id)
		}
	}
	if len(outstanding) >= c.MaxPending {
		return nil, fmt.Errorf("%w (%d of %d)", ErrTooManyPendingRequests, len(outstanding), c.MaxPending)
	}
	return []Event{RentalRequested{Renter: c.Renter, RentalID: c.RentalID, BikeID: c.BikeID, Outstanding: outstanding}}, nil
}
