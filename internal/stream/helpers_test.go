package stream_test

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

	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
	"github.com/bikerental/bikerental/internal/stream"
	"github.com/bikerental/bikerental/internal/streampoll"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// fixture is a fresh Events table on moto, a store on it and a client for its stream.
type fixture struct {
	store   *dynamo.Store
	streams *dynamodbstreams.Client
	arn     string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client, table := emulatortest.EventsTable(t)
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("describe table: %v", err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		t.Fatal("the Events table has no stream")
	}
	return &fixture{
		store:   dynamo.New(client, table),
		streams: dynamodbstreams.NewFromConfig(emulatortest.Config(t)),
		arn:     arn,
	}
}

func (f *fixture) append(t *testing.T, streamID string, expected int64, events ...eventstore.Event) []eventstore.Record {
	t.Helper()
	recs, err := f.store.Append(context.Background(), streamID, expected, events...)
	if err != nil {
		t.Fatalf("append to %s at %d: %v", streamID, expected, err)
	}
	return recs
}

var ids atomic.Int64

// event returns an event with every field set and a payload that names it.
func event(typ string) eventstore.Event {
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

// recorder is a streampoll.BatchHandler that keeps every batch it receives and
// answers with respond, or with success if respond is nil. The local poller is how
// these tests get batches read from a real stream.
type recorder struct {
	batches []events.DynamoDBEvent
	respond func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
}

func (r *recorder) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	r.batches = append(r.batches, ev)
	if r.respond == nil {
		return events.DynamoDBEventResponse{}, nil
	}
	return r.respond(len(r.batches), ev)
}

func (f *fixture) poller(r *recorder, batchSize int) *streampoll.Poller {
	return &streampoll.Poller{Client: f.streams, StreamARN: f.arn, BatchSize: batchSize, Handler: r.handle}
}

// decoded decodes every record of a batch, failing the test on any error.
func decoded(t *testing.T, ev events.DynamoDBEvent) []eventstore.Record {
	t.Helper()
	out := make([]eventstore.Record, len(ev.Records))
	for i, rec := range ev.Records {
		r, err := stream.DecodeImage(rec.Change.NewImage)
		if err != nil {
			t.Fatalf("decode record %d (%s): %v", i, rec.Change.SequenceNumber, err)
		}
		out[i] = r
	}
	return out
}

// drain polls until a pass delivers nothing, failing the test if that takes more
// than max passes or five seconds, and returns how many records the passes delivered.
func drain(t *testing.T, p *streampoll.Poller, max int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	total := 0
	for pass := 0; ; pass++ {
		if pass == max || time.Now().After(deadline) {
			t.Fatalf("the stream was not drained after %d passes (%d records)", pass, total)
		}
		n, err := p.Poll(context.Background())
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}
