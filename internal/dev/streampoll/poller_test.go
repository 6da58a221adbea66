package streampoll_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/dev/streampoll/streampolltest"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func keys(recs ...[]eventstore.Record) []string {
	var out []string
	for _, rs := range recs {
		for _, r := range rs {
			out = append(out, streampolltest.Key(r))
		}
	}
	return out
}

func TestPollerDeliversEachRecordOnce(t *testing.T) {
	f := streampolltest.NewFixture(t)
	r := &streampolltest.Recorder{}
	p := f.Poller(r, 2)

	var want []eventstore.Record
	want = append(want, f.Append(t, "a", 0, streampolltest.Event("A1"))...)
	want = append(want, f.Append(t, "a", 1, streampolltest.Event("A2"))...)
	want = append(want, f.Append(t, "a", 2, streampolltest.Event("A3"))...)
	if n := streampolltest.Drain(t, p, 5); n != 3 {
		t.Errorf("first drain delivered %d records, want 3", n)
	}
	want = append(want, f.Append(t, "b", 0, streampolltest.Event("B1"), streampolltest.Event("B2"), streampolltest.Event("B3"), streampolltest.Event("B4"))...)
	want = append(want, f.Append(t, "a", 3, streampolltest.Event("A4"))...)
	want = append(want, f.Append(t, "b", 4, streampolltest.Event("B5"), streampolltest.Event("B6"))...)
	if n := streampolltest.Drain(t, p, 6); n != 7 {
		t.Errorf("second drain delivered %d records, want 7", n)
	}
	if n := streampolltest.Drain(t, p, 1); n != 0 {
		t.Errorf("a drained stream delivered %d records", n)
	}

	if got := r.Delivered(t); !reflect.DeepEqual(got, keys(want)) {
		t.Errorf("delivered %v\nwant %v", got, keys(want))
	}
	for _, b := range r.Batches {
		if len(b.Records) > 2 {
			t.Errorf("a batch of %d records, more than the batch size", len(b.Records))
		}
		for _, rec := range b.Records {
			if rec.EventName != "INSERT" || rec.EventSource != "aws:dynamodb" || rec.EventSourceArn != f.ARN || rec.Change.SequenceNumber == "" {
				t.Errorf("record %+v does not look like Lambda's", rec)
			}
		}
	}
}

func TestPollerRedeliversFromTheFirstFailure(t *testing.T) {
	failing := func(indexes ...int) func(int, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			var resp events.DynamoDBEventResponse
			if call == 1 {
				for _, i := range indexes {
					id := "not-in-the-batch"
					if i < len(ev.Records) {
						id = ev.Records[i].Change.SequenceNumber
					}
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: id})
				}
			}
			return resp, nil
		}
	}
	tests := []struct {
		name    string
		respond func(int, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
		// wantAgain are the versions delivered by the second poll.
		wantAgain   []int64
		wantPollErr bool
	}{
		{name: "third record fails", respond: failing(2), wantAgain: []int64{3, 4, 5}},
		{name: "first record fails", respond: failing(0), wantAgain: []int64{1, 2, 3, 4, 5}},
		{name: "last record fails", respond: failing(4), wantAgain: []int64{5}},
		{name: "the earliest of several failures counts", respond: failing(3, 1), wantAgain: []int64{2, 3, 4, 5}},
		{name: "an identifier not in the batch fails it all", respond: failing(99), wantAgain: []int64{1, 2, 3, 4, 5}},
		{
			name: "the stream functions' batch with a handler failing on version 4",
			respond: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return awslambda.Stream(dynamo.StreamRecord, func(_ context.Context, r deadlines.Record) error {
					if call == 1 && r.Position == 4 {
						return errors.New("not yet")
					}
					return nil
				}, awslambda.Logger(slog.New(slog.DiscardHandler)))(context.Background(), ev)
			},
			wantAgain: []int64{4, 5},
		},
		{
			name: "handler error: the whole batch again",
			respond: func(call int, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				if call == 1 {
					return events.DynamoDBEventResponse{}, errors.New("function error")
				}
				return events.DynamoDBEventResponse{}, nil
			},
			wantAgain: []int64{1, 2, 3, 4, 5}, wantPollErr: true,
		},
		{
			name: "handler panic: the whole batch again",
			respond: func(call int, _ events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				if call == 1 {
					panic("function bug")
				}
				return events.DynamoDBEventResponse{}, nil
			},
			wantAgain: []int64{1, 2, 3, 4, 5}, wantPollErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := streampolltest.NewFixture(t)
			for v := range 5 {
				f.Append(t, "s", int64(v), streampolltest.Event("E"))
			}
			r := &streampolltest.Recorder{Respond: tc.respond}
			p := f.Poller(r, 10)
			ctx := context.Background()

			n, err := p.Poll(ctx)
			var handlerErr *streampoll.HandlerError
			if n != 5 || (err != nil) != tc.wantPollErr || (tc.wantPollErr && !errors.As(err, &handlerErr)) {
				t.Fatalf("first poll: %d records, %v", n, err)
			}
			if _, err := p.Poll(ctx); err != nil {
				t.Fatalf("second poll: %v", err)
			}
			if len(r.Batches) != 2 {
				t.Fatalf("%d batches, want 2", len(r.Batches))
			}
			var again []int64
			for _, rec := range streampolltest.Decoded(t, r.Batches[1]) {
				again = append(again, rec.Version)
			}
			if !reflect.DeepEqual(again, tc.wantAgain) {
				t.Errorf("second poll delivered versions %v, want %v", again, tc.wantAgain)
			}
			if n := streampolltest.Drain(t, p, 1); n != 0 {
				t.Errorf("third poll delivered %d records, want none", n)
			}
		})
	}
}

