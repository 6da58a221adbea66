// Package streampoll is the local stand-in for Lambda's event source mapping on a
// DynamoDB stream, for the local runner and tests: Poller reads a table's stream and
// delivers its records, converted by EventRecord, to a batch handler as Lambda would.
// It is built for moto's stream only: it never follows NextShardIterator (see Poller),
// so it can stall on a real, long-lived shard. On AWS, Lambda reads the stream.
package streampoll

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
)

// StreamsAPI is the part of the DynamoDB Streams client that Poller uses.
// *dynamodbstreams.Client has it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsAPI = (*dynamodbstreams.Client)(nil)

// BatchHandler has the signature of a Lambda function subscribed to a DynamoDB stream
// with batch item failures reported: stream.HandleBatch wrapped in a closure, for
// example.
type BatchHandler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// Batch sizes of a Poller: the default, and the most one GetRecords call returns.
const (
	DefaultBatchSize = 100
	MaxBatchSize     = 1000
)

// MaxParallelization is the most concurrent batches per shard a Poller delivers, as
// an event source mapping's ParallelizationFactor allows.
const MaxParallelization = 10

const defaultInterval = 250 * time.Millisecond // Lambda polls a shard four times a second

// Poller plays one Lambda event source mapping over a table's stream, for local runs
// and tests: it reads each shard from its beginning and delivers the records, in
// stream order, to Handler in batches, at least once each. Like Lambda, it moves a
// shard's position past a batch only as far as the handler's response allows: up to
// the record before the first one reported in BatchItemFailures (none, if a reported
// identifier is not in the batch), or not at all if the handler returns an error or
// panics. With MaxRetryAttempts or MaxRecordAge set it plays Lambda's retry limits
// and on-failure destination too: a record that fails more often or for longer than
// that is handed to OnFailure and skipped, so that one poison record neither blocks
// its shard for good nor disappears without a trace. (Bisection is not played: batch item failures make it moot.)
//
// With Parallelization N above one it plays the mapping's ParallelizationFactor as
// Lambda does: each shard's records are split into N partitions by their partition
// key (the event's stream id: its FNV-1a hash modulo N), and each partition is a
// sequence of its own, delivered in batches concurrently with the others, with its
// own position and its own retries: records of one key stay in order, and a
// partition whose batch keeps failing holds up no other.
//
// The positions are kept in memory, per shard and partition. A Poller is not safe
// for concurrent use: call Poll and Run from one goroutine at a time (with
// Parallelization above one, it calls Handler from several goroutines at once).
// Set the exported fields before the first Poll and leave them alone afterwards.
//
// Poller is built for moto's stream, which has one shard that never closes. It does
// not hold back a child shard until its parent is exhausted, and as it asks for a
// fresh shard iterator for every read instead of following NextShardIterator (see
// Poll), it can stall on the empty stretches of a real, long-lived shard. On AWS,
// Lambda reads the stream.
type Poller struct {
	// Client reads the stream. Required.
	Client StreamsAPI
	// StreamARN is the stream to read: the table's LatestStreamArn. Required.
	StreamARN string
	// BatchSize is the most records delivered in one batch: DefaultBatchSize if zero
	// or negative, at most MaxBatchSize.
	BatchSize int
	// Parallelization is how many batches of one shard are delivered at once, as
	// the mapping's ParallelizationFactor: one if zero or negative, at most
	// MaxParallelization. Above one, Handler must be safe for concurrent use.
	Parallelization int
	// Handler receives the batches. Required.
	Handler BatchHandler
	// Logger receives the errors Run keeps going after. Nil means slog.Default().
	Logger *slog.Logger
	// MaxRetryAttempts is how many times a failing record is delivered again before
	// it is handed to OnFailure and skipped, as an event source mapping's
	// MaximumRetryAttempts; zero or negative sets no limit on the count.
	MaxRetryAttempts int
	// MaxRecordAge plays the mapping's MaximumRecordAgeInSeconds: a record that
	// fails when it is older than this (by its approximate creation time) is handed
	// to OnFailure and skipped. Zero sets no limit on the age. With neither limit a
	// failing record is retried forever.
	MaxRecordAge time.Duration
	// OnFailure receives the records given up on, as the mapping's on-failure
	// destination (an SQS queue) receives their description. Nil only logs them.
	OnFailure func(ctx context.Context, f FailedRecord)
	// Types, when set, are the only event types delivered, as an event source
	// mapping's filter on the new image's type delivers them: records of other types
	// are passed over, and the position moves past them. Nil delivers every record.
	Types []string

	mu        sync.Mutex
	positions map[partition]string  // sequence number of the last record handled
	failures  map[partition]failure // the record that keeps failing
}

// partition is one sequence of records the Poller delivers: a shard's records whose
// partition key hashes to index, of n partitions.
type partition struct {
	shard    string
	index, n int
}

