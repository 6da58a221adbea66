// Package throughput measures how many rental requests one shard of the Events
// table's stream sustains through the rental-payment process and the projector, as
// the functions build them, with every DynamoDB call and every call to the payment
// provider given a simulated latency. It is the engine of cmd/throughputbench (make
// bench-throughput).
//
// The rentals are real histories: bikes registered and requested through the
// command handler on the in-memory event store. The records the process's event
// source mapping passes (its FilterCriteria, internal/app/eventfilter) are delivered to
// the process's stream handler (awslambda.Stream, as the process function builds
// it) in stream batches, split by partition key over the ParallelizationFactor's
// concurrent batches as Lambda splits them; then the records the projector's
// mapping passes (the requests and the payments they prepared) go the same way to
// the projector's (awslambda.Projector over the Deadlines table). Only time is
// simulated: the latencies are sleeps, the store is the in-memory one, and the
// Deadlines table answers every write with success.
package throughput

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

// Config is one measurement.
type Config struct {
	// Rentals is how many rentals are requested.
	Rentals int
	// BatchSize is the event source mapping's BatchSize (100 in the template).
	BatchSize int
	// Concurrency is STREAM_CONCURRENCY: streams handled at once within a batch.
	Concurrency int
	// Parallelization is the mapping's ParallelizationFactor: concurrent batches
	// of the shard.
	Parallelization int
	// StoreLatency is added to every call to the event store and to the
	// projection's table.
	StoreLatency time.Duration
	// ProviderLatency is how long the payment provider takes to create a payment.
	ProviderLatency time.Duration
	// Timeout is the invocation's timeout, which each batch's context gets (the
	// template's 60 s).
	Timeout time.Duration
}

// Result is what one measurement found.
type Result struct {
	Config
	// Process and Projector are how long each consumer took over all its records.
	Process, Projector time.Duration
	// ProcessRecords and ProjectorRecords are how many records each handled.
	ProcessRecords, ProjectorRecords int
}

// ProcessRate is rental requests (BikeRequested records) per second.
func (r Result) ProcessRate() float64 { return float64(r.ProcessRecords) / r.Process.Seconds() }

// ProjectorRate is rentals per second through the projector, over the records it
// sees of a rental's start: the request (which opens the process's row) and the
// payment it prepared (which opens the payment's row).
func (r Result) ProjectorRate() float64 {
	return float64(r.Rentals) / r.Projector.Seconds()
}

// Run makes one measurement. It fails if any record is not handled, or if a rental
// does not end with its process started and its payment prepared.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Rentals < 1 || cfg.BatchSize < 1 || cfg.Parallelization < 1 || cfg.Concurrency < 1 || cfg.Timeout <= 0 {
		return Result{}, fmt.Errorf("throughput: incomplete config %+v", cfg)
	}
	logger := slog.New(slog.DiscardHandler)
	store := &slowStore{m: eventstore.NewMemory()}
	commands := command.New(store, command.WithProvider(slowProvider{Provider: generic.Provider{}, latency: cfg.ProviderLatency}),
		command.WithProviderTimeout(command.DefaultProviderTimeout))
	process, projector, err := handlers(store, commands, slowTable{latency: cfg.StoreLatency}, cfg.Concurrency, logger)
	if err != nil {
		return Result{}, err
	}

	rentals := make([]string, cfg.Rentals)
	for i := range cfg.Rentals {
		bike := "bike-" + strconv.Itoa(i)
		rentals[i] = rental.NewRentalID(bike, fmt.Sprintf("%022d", i))
		if _, err := commands.Bike(ctx, rental.RegisterBike{BikeID: bike}, command.Meta{CausationID: "setup"}); err != nil {
			return Result{}, err
		}
		if _, err := commands.Bike(ctx, rental.RequestBike{BikeID: bike, Renter: "renter-" + strconv.Itoa(i), RentalID: rentals[i]}, command.Meta{CausationID: "setup"}); err != nil {
			return Result{}, err
		}
	}
	res := Result{Config: cfg}
	store.delay.Store(int64(cfg.StoreLatency))

	records := store.since(0, eventfilter.Types(eventfilter.Process))
	res.ProcessRecords = len(records)
	if res.Process, err = deliver(ctx, cfg, records, process); err != nil {
		return res, fmt.Errorf("process: %w", err)
	}
	for _, id := range rentals {
		if s, _, err := commands.LoadPayment(ctx, payment.ReferenceFor(id)); err != nil || s.Status != payment.StatusPrepared {
			return res, fmt.Errorf("rental %s: payment %q, %v; want it prepared", id, s.Status, err)
		}
	}

	records = store.since(0, eventfilter.Types(eventfilter.Projector))
	res.ProjectorRecords = len(records)
	if res.Projector, err = deliver(ctx, cfg, records, projector); err != nil {
		return res, fmt.Errorf("projector: %w", err)
	}
	return res, nil
}

// handlers returns the process's and the projector's stream handlers as their
// functions build them (processfn.ProcessFunction, projectorfn.ProjectorFunction),
// from an environment that sets STREAM_CONCURRENCY alone: the process over store
// and commands, the projector writing to table through the Deadlines table of the
// service's kinds.
func handlers(store eventstore.Store, commands *command.Handler, table deadlinetable.API, concurrency int, logger *slog.Logger) (process, projector wiring.StreamHandler, err error) {
	getenv := func(k string) string {
		if k == wiring.EnvStreamConcurrency {
			return strconv.Itoa(concurrency)
		}
		return ""
	}
	p, err := wiring.Process(store, commands, getenv, logger)
	if err != nil {
		return nil, nil, err
	}
	kinds, err := wiring.DeadlineKinds(getenv, deadlinekinds.Receivers{})
	if err != nil {
		return nil, nil, err
	}
	deadlines, err := deadlinetable.New(table, "Deadlines", kinds)
	if err != nil {
		return nil, nil, err
	}
	processBatch, err := streamfn.Batch(getenv, eventfilter.Process, logger)
	if err != nil {
		return nil, nil, err
	}
	projectorBatch, err := streamfn.Batch(getenv, eventfilter.Projector, logger)
	if err != nil {
		return nil, nil, err
	}
	return awslambda.Stream(dynamo.StreamRecord, streamfn.Handle(p.Handle), processBatch...),
		awslambda.Projector(deadlines, dynamo.StreamRecord, projectorBatch...), nil
}

