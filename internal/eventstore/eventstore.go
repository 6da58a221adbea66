// Package eventstore is the service's append-only log of events, one stream per
// aggregate or process. Its contract is small: append to a stream at the version the
// writer last read, and read a stream back in version order. Implementations are the
// DynamoDB adapter (package dynamo) and Memory, for fast unit tests of domain code.
package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Store appends events to streams and reads them back.
type Store interface {
	// Append writes events to the end of streamID, giving them the versions
	// expectedVersion+1, expectedVersion+2, ... expectedVersion is the version of the
	// last event the caller read (0 for a stream it found empty). Either every event is
	// written or none is. If another writer has already taken one of those versions,
	// Append writes nothing and returns an error matching ErrConcurrency. Invalid input
	// is rejected with an error matching ErrInvalidInput before anything is sent.
	// Append returns the stored records, with RecordedAt filled in where it was zero.
	//
	// expectedVersion must come from a read: the store guarantees that no version is
	// ever written twice, not that a version invented by the caller leaves no gap.
	Append(ctx context.Context, streamID string, expectedVersion int64, events ...Event) ([]Record, error)

	// Read returns the records of streamID whose version is fromVersion or later, in
	// version order; fromVersion 0 or 1 reads the whole stream. An unknown stream reads
	// as empty, without error.
	Read(ctx context.Context, streamID string, fromVersion int64) ([]Record, error)
}

// StreamAppend is one stream's part of an AppendStreams call: events to write to the
// end of StreamID at ExpectedVersion, as in Store.Append.
type StreamAppend struct {
	StreamID        string
	ExpectedVersion int64
	Events          []Event
}

// MultiStreamStore is a Store that can append to several streams at once. Both stores
// of this service implement it; callers discover it with a type assertion.
type MultiStreamStore interface {
	Store

	// AppendStreams writes the events of every StreamAppend to its stream, each at its
	// expected version as Append would, all or nothing: if another writer has already
	// taken any of those versions in any stream, nothing is written and the error
	// matches ErrConcurrency. It is a *ConflictError naming the first conflicting
	// stream, in the order given, and that stream's expected version, when the store
	// can tell which stream it was (both of this service's stores can); otherwise it
	// names the first stream.
	//
	// The appends are checked by ValidateAppendStreams before anything is sent: each
	// by the rules of Append, and together they carry at most MaxEventsPerAppend events
	// and MaxAppendBytes, name distinct streams (ErrDuplicateStream) and use every
	// event id once. Invalid input is rejected with an error matching ErrInvalidInput.
	//
	// AppendStreams returns the stored records of every stream, the streams in the
	// order given and each stream's in version order, with RecordedAt filled in where
	// it was zero.
	AppendStreams(ctx context.Context, appends ...StreamAppend) ([]Record, error)
}

// BackwardReader is implemented by stores that can read a stream newest first, a page
// at a time. Both stores of this service implement it; callers discover it with a
// type assertion on their Store.
type BackwardReader interface {
	// ReadBackward returns at most limit records of streamID whose version is below
	// beforeVersion, newest first; beforeVersion 0 reads from the newest record. To
	// page backwards, pass the version of the last (oldest) record of one page as
	// beforeVersion of the next; a page shorter than limit, or empty, is the last.
	// An unknown stream reads as empty, without error. limit must be 1 to
	// MaxReadBackwardLimit (else ErrInvalidLimit) and beforeVersion not negative (else
	// ErrInvalidVersion); both match ErrInvalidInput and nothing is read.
	ReadBackward(ctx context.Context, streamID string, beforeVersion int64, limit int) ([]Record, error)
}

