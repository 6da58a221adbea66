package deadlinekinds

import (
	"fmt"
	"slices"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
)

// Redelivery is the name of the kind of the parked stream records' redeliveries.
const Redelivery = "redelivery"

// RedeliveryPrefix starts the key of a parked record's row; the rest is its
// subject (parked.Subject): the consumer, the version and the stream id.
const RedeliveryPrefix = "redeliver#"

// RedeliveryRetry is the backoff of a parked record whose redelivery fails again:
// sent again a minute later, then after waits that double up to five minutes.
var RedeliveryRetry = deadlines.Backoff{First: time.Minute, Max: 5 * time.Minute}

// RedeliveryKind is the redelivery of a parked stream record: a record a stream
// consumer could not handle when it came is parked (StreamRecordParked, package
// parked), which opens a row due at once, and its delivery again
// (StreamRecordRedelivered) settles it. Overdue, Redeliver delivers it and the
// stream's earlier parked records again, one row at a time, soonest due first; one
// that fails again is sent after RedeliveryRetry, its row due since it was parked.
// Its records are all in the consumer's parking stream of the record's stream
// (Ordered): a record parked again after it was redelivered opens the row again.
// A nil Redeliver sends nothing.
func RedeliveryKind(r Redeliverer) deadlines.Kind {
	send := deadlines.Send{OneAtATime: true, Retry: RedeliveryRetry}
	if r != nil {
		send.Command = r
	}
	return deadlines.Kind{Name: Redelivery, Prefix: RedeliveryPrefix, Changes: RedeliveryChanges{}, Valid: validParked, Work: send, Ordered: true}
}

// Redeliverer is the redelivery's command: parked.Redeliver.
type Redeliverer = deadlines.Command

// validParked reports whether s is a parked record's subject.
func validParked(s string) bool {
	_, ok := parked.OfSubject(s, knownConsumer)
	return ok
}

func knownConsumer(c string) bool { return slices.Contains(eventfilter.Consumers(), c) }

// RedeliveryChanges reads the redelivery's records: StreamRecordParked opens,
// StreamRecordRedelivered settles.
type RedeliveryChanges struct{}

// SettledRedelivered is how a parked record's row settles.
const SettledRedelivered = "redelivered"

// Change implements deadlines.Changes.
func (RedeliveryChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	c, ok, err := parked.ChangeOf(r.Type, r.Data)
	if err == nil && ok && !knownConsumer(c.Consumer) {
		err = fmt.Errorf("no consumer %q", c.Consumer)
	}
	if err != nil {
		return deadlines.Change{}, false, fmt.Errorf("%w: %s version %d: %w", deadlines.ErrCorruptRecord, r.Stream, r.Position, err)
	}
	if !ok {
		return deadlines.Change{}, false, nil
	}
	subject := parked.Subject(c.Consumer, c.StreamID, c.Version)
	if c.Redelivered {
		return deadlines.Change{Subject: subject, Settled: true, How: SettledRedelivered}, true, nil
	}
	return deadlines.Change{Subject: subject}, true, nil
}

// ParkedOf is the parked record of a row of the kind, due since it was parked.
func ParkedOf(row deadlines.Row) (parked.Record, bool) {
	p, ok := parked.OfSubject(row.Subject, knownConsumer)
	p.Due = row.Due
	return p, ok
}
