// Package streambatch runs a Lambda DynamoDB stream batch of the Events table
// through a handler: each record's new image is decoded back into the event record
// that was appended (dynamo.DecodeImage, the one decoder of stored records), the
// records of one event stream are handled in order and those of different streams
// concurrently, and failures are reported per record, the way Lambda's event source
// mapping expects with ReportBatchItemFailures. It does not read the stream itself;
// package streampoll plays the event source mapping locally.
package streambatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Handler handles one event record delivered from the Events table's stream.
// Deliveries are at least once, so it must be idempotent. HandleBatch calls it from
// several goroutines at once, for records of different event streams, so it must be
// safe for concurrent use; it is never called for two records of one stream at once.
// An error makes the record (and every later one of its batch) be delivered again.
type Handler func(ctx context.Context, r eventstore.Record) error

// DeadlineMargin is how much time before its context's deadline HandleBatch stops
// starting records. A record it does not start is reported as failed, so that Lambda
// delivers it again rather than the invocation being cut off half-way through it.
// The handler's own context ends half the margin before the invocation's deadline,
// so that a record that overruns fails alone and the batch's answer is still given.
const DeadlineMargin = 2 * time.Second

// Concurrency bounds: how many event streams' records HandleBatch handles at once by
// default, and at most.
//
// The default, 32, is what a batch of the template's 100 records needs for a slow
// provider: a rental request waits about 330 ms (a 300 ms provider call and four
// DynamoDB calls), so 32 at once get through a batch in four rounds, about 75
// requests a second per batch, and the template's ParallelizationFactor of 2 takes
// one shard past 100 (BENCHMARKS.md, "Throughput of one shard"). Concurrency within
// an invocation is cheaper than more parallel batches, which are billed invocations
// of their own; it stays well under MaxConcurrency, so that one execution
// environment of 256 MB does not open hundreds of connections at once.
const (
	DefaultConcurrency = 32
	MaxConcurrency     = 256
)

// Options configures HandleBatch.
type Options struct {
	// Concurrency is how many event streams' records are handled at once:
	// DefaultConcurrency if zero or negative, at most MaxConcurrency. One handles
	// the batch's records one at a time.
	Concurrency int
	// Logger receives one line per failure and a summary per batch; nil means
	// slog.Default().
	Logger *slog.Logger
	// Park, when set, keeps a record for delivery again later, durably, so that it
	// need not hold up the records after it: a record whose handler still fails
	// after its retries in place (RetryDelays, within RetryWithin) is given to
	// Park, and so is every later record of its stream in the batch, in order. A
	// record Park kept counts as done in the batch's answer; one it could not keep
	// fails, as without Park, and holds back the rest of its stream. Park must be
	// safe for concurrent use and idempotent (a record may be parked twice, when
	// Lambda delivers it again). Without Park a failed record is not retried in
	// place: Lambda's delivery again is its retry.
	Park func(ctx context.Context, r eventstore.Record) error
}

// Retries in place, with Park set: a failed record is tried again after each of
// RetryDelays in turn, as long as less than RetryWithin has passed since its first
// try and the invocation's deadline is more than DeadlineMargin away. They cover
// the usual race, a settlement handled a few milliseconds before its process
// recorded its start, which resolves in milliseconds; a record whose handler took
// RetryWithin or more to fail (a provider that does not answer is cut off at
// PAYMENT_PROVIDER_TIMEOUT, 5 s) is parked at once, so that a slow failure is not
// paid for several times over.
var RetryDelays = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}

// RetryWithin bounds the time a record's retries in place may start within; see
// RetryDelays.
const RetryWithin = time.Second

// outcome is what became of one record of a batch. A record is "done" when Lambda
// need not deliver it again; every other outcome holds back its stream's later
// records and counts for the reported failure. (A handler answer that asks for a
// record to be retried later is one more outcome of that kind.)
type outcome uint8

const (
	notStarted outcome = iota // not reached: the deadline, or its stream's earlier record failed
	skipped                   // not an INSERT
	handled                   // the handler returned nil
	parked                    // the handler failed, or an earlier record of its stream was parked, and Park kept it
	failed                    // undecodable, the handler returned an error or panicked (and Park, if set, could not keep it)
)

// lanes are the records of a batch grouped by event stream, each stream's in batch
// order, the streams in the order of their first record: lane i is
// order[start[i]:start[i+1]], indexes into the batch's records and into decoded.
type lanes struct {
	decoded []eventstore.Record // by index in the batch
	order   []int
	start   []int
}

func (l *lanes) count() int { return len(l.start) - 1 }