// interfering is a StreamsAPI that runs interfere once, just before a GetRecords.
type interfering struct {
	streampoll.StreamsAPI
	interfere func()
}

func (c *interfering) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if c.interfere != nil {
		c.interfere()
		c.interfere = nil
	}
	return c.StreamsAPI.GetRecords(ctx, in, o...)
}

// TestPollerIgnoresCancelledTransactions covers moto's quirk: a cancelled transaction
// leaves its writes on a copy of the stream that existing iterators keep reading, and
// later writes reuse their sequence numbers.
func TestPollerIgnoresCancelledTransactions(t *testing.T) {
	tests := []struct {
		name string
		// during says whether the cancelled transaction happens during a poll,
		// between its GetShardIterator and GetRecords, rather than between polls.
		during bool
	}{
		{"cancelled between polls", false},
		{"cancelled between GetShardIterator and GetRecords", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := streampolltest.NewFixture(t)
			ctx := context.Background()
			client := &interfering{StreamsAPI: f.Streams}
			r := &streampolltest.Recorder{}
			p := &streampoll.Poller{Client: client, StreamARN: f.ARN, Handler: r.Handle}

			want := f.Append(t, "s", 0, streampolltest.Event("E1"), streampolltest.Event("E2"))
			if n := streampolltest.Drain(t, p, 2); n != 2 {
				t.Fatalf("delivered %d records, want 2", n)
			}
			var phantoms []string
			cancelled := func() {
				stale := []eventstore.Event{streampolltest.Event("Stale2"), streampolltest.Event("Stale3"), streampolltest.Event("Stale4")}
				for _, e := range stale {
					phantoms = append(phantoms, e.ID)
				}
				if _, err := f.Store.Append(ctx, "s", 1, stale...); !errors.Is(err, eventstore.ErrConcurrency) {
					t.Errorf("stale append: %v, want a concurrency conflict", err)
				}
			}
			if tc.during {
				client.interfere = cancelled
			} else {
				cancelled()
			}
			if n := streampolltest.Drain(t, p, 1); n != 0 {
				t.Errorf("the cancelled transaction delivered %d records", n)
			}
			want = append(want, f.Append(t, "s", 2, streampolltest.Event("E3"), streampolltest.Event("E4"))...)
			want = append(want, f.Append(t, "s", 4, streampolltest.Event("E5"))...)
			streampolltest.Drain(t, p, 5)

			if got := r.Delivered(t); !reflect.DeepEqual(got, keys(want)) {
				t.Errorf("delivered %v\nwant %v", got, keys(want))
			}
			for _, b := range r.Batches {
				for _, rec := range streampolltest.Decoded(t, b) {
					for _, id := range phantoms {
						if rec.ID == id {
							t.Errorf("the cancelled event %s (%s) was delivered", id, rec.Type)
						}
					}
				}
			}
		})
	}
}

// paged is a StreamsAPI whose DescribeStream gives an empty first page and the
// stream's shards on the second, as DynamoDB may.
type paged struct {
	streampoll.StreamsAPI
	pages int
}

func (c *paged) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	c.pages++
	if in.ExclusiveStartShardId == nil {
		return &dynamodbstreams.DescribeStreamOutput{StreamDescription: &streamtypes.StreamDescription{
			StreamArn:            in.StreamArn,
			LastEvaluatedShardId: aws.String("shardId-before-the-first"),
		}}, nil
	}
	if aws.ToString(in.ExclusiveStartShardId) != "shardId-before-the-first" {
		return nil, fmt.Errorf("unexpected ExclusiveStartShardId %q", aws.ToString(in.ExclusiveStartShardId))
	}
	return c.StreamsAPI.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: in.StreamArn}, o...)
}

