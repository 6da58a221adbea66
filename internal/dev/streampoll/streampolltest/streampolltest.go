// Package streampolltest gives tests a fresh Events table with its DynamoDB stream on
// the local AWS emulator, events to append to it, and a streampoll.Poller whose
// batches are recorded, so that tests read what a real stream delivers.
//
// It is for tests only. The test binaries that use it must run their tests through
// emulatortest.Main.
package streampolltest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Fixture is a fresh Events table on the emulator, a store on it and a client for
// its stream.
type Fixture struct {
	Store   *dynamo.Store
	Streams *dynamodbstreams.Client
	// ARN is the table's latest stream.
	ARN string
}

// NewFixture creates an Events table for this test alone, deleted when it ends, and
// fails the test if the table has no stream.
func NewFixture(tb testing.TB) *Fixture {
	tb.Helper()
	client, table := emulatortest.EventsTable(tb)
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		tb.Fatalf("describe table: %v", err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		tb.Fatal("the Events table has no stream")
	}
	return &Fixture{
		Store:   dynamo.New(client, table),
		Streams: dynamodbstreams.NewFromConfig(emulatortest.Config(tb)),
		ARN:     arn,
	}
}

// Append appends events to streamID at the expected version and returns their
// records, failing the test on any error.
func (f *Fixture) Append(tb testing.TB, streamID string, expected int64, events ...eventstore.Event) []eventstore.Record {
	tb.Helper()
	recs, err := f.Store.Append(context.Background(), streamID, expected, events...)
	if err != nil {
		tb.Fatalf("append to %s at %d: %v", streamID, expected, err)
	}
	return recs
}

// Poller returns a poller of the fixture's stream that hands batches of at most
// batchSize records (streampoll.DefaultBatchSize if zero) to r.
func (f *Fixture) Poller(r *Recorder, batchSize int) *streampoll.Poller {
	return &streampoll.Poller{Client: f.Streams, StreamARN: f.ARN, BatchSize: batchSize, Handler: r.Handle}
}

var ids atomic.Int64

// Event returns an event of type typ with every field set, an id no other event in
// this process has, and a payload that names it ("PAYLOAD-n"), so that tests can
// tell whether a payload reached a log.
func Event(typ string) eventstore.Event {
	n := ids.Add(1)
	return eventstore.Event{
		ID:            fmt.Sprintf("evt-%d-%d", time.Now().UnixNano(), n),
		Type:          typ,
		Data:          json.RawMessage(fmt.Sprintf(`{"secret":"PAYLOAD-%d","n":%d}`, n, n)),
		Tags:          []string{"rental:r1", fmt.Sprintf("n:%d", n)},
		RecordedAt:    time.Date(2026, 1, 2, 3, 4, 5, int(n), time.UTC),
		CorrelationID: "corr-1",
		CausationID:   fmt.Sprintf("cause-%d", n),
	}
}

// Recorder is a streampoll.BatchHandler, as its Handle method, that keeps every
// batch it receives. It is not safe for concurrent use; a Poller without
// Parallelization hands it one batch at a time.
type Recorder struct {
	// Batches are the batches received, in order.
	Batches []events.DynamoDBEvent
	// Respond answers each batch, given how many batches have been received with
	// this one; nil answers every batch with success.
	Respond func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
}

// Handle records ev and answers with Respond.
func (r *Recorder) Handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	r.Batches = append(r.Batches, ev)
	if r.Respond == nil {
		return events.DynamoDBEventResponse{}, nil
	}
	return r.Respond(len(r.Batches), ev)
}

// Delivered lists the records of every batch received, by Key, in delivery order,
// failing the test if one does not decode.
func (r *Recorder) Delivered(tb testing.TB) []string {
	tb.Helper()
	var keys []string
	for _, b := range r.Batches {
		for _, rec := range Decoded(tb, b) {
			keys = append(keys, Key(rec))
		}
	}
	return keys
}

// Decoded decodes every record of a batch, failing the test on any error.
func Decoded(tb testing.TB, ev events.DynamoDBEvent) []eventstore.Record {
	tb.Helper()
	out := make([]eventstore.Record, len(ev.Records))
	for i, rec := range ev.Records {
		r, err := dynamo.DecodeImage(rec.Change.NewImage)
		if err != nil {
			tb.Fatalf("decode record %d (%s): %v", i, rec.Change.SequenceNumber, err)
		}
		out[i] = r
	}
	return out
}

// Drain polls until a pass delivers nothing and returns how many records the passes
// delivered. It fails the test if a poll fails, or if draining takes maxPasses passes
// or five seconds.
func Drain(tb testing.TB, p *streampoll.Poller, maxPasses int) int {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	total := 0
	for pass := 0; ; pass++ {
		if pass == maxPasses || time.Now().After(deadline) {
			tb.Fatalf("the stream was not drained after %d passes (%d records)", pass, total)
		}
		n, err := p.Poll(context.Background())
		if err != nil {
			tb.Fatalf("poll: %v", err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// Key names a record by its place: "stream@version".
func Key(r eventstore.Record) string { return fmt.Sprintf("%s@%d", r.StreamID, r.Version) }