// position returns the sequence number after which part's next batch starts.
func (p *Poller) position(part partition) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pos, ok := p.positions[part]
	return pos, ok
}

func (p *Poller) setPosition(part partition, pos string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.positions[part] = pos
}

type failure struct {
	sequenceNumber string
	attempts       int
}

// FailedRecord describes a record the Poller gave up on as Lambda describes a
// stream source's discarded batch to an on-failure destination (its
// DDBStreamBatchInfo): the stream, the shard and the range of sequence numbers, not
// the items, nor their keys. What the records held is read from the event store
// (rentalctl repair); the stream itself keeps them only 24 hours. The Poller gives
// up on one record at a time, so the range is that record's.
type FailedRecord struct {
	StreamARN           string
	ShardID             string
	StartSequenceNumber string
	EndSequenceNumber   string
	BatchSize           int
	// ApproximateArrivalOfFirstRecord and ...LastRecord are when the batch's
	// records were written to the stream.
	ApproximateArrivalOfFirstRecord, ApproximateArrivalOfLastRecord time.Time
	// Attempts is how many times the record was delivered.
	Attempts int
}

// HandlerError reports that the handler returned an error or panicked instead of
// answering for a batch. The shard's position (its partition's, with
// Parallelization) did not move: the whole batch is delivered again by the next
// Poll, as Lambda retries a failed invocation.
type HandlerError struct {
	ShardID   string // the shard whose batch failed
	Partition int    // the partition of the shard, 0 without Parallelization
	Err       error  // what the handler returned, or the panic it raised
}

// Error names the shard, its partition and the handler's error.
func (e *HandlerError) Error() string {
	return fmt.Sprintf("streampoll: handler failed on a batch of shard %s (partition %d): %v", e.ShardID, e.Partition, e.Err)
}

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }

// Poll makes one pass over every shard of the stream (all pages of DescribeStream)
// and delivers at most one batch per shard and partition, returning how many records it delivered
// to the handler, whatever the handler made of them. Handler failures do not stop
// the pass: each is returned, joined with the others, as a *HandlerError. An error of
// the DynamoDB Streams API ends the pass and is returned too; the shards polled
// before it keep their progress. Calling Poll again is always safe: what was not
// handled is delivered again.
//
// Before every GetRecords, Poll asks for a fresh iterator (TRIM_HORIZON for a shard it
// has no position in yet, AFTER_SEQUENCE_NUMBER its position otherwise) and never
// follows NextShardIterator: moto 5.2.1 restores a table from a copy when it cancels
// a transaction, which leaves every existing iterator on a stream that shows the
// cancelled writes and nothing after them. For the same reason a batch is delivered
// only as far as a second read from a second fresh iterator agrees with the first,
// record by record: a transaction cancelled between GetShardIterator and GetRecords
// would otherwise show its writes to this pass.
func (p *Poller) Poll(ctx context.Context) (delivered int, err error) {
	delivered, handlerErrs, err := p.poll(ctx)
	return delivered, errors.Join(append(handlerErrs, err)...)
}

// Run polls until ctx is done, waiting interval (250ms if not positive) between the
// start of one pass and the next, and returns nil once ctx is done. Handler failures
// are logged and their batches delivered again on a later pass, as Lambda retries;
// so are errors of the DynamoDB Streams API that outlasted the SDK's retries: the next
// pass reads from the same position.
func (p *Poller) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = defaultInterval
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		_, handlerErrs, err := p.poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// A Streams API error that outlasted the SDK's retries: Lambda's poller
			// keeps going, and so does this one; the next pass reads from the same
			// position.
			logger.LogAttrs(ctx, slog.LevelError, "stream read failed, to be retried",
				slog.String("streamArn", p.StreamARN), slog.String("error", err.Error()))
		}
		for _, e := range handlerErrs {
			logger.LogAttrs(ctx, slog.LevelError, "stream batch failed, to be delivered again",
				slog.String("streamArn", p.StreamARN), slog.String("error", e.Error()))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

func (p *Poller) poll(ctx context.Context) (delivered int, handlerErrs []error, err error) {
	if p.Client == nil || p.StreamARN == "" || p.Handler == nil {
		return 0, nil, errors.New("streampoll: a Poller needs a Client, a StreamARN and a Handler")
	}
	if p.positions == nil {
		p.positions = make(map[partition]string)
	}
	shards, err := p.shards(ctx)
	if err != nil {
		return 0, nil, err
	}
	for _, shard := range shards {
		n, shardErrs, err := p.pollShard(ctx, shard)
		delivered += n
		handlerErrs = append(handlerErrs, shardErrs...)
		if err != nil {
			return delivered, handlerErrs, err
		}
	}
	return delivered, handlerErrs, nil
}

// shards lists the ids of every shard of the stream, in the order DescribeStream
// gives them.
func (p *Poller) shards(ctx context.Context) ([]string, error) {
	var ids []string
	var start *string
	for {
		out, err := p.Client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn:             aws.String(p.StreamARN),
			ExclusiveStartShardId: start,
		})
		if err != nil {
			return nil, fmt.Errorf("streampoll: describe stream %s: %w", p.StreamARN, err)
		}
		if out.StreamDescription == nil {
			return ids, nil
		}
		for _, s := range out.StreamDescription.Shards {
			if s.ShardId != nil {
				ids = append(ids, *s.ShardId)
			}
		}
		next := out.StreamDescription.LastEvaluatedShardId
		if next == nil || *next == "" || (start != nil && *next == *start) {
			return ids, nil
		}
		start = next
	}
}