// deliver hands records to h as one shard's event source mapping would: split by
// partition key over cfg.Parallelization sequences, each delivered in batches of
// cfg.BatchSize one after another, the sequences concurrently. It returns the time
// it took, and an error if any batch reported a failure.
func deliver(ctx context.Context, cfg Config, records []events.DynamoDBEventRecord, h wiring.StreamHandler) (time.Duration, error) {
	parts := make([][]events.DynamoDBEventRecord, cfg.Parallelization)
	for _, r := range records {
		k := partitionOf(r.Change.Keys, cfg.Parallelization)
		parts[k] = append(parts[k], r)
	}
	start := time.Now()
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() {
			for len(part) > 0 {
				n := min(cfg.BatchSize, len(part))
				batchCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				resp, err := h(batchCtx, events.DynamoDBEvent{Records: part[:n]})
				cancel()
				if err != nil {
					errs[i] = err
					return
				}
				if len(resp.BatchItemFailures) > 0 {
					errs[i] = fmt.Errorf("a batch failed at %s", resp.BatchItemFailures[0].ItemIdentifier)
					return
				}
				part = part[n:]
			}
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// partitionOf is the partition, of n, of a record's partition key, the event's
// stream id, as streampoll plays ParallelizationFactor.
func partitionOf(keys map[string]events.DynamoDBAttributeValue, n int) int {
	h := fnv.New32a()
	h.Write([]byte(keys["streamId"].String()))
	return int(h.Sum32() % uint32(n))
}

// slowStore is the in-memory event store with a latency on every call. It keeps
// every record appended, in order, for the stream.
type slowStore struct {
	m     *eventstore.Memory
	delay atomic.Int64

	mu       sync.Mutex
	appended []eventstore.Record
}

var (
	_ eventstore.MultiStreamStore = (*slowStore)(nil)
	_ eventstore.BackwardReader   = (*slowStore)(nil)
)

func (s *slowStore) wait(ctx context.Context) error {
	d := time.Duration(s.delay.Load())
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowStore) keep(recs []eventstore.Record, err error) ([]eventstore.Record, error) {
	if err == nil {
		s.mu.Lock()
		s.appended = append(s.appended, recs...)
		s.mu.Unlock()
	}
	return recs, err
}

func (s *slowStore) Append(ctx context.Context, streamID string, expected int64, evs ...eventstore.Event) ([]eventstore.Record, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.keep(s.m.Append(ctx, streamID, expected, evs...))
}

func (s *slowStore) AppendStreams(ctx context.Context, appends ...eventstore.StreamAppend) ([]eventstore.Record, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.keep(s.m.AppendStreams(ctx, appends...))
}

func (s *slowStore) Read(ctx context.Context, streamID string, from int64) ([]eventstore.Record, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.m.Read(ctx, streamID, from)
}

func (s *slowStore) ReadBackward(ctx context.Context, streamID string, before int64, limit int) ([]eventstore.Record, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.m.ReadBackward(ctx, streamID, before, limit)
}

// since returns the records appended from the from'th on whose types are among
// types, as the stream delivers them after a mapping's filter.
func (s *slowStore) since(from int, types []string) []events.DynamoDBEventRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	wanted := map[string]bool{}
	for _, t := range types {
		wanted[t] = true
	}
	var out []events.DynamoDBEventRecord
	for i, r := range s.appended[from:] {
		if !wanted[r.Type] {
			continue
		}
		image := dynamo.StreamImage(dynamo.EncodeRecord(r))
		out = append(out, events.DynamoDBEventRecord{
			EventID: strconv.Itoa(from + i), EventName: "INSERT", EventSource: "aws:dynamodb", EventVersion: "1.1",
			Change: events.DynamoDBStreamRecord{
				Keys:     map[string]events.DynamoDBAttributeValue{"streamId": image["streamId"], "version": image["version"]},
				NewImage: image, SequenceNumber: fmt.Sprintf("%021d", from+i+1), StreamViewType: "NEW_IMAGE",
			},
		})
	}
	return out
}

// slowProvider creates payments after a latency, as a provider that holds the
// money (Stripe) answers; it cannot cancel or refund.
type slowProvider struct {
	generic.Provider
	latency time.Duration
}

func (p slowProvider) CreatePayment(ctx context.Context, reference string, _ int64, _ string) (payment.Created, error) {
	t := time.NewTimer(p.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return payment.Created{PaymentID: "pi_" + reference}, nil
	case <-ctx.Done():
		return payment.Created{}, ctx.Err()
	}
}

// slowTable is the Deadlines table with a latency on every call, answering
// every write with success.
type slowTable struct{ latency time.Duration }

func (t slowTable) sleep(ctx context.Context) error {
	timer := time.NewTimer(t.latency)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t slowTable) UpdateItem(ctx context.Context, _ *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, t.sleep(ctx)
}

func (t slowTable) Query(ctx context.Context, _ *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, t.sleep(ctx)
}

func (t slowTable) GetItem(ctx context.Context, _ *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, t.sleep(ctx)
}