// Event is what a writer appends: everything a Record holds except the stream id and
// version, which the store assigns.
type Event struct {
	// ID identifies the event uniquely across all streams (a UUID, say). Required.
	ID string
	// Type names the event's schema, e.g. "BikeRequested". Required.
	Type string
	// Data is the event's payload, a JSON document. Required.
	Data json.RawMessage
	// Tags let readers find events across streams, e.g. "rental:<rentalId>".
	Tags []string
	// RecordedAt is when the event happened. If zero, the store stamps it with its
	// own clock at append time.
	RecordedAt time.Time
	// CorrelationID ties together every event of one business flow.
	CorrelationID string
	// CausationID is the id of the event or command that caused this one.
	CausationID string
}

// Record is an event as stored: an Event plus its place in its stream.
type Record struct {
	StreamID string
	Version  int64
	Event
}

// Limits on what one Append, or one AppendStreams in all, may carry. They follow
// DynamoDB's: one transaction holds at most 100 items and 4 MB, and one item at most
// 400 KB (409,600 bytes). The item limit keeps a margin under DynamoDB's for
// estimation error, which also keeps it under the emulator's (moto refuses items over
// 405,000 bytes). MaxReadBackwardLimit bounds one ReadBackward page.
const (
	MaxStreamIDBytes       = 256
	MaxEventsPerAppend     = 100
	MaxEventTypeBytes      = 128
	MaxEventIDBytes        = 128
	MaxTagBytes            = 256
	MaxRecordBytes         = 400_000
	MaxAppendBytes         = 4 * 1024 * 1024
	MaxReadBackwardLimit   = 1000
	maxCorrelationIDBytes  = 256
	MaxCausationIDBytes    = 256
	recordOverheadEstimate = 256 // attribute names and number encodings, rounded up
)

// ErrConcurrency reports that another writer appended to the stream after the caller
// read it: the caller must read again and decide again. Nothing was written.
var ErrConcurrency = errors.New("eventstore: concurrency conflict: the stream changed since it was read")

// ErrInvalidInput is matched by every error that rejects an Append, AppendStreams,
// Read or ReadBackward for its input. Nothing was sent to the database and nothing
// was written.
var ErrInvalidInput = errors.New("eventstore: invalid input")

// Input errors, each matching ErrInvalidInput as well as itself.
var (
	ErrInvalidStreamID = fmt.Errorf("%w: invalid stream id", ErrInvalidInput)
	ErrInvalidVersion  = fmt.Errorf("%w: invalid version", ErrInvalidInput)
	ErrNoEvents        = fmt.Errorf("%w: no events to append", ErrInvalidInput)
	ErrTooManyEvents   = fmt.Errorf("%w: too many events in one append", ErrInvalidInput)
	ErrRecordTooLarge  = fmt.Errorf("%w: event too large", ErrInvalidInput)
	ErrAppendTooLarge  = fmt.Errorf("%w: append too large", ErrInvalidInput)
	ErrInvalidPayload  = fmt.Errorf("%w: payload is not valid JSON", ErrInvalidInput)
	ErrInvalidEvent    = fmt.Errorf("%w: invalid event", ErrInvalidInput)
	ErrDuplicateStream = fmt.Errorf("%w: the same stream twice in one append", ErrInvalidInput)
	ErrInvalidLimit    = fmt.Errorf("%w: invalid limit", ErrInvalidInput)
)

// ErrCorruptRecord reports a stored item that cannot be read back as a Record.
var ErrCorruptRecord = errors.New("eventstore: stored record is corrupt")

// ConflictError is returned by Append and AppendStreams when expected versions were
// taken by another writer. It matches ErrConcurrency.
type ConflictError struct {
	StreamID        string
	ExpectedVersion int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("eventstore: concurrency conflict on stream %q: version %d is no longer the last", e.StreamID, e.ExpectedVersion)
}

// Unwrap makes a ConflictError match ErrConcurrency.
func (e *ConflictError) Unwrap() error { return ErrConcurrency }

// ValidateStreamID reports whether id can name a stream: 1 to MaxStreamIDBytes bytes
// of valid UTF-8. The error matches ErrInvalidStreamID.
func ValidateStreamID(id string) error {
	if err := checkText(id, MaxStreamIDBytes); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidStreamID, err)
	}
	return nil
}

