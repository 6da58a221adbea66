package parked

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// appendTries is how many times a parking stream's append is tried when another
// writer appended to it meanwhile.
const appendTries = 3

// Parker parks the records one stream consumer could not handle: the Park hook of
// its stream batches (awslambda.Options.Park).
type Parker struct {
	Store    eventstore.Store
	Consumer string
	// NewID names each event appended (ident.UUID in the service).
	NewID func() string
	// Known reports whether a consumer is one of the Events table's stream's: a
	// record parked for another would be a parking stream's record the projector
	// refuses, and holds up its partition.
	Known func(consumer string) bool
}

// Park keeps r for delivery again to the parker's consumer: it appends
// StreamRecordParked to the consumer's parking stream of r's stream, unless r is
// parked there already. A record of a parking stream is never parked: it fails.
// Safe to call any number of times for the same record.
func (p *Parker) Park(ctx context.Context, r eventstore.Record) error {
	if IsParkingStream(r.StreamID) {
		return fmt.Errorf("parked: %s version %d is a parking stream's record: it is not parked itself", r.StreamID, r.Version)
	}
	if r.StreamID == "" || r.Version < 1 {
		return fmt.Errorf("parked: park: record %q version %d", r.StreamID, r.Version)
	}
	if p.Known == nil || !p.Known(p.Consumer) {
		return fmt.Errorf("parked: park %s version %d: unknown consumer %q", r.StreamID, r.Version, p.Consumer)
	}
	e := StreamRecordParked{Consumer: p.Consumer, StreamID: r.StreamID, Version: r.Version}
	return appendOnce(ctx, p.Store, StreamOf(p.Consumer, r.StreamID), p.NewID, e, func(parked []int64) bool {
		return !slices.Contains(parked, r.Version) // parked already: nothing to append
	})
}

// appendOnce appends e to stream if want, given what the stream leaves parked,
// says so, reading the stream again and retrying when another writer appended
// meanwhile.
func appendOnce(ctx context.Context, store eventstore.Store, stream string, newID func() string, e interface{ EventType() string }, want func(parked []int64) bool) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	for try := 1; ; try++ {
		records, err := store.Read(ctx, stream, 0)
		if err != nil {
			return fmt.Errorf("parked: read %s: %w", stream, err)
		}
		parked, err := outstanding(records)
		if err != nil || !want(parked) {
			return err
		}
		last := int64(0)
		if len(records) > 0 {
			last = records[len(records)-1].Version
		}
		_, err = store.Append(ctx, stream, last, eventstore.Event{ID: newID(), Type: e.EventType(), Data: data})
		if !errors.Is(err, eventstore.ErrConcurrency) || try == appendTries {
			if err != nil {
				return fmt.Errorf("parked: append %s to %s: %w", e.EventType(), stream, err)
			}
			return nil
		}
	}
}

// Redeliverer delivers one stored record again to one stream consumer's handler;
// *repair.Repairer is one. It returns when the record was recorded.
type Redeliverer interface {
	Redeliver(ctx context.Context, consumer, streamID string, version int64) (recordedAt time.Time, err error)
}

// Redeliver is the redelivery kind's command: it delivers a parked record again,
// and before it every record of the same stream parked for the same consumer with
// an earlier version, in version order, so that the stream's order is kept among
// what is parked; each one delivered is recorded (StreamRecordRedelivered), which
// settles its row. One that fails again stops it, and the sweep sends the row again
// after its backoff. A record no longer parked is nothing to do.
type Redeliver struct {
	Store       eventstore.Store
	Redeliverer Redeliverer
	NewID       func() string
	// Known reports whether a consumer is one of the Events table's stream's.
	Known func(consumer string) bool
}

// Send implements deadlines.Command for the row of the parked record subject names
// (Subject).
func (c Redeliver) Send(ctx context.Context, row deadlines.Row, _ string) (deadlines.Outcome, error) {
	rec, ok := OfSubject(row.Subject, c.Known)
	if !ok {
		return "", fmt.Errorf("parked: %q is no parked record's subject", row.Subject)
	}
	stream := StreamOf(rec.Consumer, rec.StreamID)
	records, err := c.Store.Read(ctx, stream, 0)
	if err != nil {
		return "", fmt.Errorf("parked: read %s: %w", stream, err)
	}
	parked, err := outstanding(records)
	if err != nil {
		return "", err
	}
	if !slices.Contains(parked, rec.Version) {
		return deadlines.NothingToDo, nil // redelivered meanwhile: its record settles the row
	}
	for _, v := range parked {
		if v > rec.Version {
			break
		}
		if _, err := c.Redeliverer.Redeliver(ctx, rec.Consumer, rec.StreamID, v); err != nil {
			return "", fmt.Errorf("parked: %s version %d for %s: %w", rec.StreamID, v, rec.Consumer, err)
		}
		e := StreamRecordRedelivered{Consumer: rec.Consumer, StreamID: rec.StreamID, Version: v}
		if err := appendOnce(ctx, c.Store, stream, c.NewID, e, func(parked []int64) bool { return slices.Contains(parked, v) }); err != nil {
			return "", err
		}
	}
	return deadlines.Acted, nil
}