func TestPollerFollowsShardPages(t *testing.T) {
	f := streampolltest.NewFixture(t)
	want := f.Append(t, "s", 0, streampolltest.Event("E1"), streampolltest.Event("E2"))
	client := &paged{StreamsAPI: f.Streams}
	r := &streampolltest.Recorder{}
	p := &streampoll.Poller{Client: client, StreamARN: f.ARN, Handler: r.Handle}
	if n, err := p.Poll(context.Background()); n != 2 || err != nil {
		t.Fatalf("poll: %d records, %v", n, err)
	}
	if got := r.Delivered(t); !reflect.DeepEqual(got, keys(want)) {
		t.Errorf("delivered %v, want %v", got, keys(want))
	}
	if client.pages != 2 {
		t.Errorf("%d DescribeStream calls, want 2", client.pages)
	}
}

func TestPollerNeedsItsFields(t *testing.T) {
	f := streampolltest.NewFixture(t)
	r := &streampolltest.Recorder{}
	tests := map[string]*streampoll.Poller{
		"no client":  {StreamARN: f.ARN, Handler: r.Handle},
		"no stream":  {Client: f.Streams, Handler: r.Handle},
		"no handler": {Client: f.Streams, StreamARN: f.ARN},
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := p.Poll(context.Background()); err == nil {
				t.Error("Poll succeeded")
			}
		})
	}
}

func TestRun(t *testing.T) {
	t.Run("delivers until the context ends", func(t *testing.T) {
		f := streampolltest.NewFixture(t)
		want := keys(f.Append(t, "s", 0, streampolltest.Event("E1"), streampolltest.Event("E2"), streampolltest.Event("E3")))
		var mu sync.Mutex
		var got []string
		all := make(chan struct{})
		p := &streampoll.Poller{Client: f.Streams, StreamARN: f.ARN, BatchSize: 1,
			Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, rec := range ev.Records {
					r, err := dynamo.DecodeImage(rec.Change.NewImage)
					if err != nil {
						t.Error(err)
					}
					got = append(got, streampolltest.Key(r))
				}
				if len(got) == len(want) {
					close(all)
				}
				return events.DynamoDBEventResponse{}, nil
			}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx, 5*time.Millisecond) }()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			t.Error("not every record was delivered within five seconds")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("delivered %v, want %v", got, want)
		}
	})
	t.Run("keeps going after a Streams API error", func(t *testing.T) {
		f := streampolltest.NewFixture(t)
		r := &streampolltest.Recorder{}
		var logs strings.Builder
		p := &streampoll.Poller{Client: f.Streams, Handler: r.Handle, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			StreamARN: "arn:aws:dynamodb:us-east-1:123456789012:table/no-such-table/stream/2026-01-01T00:00:00.000"}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := p.Run(ctx, 10*time.Millisecond); err != nil || ctx.Err() == nil {
			t.Errorf("Run returned %v before its context ended, want it to keep polling", err)
		}
		if !strings.Contains(logs.String(), "stream read failed, to be retried") {
			t.Errorf("the failed reads were not logged: %s", logs.String())
		}
	})
}

// TestPollerDeliversOnlyTheTypesItIsFilteredFor plays an event source mapping's
// filter: other types never reach the handler, the position moves past them, and a
// failure among the delivered records is redelivered from itself.
func TestPollerDeliversOnlyTheTypesItIsFilteredFor(t *testing.T) {
	f := streampolltest.NewFixture(t)
	calls := 0
	r := &streampolltest.Recorder{Respond: func(call int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		calls = call
		if call == 1 { // the second wanted record fails once
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[1].Change.SequenceNumber}}}, nil
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	p := f.Poller(r, 10)
	p.Types = []string{"Wanted"}
	recs := f.Append(t, "a", 0, streampolltest.Event("Other"), streampolltest.Event("Wanted"), streampolltest.Event("Other"),
		streampolltest.Event("Wanted"), streampolltest.Event("Other"))
	streampolltest.Drain(t, p, 5)
	var got []string
	for _, b := range r.Batches {
		for _, rec := range b.Records {
			got = append(got, rec.Change.NewImage["type"].String()+"@"+rec.Change.Keys["version"].Number())
		}
	}
	want := []string{"Wanted@2", "Wanted@4", "Wanted@4"}
	if !reflect.DeepEqual(got, want) || calls != 2 {
		t.Errorf("delivered %v in %d batches, want %v in 2", got, calls, want)
	}
	if n := streampolltest.Drain(t, p, 2); n != 0 || len(recs) != 5 {
		t.Errorf("filtered records came back: %d", n)
	}
}