// pollShard delivers the next batch of each partition of one shard, concurrently,
// and moves each partition's position as far as the handler's answer allows. It
// returns how many records it delivered, the handler's failures (one per partition
// whose batch failed), and any error of the Streams API.
func (p *Poller) pollShard(ctx context.Context, shard string) (int, []error, error) {
	n := p.parallelization()
	type result struct {
		delivered  int
		handlerErr *HandlerError
		err        error
	}
	results := make([]result, n)
	poll := func(i int) {
		r := &results[i]
		r.delivered, r.handlerErr, r.err = p.pollPartition(ctx, partition{shard: shard, index: i, n: n})
	}
	if n == 1 {
		poll(0)
	} else {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { poll(i) })
		}
		wg.Wait()
	}
	delivered := 0
	var handlerErrs, errs []error
	for _, r := range results {
		delivered += r.delivered
		if r.handlerErr != nil {
			handlerErrs = append(handlerErrs, r.handlerErr)
		}
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return delivered, handlerErrs, errors.Join(errs...)
}

// pollPartition delivers the next batch of one partition of a shard and moves its
// position as far as the handler's answer allows.
func (p *Poller) pollPartition(ctx context.Context, part partition) (int, *HandlerError, error) {
	first, err := p.read(ctx, part)
	if err != nil || len(first) == 0 {
		return 0, nil, err
	}
	second, err := p.read(ctx, part)
	if err != nil {
		return 0, nil, err
	}
	records := agreed(first, second)
	if len(records) == 0 {
		return 0, nil, nil
	}
	// Like Lambda's filtering, records of other types never reach the handler, and
	// the position moves past them: to just before the first record delivered that
	// failed, or to the end of what was read. So does a partition's position past
	// the records of the other partitions.
	var ev events.DynamoDBEvent
	var before []string // the sequence number before each record delivered
	last, _ := p.position(part)
	for _, r := range records {
		if p.passes(r) && partitionOf(r, part.n) == part.index {
			rec := EventRecord(r)
			rec.EventSourceArn = p.StreamARN
			ev.Records = append(ev.Records, rec)
			before = append(before, last)
		}
		if r.Dynamodb != nil {
			last = aws.ToString(r.Dynamodb.SequenceNumber)
		}
	}
	if len(ev.Records) == 0 {
		p.setPosition(part, last)
		return 0, nil, nil
	}
	resp, err := p.invoke(ctx, ev)
	done := 0
	if err == nil {
		done = handled(ev, resp)
	}
	switch {
	case done == len(ev.Records):
		p.setPosition(part, last)
		p.mu.Lock()
		delete(p.failures, part)
		p.mu.Unlock()
	default:
		if pos := before[done]; pos != "" {
			p.setPosition(part, pos)
		}
		p.failed(ctx, part, ev.Records[done])
	}
	if err != nil {
		return len(ev.Records), &HandlerError{ShardID: part.shard, Partition: part.index, Err: err}, nil
	}
	return len(ev.Records), nil, nil
}

// partitionOf returns the partition, of n, of a record's partition key: the event's
// stream id, from the record's keys.
func partitionOf(r streamtypes.Record, n int) int {
	if n <= 1 || r.Dynamodb == nil {
		return 0
	}
	key, ok := r.Dynamodb.Keys[schema.EventsStreamID].(*streamtypes.AttributeValueMemberS)
	if !ok {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key.Value))
	return int(h.Sum32() % uint32(n))
}

func (p *Poller) parallelization() int {
	return min(max(p.Parallelization, 1), MaxParallelization)
}

// passes reports whether a record is of one of the Poller's Types.
func (p *Poller) passes(r streamtypes.Record) bool {
	if p.Types == nil {
		return true
	}
	if r.Dynamodb == nil {
		return false
	}
	typ, ok := r.Dynamodb.NewImage[schema.EventsType].(*streamtypes.AttributeValueMemberS)
	return ok && slices.Contains(p.Types, typ.Value)
}

