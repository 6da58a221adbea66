package awslambda

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
)

// A Decoder reads one record of a DynamoDB stream as the record of an event: ok is
// false for a stream record that is no event (a MODIFY or a REMOVE of an
// append-only table, an item of another type), which is skipped. An error is a
// record that should be an event and does not decode: it fails, and holds back
// the later records of its stream, which r.Stream names if the decoder could read
// it, or else every later record of the batch.
type Decoder func(rec events.DynamoDBEventRecord) (r deadlines.Record, ok bool, err error)

// A Handler handles one event record delivered from a stream. Deliveries are at
// least once, so it must be idempotent. A batch calls it from several goroutines
// at once, for records of different event streams, so it must be safe for
// concurrent use; it is never called for two records of one stream at once. An
// error makes the record (and every later one of its batch) be delivered again.
type Handler func(ctx context.Context, r deadlines.Record) error

// Defaults of a stream handler.
const (
	// DefaultStreamMargin is how much time before the invocation's deadline a batch
	// stops starting records. A record it does not start is reported as failed, so
	// that Lambda delivers it again rather than the invocation being cut off half-way
	// through it. A handler's own context ends half the margin before the
	// invocation's deadline, so that a record that overruns fails alone and the
	// batch's answer is still given.
	DefaultStreamMargin = 2 * time.Second
	// DefaultConcurrency is how many event streams' records a batch handles at
	// once: a batch of 100 records whose handler waits about 300 ms on other
	// services gets through in four rounds. Concurrency within an invocation is
	// cheaper than more parallel batches, which are invocations of their own.
	DefaultConcurrency = 32
	// MaxConcurrency bounds Concurrency, so that one execution environment does not
	// open hundreds of connections at once.
	MaxConcurrency = 256
)

// Retries in place, with Park set: a failed record is tried again after each of
// retryDelays in turn, as long as less than retryWithin has passed since its first
// try and the record could still be started. They cover a race that resolves in
// milliseconds (a record handled just before the record it depends on, of another
// stream); a record whose handler took retryWithin or more to fail is given to
// Park at once, so that a slow failure is not paid for several times over.
var retryDelays = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}

const retryWithin = time.Second

// Stream returns the Lambda handler of a DynamoDB stream whose event source
// mapping reports batch item failures (FunctionResponseTypes:
// ReportBatchItemFailures): it decodes each record with decode and passes the
// events (of the Types, if given) to h.
//
// Records of one event stream (Record.Stream) are passed in batch order, each only
// after the one before it succeeded; records of different streams are passed
// concurrently, up to Concurrency streams at once. A record fails when it does not
// decode, or h returns an error or panics; it is not started when the
// invocation's context is done or its deadline is less than the Margin away, or
// when an earlier record of its stream failed or was not started. The records of
// other streams carry on. With Park, a record whose handler fails is first tried
// again in place, then given to Park with every later record of its stream in the batch.
//
// The answer names the earliest record, in batch order, that failed or was not
// started, so that Lambda delivers it and everything after it again: records of
// other streams after it that were handled are delivered again too, and h's
// idempotency absorbs them. On success it names none. The handler never panics
// and never returns an error; it logs each failure with the record's sequence
// number, stream, position and type, one line for the records not started for
// want of time, and one summary line per batch, never a record's data.
func Stream(decode Decoder, h Handler, opts ...StreamOption) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	s := streamSettings{}
	for _, o := range opts {
		o.stream(&s)
	}
	if s.margin <= 0 {
		s.margin = DefaultStreamMargin
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	switch {
	case s.concurrency <= 0:
		s.concurrency = DefaultConcurrency
	case s.concurrency > MaxConcurrency:
		s.concurrency = MaxConcurrency
	}
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		b := &batch{streamSettings: s, decode: decode, h: h, ev: ev, outcomes: make([]outcome, len(ev.Records))}
		b.plan(ctx)
		b.run(ctx)
		return b.answer(ctx), nil
	}
}

