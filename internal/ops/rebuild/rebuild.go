// Package rebuild restores the Deadlines table from the event store, for operators:
// it replays every stream the table is built from into it, and pauses the schedule
// of the sweep while it runs (a rebuilt row carries its original due time, so
// historical payments briefly look overdue).
package rebuild

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Source is what a rebuild reads: the ids of the streams to replay, and each
// stream's records. *dynamo.Store is one.
type Source interface {
	// StreamIDs calls fn once for each stream whose id starts with prefix, never from
	// two goroutines at once, reading with the given parallelism (segments), and
	// stops with fn's first error.
	StreamIDs(ctx context.Context, prefix string, segments int, fn func(streamID string) error) error
	// Read returns a stream's records in version order, as eventstore.Store does.
	Read(ctx context.Context, streamID string, fromVersion int64) ([]eventstore.Record, error)
}

// Projector applies one record to a projection, as deadlines.Projection does (the
// Deadlines table, deadlines/dynamo's Table): Apply is idempotent, and a settled
// row never comes back, so a rebuild applies whatever is in the store, in order,
// over whatever the projection holds already.
type Projector interface {
	Apply(ctx context.Context, r deadlines.Record) error
}

// Settings of a rebuild.
const (
	// Concurrency is how many streams a rebuild reads and applies at once.
	Concurrency = 8
	// ScanSegments is how many parallel segments list the streams.
	ScanSegments = 4
)

// Result is what a rebuild did.
type Result struct {
	// Streams is how many streams were replayed to their end.
	Streams int
	// Records is how many records those streams held, every one applied.
	Records int
}

// projected starts the ids of the streams the Deadlines table is built from: the
// payments' (their outstanding rows, refunds owed and cancellations owed to the
// provider), and the bikes' and the processes' (the open processes: a request
// opens one, the process's completion closes it; and the returns due).
var projected = []string{payment.StreamID(""), rental.StreamID(""), rentalpayment.StreamID("")}

// Projected reports whether a stream is one the Deadlines table is built from:
// the parking streams of the parked records are (their records open and settle
// the redelivery kind's rows), as the streams above are.
func Projected(streamID string) bool {
	return parked.IsParkingStream(streamID) ||
		slices.ContainsFunc(projected, func(prefix string) bool { return strings.HasPrefix(streamID, prefix) })
}

// Deadlines replays every stream the Deadlines table is built from (every
// payment's, bike's, rental-payment process's and parking stream's) into
// projection, each record as dynamo.RecordOf reads it: it lists the
// streams in one pass, reads each one and applies its records in version order,
// Concurrency streams at a time. It creates no table and
// deletes no row; because Apply is idempotent and a settled row stays settled, running
// it again, after an interrupted run or over a projection the projector is writing
// at the same time, is safe and ends in the same rows. The listing is a snapshot of
// sorts, so events appended while it runs are the live projector's to apply: keep
// the projector running during a rebuild.
//
// progress, if not nil, is called after each stream with the number of streams done
// so far, never from two goroutines at once. On the first failure Deadlines
// stops and returns the error, naming the stream, with what it had done until then;
// the projection then holds a partial replay, which a later run completes.
func Deadlines(ctx context.Context, events Source, projection Projector, progress func(done int)) (Result, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(Concurrency)
	var (
		mu  sync.Mutex // guards res, and serializes progress
		res Result
	)
	listErr := events.StreamIDs(gctx, "", ScanSegments, func(id string) error {
		if gctx.Err() != nil {
			return context.Cause(gctx)
		}
		if !Projected(id) {
			return nil
		}
		g.Go(func() error { // waits for a free worker
			n, err := replay(gctx, events, projection, id)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			res.Streams++
			res.Records += n
			if progress != nil && gctx.Err() == nil {
				progress(res.Streams)
			}
			return nil
		})
		return nil
	})
	err := g.Wait()
	mu.Lock()
	defer mu.Unlock()
	if listErr != nil && err == nil {
		err = fmt.Errorf("rebuild: list streams: %w", listErr)
	}
	return res, stoppedBy(ctx, err)
}

// stoppedBy is err, naming also why ctx ended if it did: a call that failed
// because the rebuild was stopped (a lost lock cancels its context with ErrLost)
// reports its own error, often a bare "context canceled" from the SDK, which does
// not carry the cause.
func stoppedBy(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if cause := context.Cause(ctx); !errors.Is(err, cause) {
		return fmt.Errorf("rebuild: stopped (%w): %w", cause, err)
	}
	return err
}

// replay applies one stream's records in version order and returns how many there
// were.
func replay(ctx context.Context, events Source, projection Projector, streamID string) (int, error) {
	records, err := events.Read(ctx, streamID, 0)
	if err != nil {
		return 0, fmt.Errorf("rebuild: read stream %s: %w", streamID, err)
	}
	for _, r := range records {
		if err := projection.Apply(ctx, dynamo.RecordOf(r)); err != nil {
			return 0, fmt.Errorf("rebuild: apply %s version %d (%s): %w", streamID, r.Version, r.Type, err)
		}
	}
	return len(records), nil
}