// ValidateRead checks the arguments of a Read. Implementations call it first.
func ValidateRead(streamID string, fromVersion int64) error {
	if err := ValidateStreamID(streamID); err != nil {
		return err
	}
	if fromVersion < 0 {
		return fmt.Errorf("%w: fromVersion %d is negative", ErrInvalidVersion, fromVersion)
	}
	return nil
}

// ValidateReadBackward checks the arguments of a ReadBackward. Implementations call
// it first.
func ValidateReadBackward(streamID string, beforeVersion int64, limit int) error {
	if err := ValidateStreamID(streamID); err != nil {
		return err
	}
	if beforeVersion < 0 {
		return fmt.Errorf("%w: beforeVersion %d is negative", ErrInvalidVersion, beforeVersion)
	}
	if limit < 1 || limit > MaxReadBackwardLimit {
		return fmt.Errorf("%w: limit %d, want 1 to %d", ErrInvalidLimit, limit, MaxReadBackwardLimit)
	}
	return nil
}

// ValidateAppend checks the arguments of an Append against the limits above, with
// sizeOf estimating the stored size of each record in bytes. Implementations call it
// before sending anything, so that bad input changes nothing.
func ValidateAppend(streamID string, expectedVersion int64, events []Event, sizeOf func(Record) int) error {
	if err := validateStream(streamID, expectedVersion); err != nil {
		return err
	}
	if len(events) > MaxEventsPerAppend {
		return fmt.Errorf("%w: %d events, at most %d in one append", ErrTooManyEvents, len(events), MaxEventsPerAppend)
	}
	total, err := validateEvents(streamID, expectedVersion, events, sizeOf, make(map[string]bool, len(events)))
	if err != nil {
		return err
	}
	if total > MaxAppendBytes {
		return fmt.Errorf("%w: %d bytes in one append, at most %d", ErrAppendTooLarge, total, MaxAppendBytes)
	}
	return nil
}

// ValidateAppendStreams checks the arguments of an AppendStreams: at least one
// StreamAppend; each by the rules of ValidateAppend; distinct stream ids
// (ErrDuplicateStream); every event id used once across all of them
// (ErrInvalidEvent); and in all at most MaxEventsPerAppend events (ErrTooManyEvents)
// and MaxAppendBytes as estimated by sizeOf (ErrAppendTooLarge), the limits of one
// DynamoDB transaction. Implementations call it before sending anything, so that bad
// input changes nothing.
func ValidateAppendStreams(appends []StreamAppend, sizeOf func(Record) int) error {
	if len(appends) == 0 {
		return fmt.Errorf("%w: no streams given", ErrNoEvents)
	}
	streams := make(map[string]bool, len(appends))
	count := 0
	for i, a := range appends {
		if err := validateStream(a.StreamID, a.ExpectedVersion); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
		if streams[a.StreamID] {
			return fmt.Errorf("append %d: %w: stream %q", i, ErrDuplicateStream, a.StreamID)
		}
		streams[a.StreamID] = true
		count += len(a.Events)
	}
	if count > MaxEventsPerAppend {
		return fmt.Errorf("%w: %d events in %d streams, at most %d in one append", ErrTooManyEvents, count, len(appends), MaxEventsPerAppend)
	}
	seen := make(map[string]bool, count)
	total := 0
	for i, a := range appends {
		size, err := validateEvents(a.StreamID, a.ExpectedVersion, a.Events, sizeOf, seen)
		if err != nil {
			return fmt.Errorf("append %d (stream %q): %w", i, a.StreamID, err)
		}
		total += size
	}
	if total > MaxAppendBytes {
		return fmt.Errorf("%w: %d bytes in %d streams, at most %d in one append", ErrAppendTooLarge, total, len(appends), MaxAppendBytes)
	}
	return nil
}