// Projector returns the Lambda handler of a DynamoDB stream that applies each
// event to p (Stream, with p.Apply as the handler): the projector of the
// deadlines. A record that a kind cannot read (deadlines.ErrCorruptRecord) fails,
// as every other error of Apply does.
func Projector(p deadlines.Projection, decode Decoder, opts ...StreamOption) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return Stream(decode, p.Apply, opts...)
}

// outcome is what became of one record of a batch. A record is done when Lambda
// need not deliver it again; every other outcome holds back its stream's later
// records and counts for the reported failure.
type outcome uint8

const (
	notStarted outcome = iota // not reached: the deadline, or its stream's earlier record failed
	skipped                   // no event, or one of a type the consumer does not handle
	handled                   // the handler returned nil
	kept                      // the handler failed, or an earlier record of its stream was kept, and Park kept it
	failed                    // undecodable, the handler failed or panicked (and Park, if set, could not keep it)
)

// batch is one invocation's batch of records being handled.
type batch struct {
	streamSettings
	decode   Decoder
	h        Handler
	ev       events.DynamoDBEvent
	outcomes []outcome // by index in the batch
	decoded  []deadlines.Record
	// lanes are the batch's events grouped by event stream, each stream's in batch
	// order, the streams in the order of their first record: lane i is
	// order[start[i]:start[i+1]], indexes into the batch's records.
	order, start []int
	late         lateRecords
}

func (b *batch) lanes() int { return len(b.start) - 1 }

// plan decodes the batch's records into lanes, marking skipped and undecodable
// records in outcomes.
func (b *batch) plan(ctx context.Context) {
	b.decoded = make([]deadlines.Record, len(b.ev.Records))
	laneOf := make([]int, len(b.ev.Records)) // -1: in no lane
	byStream := map[string]int{}
	blocked := map[string]bool{} // streams with an undecodable record: nothing after it starts
	var sizes []int
	for i := range laneOf {
		laneOf[i] = -1
	}
	for i, rec := range b.ev.Records {
		r, ok, err := b.decoder(rec)
		if err != nil {
			b.logger.LogAttrs(ctx, slog.LevelError, "stream record cannot be decoded", append(recordAttrs(rec, r), slog.String("error", err.Error()))...)
			b.outcomes[i] = failed
			if r.Stream == "" {
				break // no stream to hold back: hold back the rest of the batch
			}
			blocked[r.Stream] = true
			continue
		}
		if !ok || (len(b.types) > 0 && !slices.Contains(b.types, r.Type)) {
			b.outcomes[i] = skipped
			continue
		}
		if blocked[r.Stream] {
			continue
		}
		lane, seen := byStream[r.Stream]
		if !seen {
			lane = len(sizes)
			byStream[r.Stream] = lane
			sizes = append(sizes, 0)
		}
		sizes[lane]++
		laneOf[i] = lane
		b.decoded[i] = r
	}
	// A counting sort of the records by lane keeps each lane's in batch order.
	b.start = make([]int, len(sizes)+1)
	for lane, n := range sizes {
		b.start[lane+1] = b.start[lane] + n
	}
	b.order = make([]int, b.start[len(sizes)])
	fill := slices.Clone(b.start[:len(sizes)])
	for i, lane := range laneOf {
		if lane >= 0 {
			b.order[fill[lane]] = i
			fill[lane]++
		}
	}
}

// decoder runs the decoder, turning a panic into an error.
func (b *batch) decoder(rec events.DynamoDBEventRecord) (r deadlines.Record, ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, ok, err = deadlines.Record{}, false, panicked("decoder", p)
		}
	}()
	r, ok, err = b.decode(rec)
	if err == nil && ok && r.Stream == "" {
		return r, false, errNoStream
	}
	return r, ok, err
}