// HandleBatch runs the records of a Lambda DynamoDB stream event through h and
// returns the response Lambda expects when the event source mapping reports batch
// item failures (FunctionResponseTypes: ReportBatchItemFailures).
//
// Records other than INSERTs are skipped without a log line: the Events table is
// append-only, so nothing else is an event. Each INSERT's new image is decoded with
// dynamo.DecodeImage and passed to h. Records of one event stream (one stream id) are
// passed in batch order, each only after the one before it succeeded; records of
// different streams are passed concurrently, up to opts.Concurrency streams at once.
// A record fails when its image cannot be decoded, or h returns an error or panics;
// it is not started when ctx is done, when ctx's deadline is less than
// DeadlineMargin away, or when an earlier record of its stream failed or was not
// started. An image that cannot be decoded and does not even name its stream holds
// back every later record of the batch. The records of other streams carry on.
//
// With opts.Park set, a record whose handler fails is first tried again in place
// (RetryDelays), then parked: given to Park, with every later record of its stream
// in the batch, and counted as done when Park kept it. A failure then holds back
// nothing but what Park could not keep. Undecodable records are never parked: there
// is no record to keep.
//
// The response names the earliest record, in batch order, that failed or was not
// started, so Lambda delivers it and everything after it again: records of other
// streams after it that were handled are delivered again too, and h's idempotency
// absorbs them. On success it names none.
//
// HandleBatch never panics. It logs each failure with the record's stream id and
// version (for a record it cannot decode, those it can read, and its sequence
// number), one line for the records not started for want of time, and one summary
// line per batch, never a record's payload.
func HandleBatch(ctx context.Context, ev events.DynamoDBEvent, h Handler, opts Options) events.DynamoDBEventResponse {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	outcomes := make([]outcome, len(ev.Records))
	ls := plan(ctx, ev, outcomes, logger)

	var late lateRecords
	run := func(lane int) {
		parking := false // an earlier record of the lane was parked: park the rest, in order
		for _, idx := range ls.order[ls.start[lane]:ls.start[lane+1]] {
			if err := startable(ctx); err != nil {
				late.add(idx, err) // this one and the rest of the lane stay notStarted
				return
			}
			r := ls.decoded[idx]
			attrs := func(err error) []slog.Attr {
				return []slog.Attr{
					slog.String("sequenceNumber", ev.Records[idx].Change.SequenceNumber),
					slog.String("streamId", r.StreamID),
					slog.Int64("version", r.Version),
					slog.String("type", r.Type),
					slog.String("error", err.Error()),
				}
			}
			if !parking {
				err := handle(ctx, h, r, opts.Park != nil)
				if err == nil {
					outcomes[idx] = handled
					continue
				}
				logger.LogAttrs(ctx, slog.LevelError, "stream record handler failed", attrs(err)...)
				if opts.Park == nil {
					outcomes[idx] = failed
					return
				}
				parking = true
			}
			if err := park(ctx, opts.Park, r); err != nil {
				logger.LogAttrs(ctx, slog.LevelError, "stream record not parked", attrs(err)...)
				outcomes[idx] = failed
				return
			}
			logger.LogAttrs(ctx, slog.LevelWarn, "stream record parked",
				slog.String("sequenceNumber", ev.Records[idx].Change.SequenceNumber),
				slog.String("streamId", r.StreamID), slog.Int64("version", r.Version), slog.String("type", r.Type))
			outcomes[idx] = parked
		}
	}
	concurrency := opts.Concurrency
	switch {
	case concurrency <= 0:
		concurrency = DefaultConcurrency
	case concurrency > MaxConcurrency:
		concurrency = MaxConcurrency
	}
	n := ls.count()
	if concurrency == 1 || n == 1 {
		for lane := range n {
			run(lane)
		}
	} else {
		// Lanes are taken in the order of their first record, so that the earliest
		// records of the batch, which decide how much Lambda must deliver again, are
		// the first to be started.
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(concurrency, n) {
			wg.Go(func() {
				for lane := int(next.Add(1) - 1); lane < n; lane = int(next.Add(1) - 1) {
					run(lane)
				}
			})
		}
		wg.Wait()
	}
	return answer(ctx, ev, outcomes, &late, logger)
}

// plan decodes the batch's INSERTs into lanes, one per event stream in the order of
// their first record, marking skipped and undecodable records in outcomes.
func plan(ctx context.Context, ev events.DynamoDBEvent, outcomes []outcome, logger *slog.Logger) *lanes {
	ls := &lanes{decoded: make([]eventstore.Record, len(ev.Records))}
	laneOf := make([]int, len(ev.Records)) // -1: in no lane
	byStream := make(map[string]int)
	var sizes []int
	blocked := make(map[string]bool) // streams with an undecodable record: nothing after it starts
	for i := range laneOf {
		laneOf[i] = -1
	}
	for i, rec := range ev.Records {
		if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
			outcomes[i] = skipped
			continue
		}
		r, err := dynamo.DecodeImage(rec.Change.NewImage)
		if err != nil {
			logger.LogAttrs(ctx, slog.LevelError, "stream record cannot be decoded",
				append(imageAttrs(rec), slog.String("error", err.Error()))...)
			outcomes[i] = failed
			stream, ok := imageStream(rec)
			if !ok {
				break // no stream to hold back: hold back the rest of the batch
			}
			blocked[stream] = true
			continue
		}
		if blocked[r.StreamID] {
			continue
		}
		lane, ok := byStream[r.StreamID]
		if !ok {
			lane = len(sizes)
			byStream[r.StreamID] = lane
			sizes = append(sizes, 0)
		}
		sizes[lane]++
		laneOf[i] = lane
		ls.decoded[i] = r
	}
	for i := range outcomes {
		if ev.Records[i].EventName != string(events.DynamoDBOperationTypeInsert) {
			outcomes[i] = skipped // also past an undecodable record that held back the rest
		}
	}
	// A counting sort of the records by lane keeps each lane's in batch order.
	ls.start = make([]int, len(sizes)+1)
	for lane, n := range sizes {
		ls.start[lane+1] = ls.start[lane] + n
	}
	ls.order = make([]int, ls.start[len(sizes)])
	fill := slices.Clone(ls.start[:len(sizes)])
	for i, lane := range laneOf {
		if lane >= 0 {
			ls.order[fill[lane]] = i
			fill[lane]++
		}
	}
	return ls
}

