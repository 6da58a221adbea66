// Package streamfn holds what the two functions on the Events table's stream (the
// process and the projector) share: how they run a batch through the deadlines
// module's stream handler (awslambda.Stream), the decoder of the table's records,
// and where they park a record they cannot handle yet. Only they link it.
package streamfn

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Park returns the Park hook of consumer's stream function (awslambda.Park):
// each record it is given is parked in its parking stream of store, for the sweep
// to deliver again (docs/decisions/0017-parked-stream-records.md).
func Park(store eventstore.Store, consumer string) awslambda.Handler {
	p := &parked.Parker{Store: store, Consumer: consumer, NewID: ident.UUID, Known: eventfilter.Known}
	return func(ctx context.Context, r deadlines.Record) error {
		rec, ok := r.Source.(eventstore.Record)
		if !ok {
			return fmt.Errorf("streamfn: park %s at %d: not a record of the event store", r.Stream, r.Position)
		}
		return p.Park(ctx, rec)
	}
}

// Batch returns how the stream functions run their batches (awslambda.Stream):
// the Events table's records as dynamo.StreamRecord decodes them, the event types
// consumer is woken for (eventfilter), STREAM_CONCURRENCY streams at once, logging
// to logger. A value that is not a whole number from 1 to awslambda.MaxConcurrency
// is refused.
func Batch(getenv wiring.Getenv, consumer string, logger *slog.Logger) ([]awslambda.StreamOption, error) {
	n, err := wiring.BoundedInt(getenv, wiring.EnvStreamConcurrency, awslambda.DefaultConcurrency, awslambda.MaxConcurrency)
	if err != nil {
		return nil, err
	}
	opts := []awslambda.StreamOption{awslambda.Concurrency(n), awslambda.Types(eventfilter.Types(consumer)...)}
	if logger != nil {
		opts = append(opts, awslambda.Logger(logger))
	}
	return opts, nil
}

// Handle is h as the Handler of a stream function's batch: the record it is given
// is the event store's the decoder read (dynamo.StreamRecord).
func Handle(h func(context.Context, eventstore.Record) error) awslambda.Handler {
	return func(ctx context.Context, r deadlines.Record) error {
		rec, ok := r.Source.(eventstore.Record)
		if !ok {
			return fmt.Errorf("streamfn: %s at %d: not a record of the event store", r.Stream, r.Position)
		}
		return h(ctx, rec)
	}
}