// run handles the lanes, up to the concurrency at once.
func (b *batch) run(ctx context.Context) {
	n := b.lanes()
	if b.concurrency == 1 || n == 1 {
		for lane := range n {
			b.runLane(ctx, lane)
		}
		return
	}
	// Lanes are taken in the order of their first record, so that the earliest
	// records of the batch, which decide how much Lambda must deliver again, are
	// the first to be started.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(b.concurrency, n) {
		wg.Go(func() {
			for lane := int(next.Add(1) - 1); lane < n; lane = int(next.Add(1) - 1) {
				b.runLane(ctx, lane)
			}
		})
	}
	wg.Wait()
}

// runLane handles the records of one lane in order, until one fails (or, with
// Park, one Park cannot keep) or the time is up.
func (b *batch) runLane(ctx context.Context, lane int) {
	parking := false // an earlier record of the lane was kept: give Park the rest, in order
	for _, idx := range b.order[b.start[lane]:b.start[lane+1]] {
		if err := startable(ctx, b.margin); err != nil {
			b.late.add(idx, err) // this one and the rest of the lane stay notStarted
			return
		}
		r := b.decoded[idx]
		attrs := recordAttrs(b.ev.Records[idx], r)
		if !parking {
			err := b.handle(ctx, r)
			if err == nil {
				b.outcomes[idx] = handled
				continue
			}
			b.logger.LogAttrs(ctx, slog.LevelError, "stream record handler failed", append(attrs, slog.String("error", err.Error()))...)
			if b.park == nil {
				b.outcomes[idx] = failed
				return
			}
			parking = true
		}
		if err := b.keep(ctx, r); err != nil {
			b.logger.LogAttrs(ctx, slog.LevelError, "stream record not kept", append(attrs, slog.String("error", err.Error()))...)
			b.outcomes[idx] = failed
			return
		}
		b.logger.LogAttrs(ctx, slog.LevelWarn, "stream record kept for later", attrs...)
		b.outcomes[idx] = kept
	}
}

// answer logs the batch's summary and returns the response naming its earliest
// record that Lambda must deliver again.
func (b *batch) answer(ctx context.Context) events.DynamoDBEventResponse {
	var counts [failed + 1]int
	first := -1
	for i, o := range b.outcomes {
		counts[o]++
		if first < 0 && o != handled && o != skipped && o != kept {
			first = i
		}
	}
	if b.late.count > 0 {
		b.logger.LogAttrs(ctx, slog.LevelWarn, "stream records not started",
			slog.Int("streams", b.late.count),
			slog.String("sequenceNumber", b.ev.Records[b.late.first].Change.SequenceNumber),
			slog.String("error", b.late.err.Error()))
	}
	attrs := []slog.Attr{
		slog.Int("records", len(b.ev.Records)),
		slog.Int("handled", counts[handled]),
		slog.Int("skipped", counts[skipped]),
		slog.Int("failed", counts[failed]),
		slog.Int("notStarted", counts[notStarted]),
	}
	if counts[kept] > 0 {
		attrs = append(attrs, slog.Int("kept", counts[kept]))
	}
	level := slog.LevelInfo
	var resp events.DynamoDBEventResponse
	if first >= 0 {
		seq := b.ev.Records[first].Change.SequenceNumber
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("failedSequenceNumber", seq))
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: seq}}
	}
	b.logger.LogAttrs(ctx, level, "stream batch", attrs...)
	return resp
}

// recordAttrs identifies a record in a log line: by its sequence number, and by
// the stream, position and type the decoder read, as far as it read them.
func recordAttrs(rec events.DynamoDBEventRecord, r deadlines.Record) []slog.Attr {
	attrs := []slog.Attr{slog.String("sequenceNumber", rec.Change.SequenceNumber)}
	if r.Stream != "" {
		attrs = append(attrs, slog.String("stream", r.Stream))
	}
	if r.Position != 0 {
		attrs = append(attrs, slog.Int64("position", r.Position))
	}
	if r.Type != "" {
		attrs = append(attrs, slog.String("type", r.Type))
	}
	return attrs
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