// answer logs the batch's summary and returns the response naming its earliest
// record that Lambda must deliver again.
func answer(ctx context.Context, ev events.DynamoDBEvent, outcomes []outcome, late *lateRecords, logger *slog.Logger) events.DynamoDBEventResponse {
	var counts [failed + 1]int
	first := -1
	for i, o := range outcomes {
		counts[o]++
		if first < 0 && o != handled && o != skipped && o != parked {
			first = i
		}
	}
	if late.count > 0 {
		logger.LogAttrs(ctx, slog.LevelWarn, "stream records not started",
			slog.Int("streams", late.count),
			slog.String("sequenceNumber", ev.Records[late.first].Change.SequenceNumber),
			slog.String("error", late.err.Error()))
	}
	attrs := []slog.Attr{
		slog.Int("records", len(ev.Records)),
		slog.Int("handled", counts[handled]),
		slog.Int("skipped", counts[skipped]),
		slog.Int("failed", counts[failed]),
		slog.Int("notStarted", counts[notStarted]),
	}
	if counts[parked] > 0 {
		attrs = append(attrs, slog.Int("parked", counts[parked]))
	}
	level := slog.LevelInfo
	var resp events.DynamoDBEventResponse
	if first >= 0 {
		seq := ev.Records[first].Change.SequenceNumber
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("failedSequenceNumber", seq))
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: seq}}
	}
	logger.LogAttrs(ctx, level, "stream batch", attrs...)
	return resp
}

// lateRecords gathers the lanes stopped for want of time, for one log line.
type lateRecords struct {
	mu    sync.Mutex
	count int
	first int
	err   error
}

func (l *lateRecords) add(index int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 || index < l.first {
		l.first, l.err = index, err
	}
	l.count++
}

// startable reports why a record must not be started now, if it must not.
func startable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left < DeadlineMargin {
			return fmt.Errorf("%s left before the deadline, less than the %s margin", left.Round(time.Millisecond), DeadlineMargin)
		}
	}
	return nil
}

// errOverran is the cause of a handler's context ending before the invocation's.
var errOverran = errors.New("streambatch: the record's handler ran into the invocation's deadline margin")

// call runs h, turning a panic into an error so that one record cannot crash the
// invocation and take the rest of the batch's progress with it. h's context ends
// DeadlineMargin/2 before ctx's deadline.
func call(ctx context.Context, h Handler, r eventstore.Record) (err error) {
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline.Add(-DeadlineMargin/2), errOverran)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, r)
}

// handle calls h for r, and, when retry is set, again after each of RetryDelays
// while it fails, the first try began less than RetryWithin ago, and the record
// could still be started (startable). It returns the last failure.
func handle(ctx context.Context, h Handler, r eventstore.Record, retry bool) error {
	began := time.Now()
	err := call(ctx, h, r)
	if !retry {
		return err
	}
	for _, delay := range RetryDelays {
		if err == nil || time.Since(began)+delay >= RetryWithin || startable(ctx) != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if startable(ctx) != nil {
			return err
		}
		err = call(ctx, h, r)
	}
	return err
}

// park gives r to Park, turning a panic into an error.
func park(ctx context.Context, p func(context.Context, eventstore.Record) error, r eventstore.Record) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("park panicked: %v", v)
		}
	}()
	return p(ctx, r)
}

// imageStream returns the stream id an image holds, if it holds one as a string.
func imageStream(rec events.DynamoDBEventRecord) (string, bool) {
	v, ok := rec.Change.NewImage[schema.EventsStreamID]
	if !ok || v.DataType() != events.DataTypeString || v.IsNull() || v.String() == "" {
		return "", false
	}
	return v.String(), true
}

// imageAttrs identifies a record that may not decode: by its sequence number, and by
// its stream id and version where the image holds them with the right types.
func imageAttrs(rec events.DynamoDBEventRecord) []slog.Attr {
	attrs := []slog.Attr{slog.String("sequenceNumber", rec.Change.SequenceNumber)}
	if stream, ok := imageStream(rec); ok {
		attrs = append(attrs, slog.String("streamId", stream))
	}
	image := rec.Change.NewImage
	if v, ok := image[schema.EventsVersion]; ok && v.DataType() == events.DataTypeNumber && !v.IsNull() {
		attrs = append(attrs, slog.String("version", v.Number()))
	}
	return attrs
}
