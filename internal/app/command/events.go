package command

import "github.com/bikerental/bikerental/internal/domain/eventtype"

// The events the command side records of its own, beside the deciders': a provider
// event's receipt, and what a mismatched one leaves in its stream. Declared once,
// like each decider's, so that every reader decodes them through DecodeEvent.
var events = eventtype.Declare[Event]("command",
	eventtype.Of[ProviderEventReceived](),
	eventtype.Of[ProviderEventMismatched](),
	eventtype.Of[MismatchRefundRequested](),
	eventtype.Of[MismatchRefundOwed](),
)

// EventTypes returns the type of every event the command side records of its own,
// in a new slice.
func EventTypes() []string { return events.Types() }

// DecodeEvent decodes stored JSON into the command side's event that eventType
// names; an unknown type is an error wrapping eventtype.ErrUnknown.
func DecodeEvent(eventType string, data []byte) (Event, error) { return events.Decode(eventType, data) }