func validateStream(streamID string, expectedVersion int64) error {
	if err := ValidateStreamID(streamID); err != nil {
		return err
	}
	if expectedVersion < 0 {
		return fmt.Errorf("%w: expected version %d is negative", ErrInvalidVersion, expectedVersion)
	}
	return nil
}

// validateEvents checks the events of one stream's part of an append, at least one,
// which must not reuse an id in seen, to which it adds theirs. It returns their
// estimated stored size.
func validateEvents(streamID string, expectedVersion int64, events []Event, sizeOf func(Record) int, seen map[string]bool) (int, error) {
	if len(events) == 0 {
		return 0, ErrNoEvents
	}
	total := 0
	for i, e := range events {
		if err := validateEvent(e); err != nil {
			return 0, fmt.Errorf("event %d: %w", i, err)
		}
		if seen[e.ID] {
			return 0, fmt.Errorf("event %d: %w: id %q appears twice in one append", i, ErrInvalidEvent, e.ID)
		}
		seen[e.ID] = true
		size := sizeOf(Record{StreamID: streamID, Version: expectedVersion + int64(i) + 1, Event: e})
		if size > MaxRecordBytes {
			return 0, fmt.Errorf("event %d (%s): %w: %d bytes stored, at most %d", i, e.Type, ErrRecordTooLarge, size, MaxRecordBytes)
		}
		total += size
	}
	return total, nil
}

func validateEvent(e Event) error {
	fields := []struct {
		name, value string
		max         int
	}{
		{"id", e.ID, MaxEventIDBytes},
		{"type", e.Type, MaxEventTypeBytes},
	}
	for _, f := range fields {
		if err := checkText(f.value, f.max); err != nil {
			return fmt.Errorf("%w: %s %s", ErrInvalidEvent, f.name, err)
		}
	}
	optional := []struct {
		name, value string
		max         int
	}{
		{"correlation id", e.CorrelationID, maxCorrelationIDBytes},
		{"causation id", e.CausationID, MaxCausationIDBytes},
	}
	for _, f := range optional {
		if f.value == "" {
			continue
		}
		if err := checkText(f.value, f.max); err != nil {
			return fmt.Errorf("%w: %s %s", ErrInvalidEvent, f.name, err)
		}
	}
	for j, tag := range e.Tags {
		if err := checkText(tag, MaxTagBytes); err != nil {
			return fmt.Errorf("%w: tag %d %s", ErrInvalidEvent, j, err)
		}
	}
	if len(e.Data) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidPayload)
	}
	if !json.Valid(e.Data) {
		return ErrInvalidPayload
	}
	return nil
}

func checkText(s string, max int) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > max:
		return fmt.Errorf("is %d bytes, at most %d allowed", len(s), max)
	case !utf8.ValidString(s):
		return errors.New("is not valid UTF-8")
	}
	return nil
}

// ApproximateSize estimates, generously, how many bytes a record takes when stored:
// the lengths of its strings plus a fixed allowance for attribute names and numbers.
// Memory uses it so that it refuses what DynamoDB would refuse.
func ApproximateSize(r Record) int {
	n := recordOverheadEstimate + len(r.StreamID) + len(r.ID) + len(r.Type) + len(r.Data) +
		len(r.CorrelationID) + len(r.CausationID)
	for _, t := range r.Tags {
		n += len(t) + 1
	}
	return n
}

// Stamp returns copies of events with RecordedAt set to now where it was zero, normalised to UTC
// without a monotonic clock reading so that stored and returned values compare equal.
// Implementations call it so that callers can keep and reuse what they passed in.
func Stamp(events []Event, now time.Time) []Event {
	out := make([]Event, len(events))
	for i, e := range events {
		if e.RecordedAt.IsZero() {
			e.RecordedAt = now
		}
		e.RecordedAt = e.RecordedAt.UTC().Round(0)
		e.Data = append(json.RawMessage(nil), e.Data...)
		e.Tags = append([]string(nil), e.Tags...)
		out[i] = e
	}
	return out
}
