package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bikerental/bikerental/internal/eventstore"
)

// Event is what the runner needs of a decider's event: its stored type.
type Event interface{ EventType() string }

// Decider is a decider package as a Runner uses it: how a stream's events fold to
// the state S, how a command C is decided on it and its events evolve it, how
// stored events decode, and how appended events are tagged.
type Decider[S any, E Event, C any] struct {
	Fold   func([]E) S
	Evolve func(S, E) S
	Decide func(S, C) ([]E, error)
	Decode func(string, []byte) (E, error)
	Tags   func(E) []string
	// Rental returns the rental an event belongs to: its correlation id when the
	// command's Meta names none.
	Rental func(E) string
}

// Runner executes one decider's commands on an event store: it loads a stream,
// folds it, decides, and appends what was decided at the version it read, so that
// two writers that read the same version cannot both append. The command handlers
// and the rental-payment process run their streams through it.
type Runner[S any, E Event, C any] struct {
	Decider Decider[S, E, C]
	Store   eventstore.Store
	// Retry bounds how often Run and RunFrom decide again after a conflict.
	Retry eventstore.RetryPolicy
	// NewID makes the ids of the events appended.
	NewID func() string
}

// Loaded is a stream as Runner.Load read it: its state and the records it was
// folded from. Only Load makes one that RunOnce accepts, so that nothing is
// appended at a version that was not read.
type Loaded[S any] struct {
	State   S
	Stream  string
	Records []eventstore.Record
	read    bool
}

// Read reports whether l came from Runner.Load.
func (l Loaded[S]) Read() bool { return l.read }

// Version is the version l was read at: that of its last record, 0 for an empty
// stream.
func (l Loaded[S]) Version() int64 { return lastVersion(l.Records) }

// ErrUnread is what RunOnce returns for a Loaded that Load did not make: appending
// without having read the stream would have no concurrency guard at all.
var ErrUnread = errors.New("command: refusing to append without having read the stream")

// Load reads stream whole and folds it.
func (r Runner[S, E, C]) Load(ctx context.Context, stream string) (Loaded[S], error) {
	records, err := r.Store.Read(ctx, stream, 0)
	if err != nil {
		return Loaded[S]{}, err
	}
	s, err := r.Fold(records)
	if err != nil {
		return Loaded[S]{}, err
	}
	return Loaded[S]{State: s, Stream: stream, Records: records, read: true}, nil
}

// Fold decodes records and folds them; a record that does not decode is an error
// wrapping eventstore.ErrCorruptRecord.
func (r Runner[S, E, C]) Fold(records []eventstore.Record) (S, error) {
	events, err := r.DecodeAll(records)
	if err != nil {
		var zero S
		return zero, err
	}
	return r.Decider.Fold(events), nil
}

// DecodeAll turns records into the decider's events, failing on the first it
// cannot read with an error wrapping eventstore.ErrCorruptRecord.
func (r Runner[S, E, C]) DecodeAll(records []eventstore.Record) ([]E, error) {
	events := make([]E, len(records))
	for i, rec := range records {
		e, err := r.Decider.Decode(rec.Type, rec.Data)
		if err != nil {
			return nil, eventstore.Corrupt(rec, err)
		}
		events[i] = e
	}
	return events, nil
}

// Run executes c on stream: read, fold, decide, append, and after a conflict read
// what was appended meanwhile and decide again, as eventstore.Execute does. A
// refusal is the decider's error, and nothing is appended; a command that decides
// nothing succeeds with nothing appended.
func (r Runner[S, E, C]) Run(ctx context.Context, stream string, c C, meta Meta) (Result[S], error) {
	history, err := r.Store.Read(ctx, stream, 0)
	if err != nil {
		return Result[S]{}, err
	}
	return r.RunFrom(ctx, stream, history, c, meta)
}

// RunFrom is Run on a history the caller has just read.
func (r Runner[S, E, C]) RunFrom(ctx context.Context, stream string, history []eventstore.Record, c C, meta Meta) (Result[S], error) {
	var after S
	_, appended, err := eventstore.ExecuteFrom(ctx, r.Store, stream, history, func(history []eventstore.Record) ([]eventstore.Event, error) {
		s, err := r.Fold(history)
		if err != nil {
			return nil, err
		}
		var events []eventstore.Event
		after, events, err = r.decide(s, c, meta)
		return events, err
	}, r.Retry)
	if err != nil {
		return Result[S]{}, err
	}
	return Result[S]{State: after, Appended: appended}, nil
}

// RunOnce decides c on what l holds and appends at the version l was read at,
// once: a writer that appended meanwhile makes it fail with the store's error,
// matching eventstore.ErrConcurrency, and the caller does its work again from a
// fresh Load. A Loaded that Load did not make is refused with ErrUnread.
func (r Runner[S, E, C]) RunOnce(ctx context.Context, l Loaded[S], c C, meta Meta) (Result[S], error) {
	if !l.read {
		return Result[S]{}, ErrUnread
	}
	after, events, err := r.decide(l.State, c, meta)
	if err != nil {
		return Result[S]{}, err
	}
	if len(events) == 0 {
		return Result[S]{State: after}, nil
	}
	appended, err := r.Store.Append(ctx, l.Stream, l.Version(), events...)
	if err != nil {
		return Result[S]{}, err
	}
	return Result[S]{State: after, Appended: appended}, nil
}

// decide decides c on s and returns the state after it and its events, encoded.
func (r Runner[S, E, C]) decide(s S, c C, meta Meta) (S, []eventstore.Event, error) {
	decided, err := r.Decider.Decide(s, c)
	if err != nil {
		return s, nil, err
	}
	for _, e := range decided {
		s = r.Decider.Evolve(s, e)
	}
	events, err := r.Encode(decided, meta)
	return s, events, err
}

// Encode turns decided events into events to append, tied to meta: each gets a
// new id, its tags, and meta's correlation id or else its rental's.
func (r Runner[S, E, C]) Encode(decided []E, meta Meta) ([]eventstore.Event, error) {
	out := make([]eventstore.Event, len(decided))
	for i, e := range decided {
		data, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("command: encode %s: %w", e.EventType(), err)
		}
		correlation := meta.CorrelationID
		if correlation == "" {
			correlation = r.Decider.Rental(e)
		}
		out[i] = eventstore.Event{
			ID: r.NewID(), Type: e.EventType(), Data: data, Tags: r.Decider.Tags(e),
			CorrelationID: correlation, CausationID: meta.CausationID,
		}
	}
	return out, nil
}

func lastVersion(records []eventstore.Record) int64 {
	if n := len(records); n > 0 {
		return records[n-1].Version
	}
	return 0
}
