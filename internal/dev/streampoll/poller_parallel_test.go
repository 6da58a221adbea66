package streampoll_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/dev/streampoll/streampolltest"
)

// partitionOfStream is the rule of ParallelizationFactor as the Poller plays it:
// the partition key's FNV-1a hash modulo the factor.
func partitionOfStream(stream string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(stream))
	return int(h.Sum32() % uint32(n))
}

// parallelFixture appends each events to every one of streams, interleaved, and
// returns the streams of each partition of n.
func parallelFixture(t *testing.T, streams, each, n int) (*streampolltest.Fixture, [][]string) {
	t.Helper()
	f := streampolltest.NewFixture(t)
	byPartition := make([][]string, n)
	for s := range streams {
		id := "bike-" + strconv.Itoa(s)
		byPartition[partitionOfStream(id, n)] = append(byPartition[partitionOfStream(id, n)], id)
	}
	for i, ids := range byPartition {
		if len(ids) == 0 {
			t.Fatalf("no stream of %d falls in partition %d; pick more streams", streams, i)
		}
	}
	for v := range each {
		for s := range streams {
			f.Append(t, "bike-"+strconv.Itoa(s), int64(v), streampolltest.Event("E"))
		}
	}
	return f, byPartition
}

// handledLog keeps, per stream, the versions handled, in the order handled.
type handledLog struct {
	mu       sync.Mutex
	versions map[string][]int64
}

func (l *handledLog) add(ev events.DynamoDBEvent, tb testing.TB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.versions == nil {
		l.versions = map[string][]int64{}
	}
	for _, r := range streampolltest.Decoded(tb, ev) {
		l.versions[r.StreamID] = append(l.versions[r.StreamID], r.Version)
	}
}

// inOrder reports a stream whose versions were not handled exactly 1..each in order.
func (l *handledLog) inOrder(streams []string, each int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var want []int64
	for v := range each {
		want = append(want, int64(v+1))
	}
	for _, s := range streams {
		if got := l.versions[s]; !slices.Equal(got, want) {
			return fmt.Errorf("%s handled %v, want %v", s, got, want)
		}
	}
	return nil
}

// TestPollerDeliversPartitionsConcurrentlyInOrderPerKey plays ParallelizationFactor
// 3: each partition's first batch waits, up to a deadline, until all three are in
// flight at once; every batch holds one partition's streams only; and every stream's
// records are handled once each, in order.
func TestPollerDeliversPartitionsConcurrentlyInOrderPerKey(t *testing.T) {
	const streams, each, n = 12, 4, 3
	f, byPartition := parallelFixture(t, streams, each, n)
	var mu sync.Mutex
	inFlight := 0
	together := make(chan struct{})
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second) // one deadline for every handler
	defer stop()
	var log handledLog
	var mixed []string
	// A batch size of one version of every stream: each partition's first batch
	// has records, and each stream's records come in several batches.
	p := &streampoll.Poller{Client: f.Streams, StreamARN: f.ARN, BatchSize: streams, Parallelization: n,
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			parts := map[int]bool{}
			for _, r := range streampolltest.Decoded(t, ev) {
				parts[partitionOfStream(r.StreamID, n)] = true
			}
			mu.Lock()
			if len(parts) != 1 {
				mixed = append(mixed, fmt.Sprint(parts))
			}
			if inFlight++; inFlight == n {
				close(together)
			}
			mu.Unlock()
			select {
			case <-together:
			case <-wait.Done():
				return events.DynamoDBEventResponse{}, errors.New("the partitions' batches were not delivered at once")
			}
			log.add(ev, t)
			return events.DynamoDBEventResponse{}, nil
		}}

	if _, err := p.Poll(context.Background()); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	streampolltest.Drain(t, p, streams*each)
	if len(mixed) > 0 {
		t.Errorf("batches mixing partitions: %v", mixed)
	}
	var all []string
	for _, ids := range byPartition {
		all = append(all, ids...)
	}
	if err := log.inOrder(all, each); err != nil {
		t.Error(err)
	}
}

// TestPollerFailingPartitionHoldsUpNoOther fails every batch of one partition: the
// other partitions' records are all handled, in order, meanwhile; once it stops
// failing, the failing partition's records are handled from where it stopped, in
// order.
func TestPollerFailingPartitionHoldsUpNoOther(t *testing.T) {
	const streams, each, n = 12, 4, 3
	f, byPartition := parallelFixture(t, streams, each, n)
	var mu sync.Mutex
	failing := true
	var log handledLog
	p := &streampoll.Poller{Client: f.Streams, StreamARN: f.ARN, BatchSize: 4, Parallelization: n,
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			recs := streampolltest.Decoded(t, ev)
			mu.Lock()
			fail := failing && partitionOfStream(recs[0].StreamID, n) == 0
			mu.Unlock()
			if fail {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
			}
			log.add(ev, t)
			return events.DynamoDBEventResponse{}, nil
		}}

	others := append(slices.Clone(byPartition[1]), byPartition[2]...)
	deadline := time.Now().Add(20 * time.Second)
	for log.inOrder(others, each) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the other partitions were held up: %v", log.inOrder(others, each))
		}
		if _, err := p.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	log.mu.Lock()
	for _, s := range byPartition[0] {
		if len(log.versions[s]) > 0 {
			t.Errorf("%s of the failing partition was handled: %v", s, log.versions[s])
		}
	}
	log.mu.Unlock()

	mu.Lock()
	failing = false
	mu.Unlock()
	streampolltest.Drain(t, p, streams*each)
	var all []string
	for _, ids := range byPartition {
		all = append(all, ids...)
	}
	if err := log.inOrder(all, each); err != nil {
		t.Error(err)
	}
}
