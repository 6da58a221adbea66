package dynamo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/eventstoretest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func newStore(t testing.TB) eventstore.Store {
	client, table := emulatortest.EventsTable(t)
	return dynamo.New(client, table)
}

func TestContract(t *testing.T) {
	eventstoretest.RequireEveryCapability(t, newStore(t))
	eventstoretest.Run(t, newStore)
}

func BenchmarkDynamo(b *testing.B) { eventstoretest.Bench(b, newStore) }

// counting wraps the client and counts calls by operation.
type counting struct {
	dynamo.API
	puts, transactions, queries atomic.Int64
}

func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	return c.API.PutItem(ctx, in, o...)
}

func (c *counting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.transactions.Add(1)
	return c.API.TransactWriteItems(ctx, in, o...)
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.API.Query(ctx, in, o...)
}

func (c *counting) total() int64 { return c.puts.Load() + c.transactions.Load() + c.queries.Load() }

func countingStore(t *testing.T) (*counting, *dynamo.Store, *dynamodb.Client, string) {
	client, table := emulatortest.EventsTable(t)
	c := &counting{API: client}
	return c, dynamo.New(c, table), client, table
}

func TestOneEventIsOnePutAndSeveralAreOneTransaction(t *testing.T) {
	c, s, _, _ := countingStore(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, "s", 0, eventstoretest.Event("E", `1`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s", 1, eventstoretest.Event("E", `2`), eventstoretest.Event("E", `3`)); err != nil {
		t.Fatal(err)
	}
	if c.puts.Load() != 1 || c.transactions.Load() != 1 {
		t.Errorf("%d puts and %d transactions, want 1 and 1", c.puts.Load(), c.transactions.Load())
	}
}

func TestAppendStreamsIsOneTransaction(t *testing.T) {
	c, s, _, _ := countingStore(t)
	ctx := context.Background()
	_, err := s.AppendStreams(ctx,
		eventstore.StreamAppend{StreamID: "a", Events: []eventstore.Event{eventstoretest.Event("E", `1`)}},
		eventstore.StreamAppend{StreamID: "b", Events: []eventstore.Event{eventstoretest.Event("E", `1`), eventstoretest.Event("E", `2`)}},
	)
	if err != nil {
		t.Fatal(err)
	}
	// One stream and one event is still a transaction: AppendStreams has one path.
	if _, err := s.AppendStreams(ctx, eventstore.StreamAppend{StreamID: "c", Events: []eventstore.Event{eventstoretest.Event("E", `1`)}}); err != nil {
		t.Fatal(err)
	}
	if c.puts.Load() != 0 || c.transactions.Load() != 2 {
		t.Errorf("%d puts and %d transactions, want 0 and 2", c.puts.Load(), c.transactions.Load())
	}
}

// TestRetriedAppendStreamsOfOwnEventsSucceeds plays a retried transaction across
// streams whose first attempt was written, after its idempotency token expired.
func TestRetriedAppendStreamsOfOwnEventsSucceeds(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	s := dynamo.New(client, table)
	ctx := context.Background()
	appends := []eventstore.StreamAppend{
		{StreamID: "a", Events: []eventstore.Event{eventstoretest.Event("E", `1`), eventstoretest.Event("E", `2`)}},
		{StreamID: "b", Events: []eventstore.Event{eventstoretest.Event("E", `1`)}},
	}
	first, err := s.AppendStreams(ctx, appends...)
	if err != nil {
		t.Fatal(err)
	}
	appends[0].Events[0].RecordedAt, appends[0].Events[1].RecordedAt = first[0].RecordedAt, first[1].RecordedAt
	appends[1].Events[0].RecordedAt = first[2].RecordedAt
	if _, err := s.AppendStreams(ctx, appends...); err != nil {
		t.Fatalf("re-append of the same events at the same versions: %v, want success", err)
	}
	// Stream a all its own, stream b another event: a conflict, and on b.
	appends[1].Events = []eventstore.Event{eventstoretest.Event("E", `1`)}
	_, err = s.AppendStreams(ctx, appends...)
	var conflict *eventstore.ConflictError
	if !errors.As(err, &conflict) || conflict.StreamID != "b" || conflict.ExpectedVersion != 0 {
		t.Fatalf("own events on a, another on b: err = %v, want a ConflictError on b at 0", err)
	}
	for stream, want := range map[string]int{"a": 2, "b": 1} {
		if recs, _ := s.Read(ctx, stream, 0); len(recs) != want {
			t.Fatalf("stream %s holds %d events, want %d", stream, len(recs), want)
		}
	}
}

func TestBadMultiStreamInputNeverReachesDynamoDB(t *testing.T) {
	c, s, _, _ := countingStore(t)
	for _, tc := range eventstoretest.MultiBadInputs() {
		if _, err := s.AppendStreams(context.Background(), tc.Appends...); !errors.Is(err, tc.Err) {
			t.Errorf("%s: err = %v, want %v", tc.Name, err, tc.Err)
		}
	}
	for _, tc := range eventstoretest.BackwardBadInputs() {
		if _, err := s.ReadBackward(context.Background(), tc.StreamID, tc.Before, tc.Limit); !errors.Is(err, tc.Err) {
			t.Errorf("%s: err = %v, want %v", tc.Name, err, tc.Err)
		}
	}
	if n := c.total(); n != 0 {
		t.Errorf("bad input made %d calls to DynamoDB, want 0", n)
	}
}

// TestReadBackwardFollowsShortPages reads 20 items of 100 KB newest first: a Query
// page ends at 1 MB, so the first comes back short of the limit, with more to read.
func TestReadBackwardFollowsShortPages(t *testing.T) {
	c, s, _, _ := countingStore(t)
	eventstoretest.WriteLargeStream(t, s, "big")
	before := c.queries.Load()
	recs, err := s.ReadBackward(context.Background(), "big", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 20 || recs[0].Version != eventstoretest.LargeStreamEvents || recs[19].Version != eventstoretest.LargeStreamEvents-19 {
		t.Fatalf("read %d records, want 20 from version %d down", len(recs), eventstoretest.LargeStreamEvents)
	}
	if q := c.queries.Load() - before; q < 2 {
		t.Errorf("read took %d Query calls, want at least 2 (one per 1 MB page)", q)
	}
	// A small page is one Query, however long the stream.
	before = c.queries.Load()
	if _, err := s.ReadBackward(context.Background(), "big", 0, 3); err != nil {
		t.Fatal(err)
	}
	if q := c.queries.Load() - before; q != 1 {
		t.Errorf("a read of 3 records took %d Query calls, want 1", q)
	}
}

func TestReadFollowsPagination(t *testing.T) {
	c, s, _, _ := countingStore(t)
	eventstoretest.WriteLargeStream(t, s, "big")
	before := c.queries.Load()
	recs, err := s.Read(context.Background(), "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != eventstoretest.LargeStreamEvents {
		t.Fatalf("read %d records, want %d", len(recs), eventstoretest.LargeStreamEvents)
	}
	// 24 items of 100 KB are 2.4 MB: at most 1 MB a page, so at least three pages.
	if q := c.queries.Load() - before; q < 3 {
		t.Errorf("read took %d Query calls, want at least 3 (one per 1 MB page)", q)
	}
}

func TestBadInputNeverReachesDynamoDB(t *testing.T) {
	c, s, _, _ := countingStore(t)
	for _, tc := range eventstoretest.BadInputs() {
		if _, err := s.Append(context.Background(), tc.StreamID, tc.Expected, tc.Events...); !errors.Is(err, tc.Err) {
			t.Errorf("%s: err = %v, want %v", tc.Name, err, tc.Err)
		}
	}
	if n := c.total(); n != 0 {
		t.Errorf("bad input made %d calls to DynamoDB, want 0", n)
	}
}

// TestItemSizeMatchesDynamoDB checks RecordSize against DynamoDB's own limit: a record
// RecordSize puts just under 400 KB is accepted, and the validation refuses the next byte.
func TestItemSizeMatchesDynamoDB(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	e := eventstoretest.Event("E", `""`)
	r := eventstore.Record{StreamID: "s", Version: 1, Event: e}
	r.RecordedAt = r.RecordedAt.UTC()
	fill := eventstore.MaxRecordBytes - dynamo.RecordSize(r)
	e.Data = []byte(`"` + string(make([]byte, 0)) + repeat('x', fill) + `"`)
	r.Event = e
	if got := dynamo.RecordSize(r); got != eventstore.MaxRecordBytes {
		t.Fatalf("RecordSize = %d, want %d", got, eventstore.MaxRecordBytes)
	}
	_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: dynamo.EncodeRecord(r)})
	if err != nil {
		t.Fatalf("DynamoDB refused an item of %d bytes by RecordSize: %v", eventstore.MaxRecordBytes, err)
	}
	e.Data = []byte(`"` + repeat('x', fill+1) + `"`)
	if _, err := dynamo.New(client, table).Append(context.Background(), "s2", 0, e); !errors.Is(err, eventstore.ErrRecordTooLarge) {
		t.Fatalf("one byte more: err = %v, want ErrRecordTooLarge", err)
	}
}