// failed counts another failed delivery of rec and, past MaxRetryAttempts or
// MaxRecordAge, hands it to OnFailure and moves the partition's position past it.
func (p *Poller) failed(ctx context.Context, part partition, rec events.DynamoDBEventRecord) {
	if p.MaxRetryAttempts <= 0 && p.MaxRecordAge <= 0 {
		return
	}
	p.mu.Lock()
	if p.failures == nil {
		p.failures = make(map[partition]failure)
	}
	f := p.failures[part]
	if f.sequenceNumber != rec.Change.SequenceNumber {
		f = failure{sequenceNumber: rec.Change.SequenceNumber}
	}
	f.attempts++
	arrived := rec.Change.ApproximateCreationDateTime.Time
	tooMany := p.MaxRetryAttempts > 0 && f.attempts > p.MaxRetryAttempts
	tooOld := p.MaxRecordAge > 0 && time.Since(arrived) > p.MaxRecordAge
	if !tooMany && !tooOld {
		p.failures[part] = f
		p.mu.Unlock()
		return
	}
	delete(p.failures, part)
	p.positions[part] = rec.Change.SequenceNumber
	p.mu.Unlock()
	out := FailedRecord{StreamARN: p.StreamARN, ShardID: part.shard, StartSequenceNumber: rec.Change.SequenceNumber, EndSequenceNumber: rec.Change.SequenceNumber,
		BatchSize: 1, ApproximateArrivalOfFirstRecord: arrived, ApproximateArrivalOfLastRecord: arrived, Attempts: f.attempts}
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(ctx, slog.LevelError, "stream record given up on, sent to the on-failure destination",
		slog.String("shard", part.shard), slog.Int("partition", part.index), slog.String("sequenceNumber", out.StartSequenceNumber), slog.Int("attempts", out.Attempts))
	if p.OnFailure != nil {
		p.OnFailure(ctx, out)
	}
}

// read returns the records of a shard after the partition's position, from a fresh
// iterator.
func (p *Poller) read(ctx context.Context, part partition) ([]streamtypes.Record, error) {
	shard := part.shard
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(p.StreamARN),
		ShardId:           aws.String(shard),
		ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
	}
	if pos, ok := p.position(part); ok {
		in.ShardIteratorType = streamtypes.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = aws.String(pos)
	}
	it, err := p.Client.GetShardIterator(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("streampoll: shard iterator for %s: %w", shard, err)
	}
	if it.ShardIterator == nil {
		return nil, nil
	}
	out, err := p.Client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
		ShardIterator: it.ShardIterator,
		Limit:         aws.Int32(int32(p.batchSize())),
	})
	if err != nil {
		return nil, fmt.Errorf("streampoll: get records of %s: %w", shard, err)
	}
	return out.Records, nil
}

func (p *Poller) batchSize() int {
	switch {
	case p.BatchSize <= 0:
		return DefaultBatchSize
	case p.BatchSize > MaxBatchSize:
		return MaxBatchSize
	default:
		return p.BatchSize
	}
}

// agreed returns the leading records that two reads from the same position agree on:
// the same event id at the same sequence number. moto keeps a cancelled
// transaction's writes only on the copy of the stream that the restore discards, so
// such a write never appears in two reads from different iterators at once.
func agreed(a, b []streamtypes.Record) []streamtypes.Record {
	n := 0
	for n < len(a) && n < len(b) && sameRecord(a[n], b[n]) {
		n++
	}
	return a[:n]
}

func sameRecord(a, b streamtypes.Record) bool {
	if a.Dynamodb == nil || b.Dynamodb == nil {
		return false
	}
	return aws.ToString(a.EventID) == aws.ToString(b.EventID) &&
		aws.ToString(a.Dynamodb.SequenceNumber) == aws.ToString(b.Dynamodb.SequenceNumber)
}

// invoke calls the handler as the Lambda runtime does: a panic is a failed invocation.
func (p *Poller) invoke(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return p.Handler(ctx, ev)
}

// handled returns how many leading records of ev the response lets the position move
// past: all of them, or those before the earliest failure reported. Like Lambda, it
// treats a reported identifier that names no record of the batch as a failure of the
// whole batch.
func handled(ev events.DynamoDBEvent, resp events.DynamoDBEventResponse) int {
	done := len(ev.Records)
	for _, f := range resp.BatchItemFailures {
		i := indexOf(ev, f.ItemIdentifier)
		if i < 0 {
			return 0
		}
		done = min(done, i)
	}
	return done
}

func indexOf(ev events.DynamoDBEvent, sequenceNumber string) int {
	for i, r := range ev.Records {
		if sequenceNumber != "" && r.Change.SequenceNumber == sequenceNumber {
			return i
		}
	}
	return -1
}
