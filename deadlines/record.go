package deadlines

import (
	"errors"
	"time"
)

// A Record is one event as the deadlines read it, whatever its format where it is
// stored: a service gives a decoder from its own records to this one (for a
// DynamoDB stream, awslambda.Decoder), and every kind reads it.
type Record struct {
	// Stream names the event stream the record belongs to: an order, an invoice.
	Stream string
	// Position is the record's place in its stream, from 1: a later record of the
	// same stream has a larger one. Ordered kinds follow it.
	Position int64
	// Type is the event's type: "OrderPlaced".
	Type string
	// At is when the record was recorded. A row it opens falls due at At plus its
	// kind's After: due times come from records, never from a clock.
	At time.Time
	// Data is the event's body, in the service's own format.
	Data []byte
	// Source is the record as the service decoded it from where it is stored, in
	// its own type, for the service's own handlers of the same records (a stream
	// consumer beside the projector, awslambda.Stream); the deadlines never read it.
	Source any
}

// ErrCorruptRecord reports a record of a type a kind reads whose data does not
// decode: a Changes wraps it, and the projection refuses the record rather than
// guess.
var ErrCorruptRecord = errors.New("deadlines: corrupt record")