func repeat(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// TestRetriedPutOfOwnEventSucceeds plays the SDK retrying a put whose first attempt was
// written but whose answer was lost: the retry meets its own event and succeeds.
func TestRetriedPutOfOwnEventSucceeds(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	s := dynamo.New(client, table)
	e := eventstoretest.Event("E", `1`)
	first, err := s.Append(context.Background(), "s", 0, e)
	if err != nil {
		t.Fatal(err)
	}
	e.RecordedAt = first[0].RecordedAt
	if _, err := s.Append(context.Background(), "s", 0, e); err != nil {
		t.Fatalf("re-append of the same event at the same version: %v, want success", err)
	}
	other := eventstoretest.Event("E", `1`)
	if _, err := s.Append(context.Background(), "s", 0, other); !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("another event at the same version: err = %v, want ErrConcurrency", err)
	}
	recs, _ := s.Read(context.Background(), "s", 0)
	if len(recs) != 1 {
		t.Fatalf("stream holds %d events, want 1", len(recs))
	}
}

func TestCorruptItemIsReported(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		schema.EventsStreamID: &types.AttributeValueMemberS{Value: "s"},
		schema.EventsVersion:  &types.AttributeValueMemberN{Value: "1"},
		schema.EventsType:     &types.AttributeValueMemberS{Value: "E"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamo.New(client, table).Read(context.Background(), "s", 0); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Fatalf("err = %v, want ErrCorruptRecord", err)
	}
	if _, err := dynamo.New(client, table).ReadBackward(context.Background(), "s", 0, 10); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Fatalf("ReadBackward: err = %v, want ErrCorruptRecord", err)
	}
}

// TestRetriedTransactionOfOwnEventsSucceeds plays a retried transaction whose first
// attempt was written, after its idempotency token expired.
func TestRetriedTransactionOfOwnEventsSucceeds(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	s := dynamo.New(client, table)
	ctx := context.Background()
	events := []eventstore.Event{eventstoretest.Event("E", `1`), eventstoretest.Event("E", `2`)}
	first, err := s.Append(ctx, "s", 0, events...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		events[i].RecordedAt = first[i].RecordedAt
	}
	if _, err := s.Append(ctx, "s", 0, events...); err != nil {
		t.Fatalf("re-append of the same events at the same versions: %v, want success", err)
	}
	mixed := []eventstore.Event{events[0], eventstoretest.Event("E", `2`)}
	if _, err := s.Append(ctx, "s", 0, mixed...); !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("one own and one other event: err = %v, want ErrConcurrency", err)
	}
	if recs, _ := s.Read(ctx, "s", 0); len(recs) != 2 {
		t.Fatalf("stream holds %d events, want 2", len(recs))
	}
}
