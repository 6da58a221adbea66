package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/streampoll/streampolltest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

// insertBatch appends n single events to one stream and returns them as Lambda
// would deliver them: one batch read from the table's stream.
func insertBatch(t *testing.T, n int) events.DynamoDBEvent {
	t.Helper()
	f := streampolltest.NewFixture(t)
	for v := range n {
		f.Append(t, "bike-1", int64(v), streampolltest.Event("E"))
	}
	r := &streampolltest.Recorder{}
	if got, err := f.Poller(r, n).Poll(context.Background()); err != nil || got != n {
		t.Fatalf("poll delivered %d records, %v; want %d", got, err, n)
	}
	return r.Batches[0]
}

// logLines parses the JSON log lines in buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func anyLineHas(lines []map[string]any, want map[string]any) bool {
	return slices.ContainsFunc(lines, func(l map[string]any) bool {
		for k, v := range want {
			if l[k] != v {
				return false
			}
		}
		return true
	})
}

// eventID returns the id of the event of the batch's i-th stream record.
func eventID(t *testing.T, ev events.DynamoDBEvent, i int) string {
	t.Helper()
	r, err := dynamo.DecodeImage(ev.Records[i].Change.NewImage)
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// TestHandleBatch runs stream batches of the Events table, as Lambda delivers them,
// through the stream functions' handler (awslambda.Stream over StreamRecord, the
// consumer's handler given the event store's record by wiring.Handle): every
// event is handled, MODIFY and REMOVE are skipped, and a record that fails (a
// handler's error or panic, an image that does not decode, no time left) is the
// one reported for delivery again. An image that does not decode but names its
// stream holds up that stream alone; one that names none, the rest of the batch.
// Failures are logged with the record's sequence number, stream, position and
// type, never its data.
func TestHandleBatch(t *testing.T) {
	five := insertBatch(t, 5)
	mixed := imageSample(t, "batch.json") // INSERT bike-b1 v1, MODIFY, REMOVE, INSERT bike-b1 v2
	corrupt := imageSample(t, "corrupt.json")
	byID := map[string]events.DynamoDBEventRecord{}
	for _, rec := range corrupt.Records {
		byID[rec.EventID] = rec
	}
	recordedAtInvalid, noStream := byID["recorded-at-invalid"], byID["stream-id-missing"]
	failOn := func(version int64) func(context.Context, eventstore.Record) error {
		return func(_ context.Context, r eventstore.Record) error {
			if r.Version == version {
				return errors.New("boom")
			}
			return nil
		}
	}
	ok := func(context.Context, eventstore.Record) error { return nil }
	withinMargin := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), awslambda.DefaultStreamMargin/2)
	}
	cancelled := func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}

	tests := []struct {
		name    string
		batch   events.DynamoDBEvent
		ctx     func() (context.Context, context.CancelFunc)
		handler func(context.Context, eventstore.Record) error
		// wantHandled are the indexes of the records the handler completed;
		// wantFailed is the index of the record reported, or -1.
		wantHandled []int
		wantFailed  int
		// wantLogged are attributes the failure's log line must carry.
		wantLogged map[string]any
	}{
		{
			name: "all handled", batch: five, handler: ok,
			wantHandled: []int{0, 1, 2, 3, 4}, wantFailed: -1,
		},
		{
			name: "handler fails on the third of five", batch: five, handler: failOn(3),
			wantHandled: []int{0, 1}, wantFailed: 2,
			wantLogged: map[string]any{"stream": "bike-1", "position": 3.0, "type": "E", "error": "boom"},
		},
		{
			name: "MODIFY and REMOVE are skipped", batch: mixed, handler: ok,
			wantHandled: []int{0, 3}, wantFailed: -1,
		},
		{
			name:    "corrupt image is reported",
			batch:   events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{mixed.Records[0], recordedAtInvalid, mixed.Records[3]}},
			handler: ok, wantHandled: []int{0, 2}, wantFailed: 1, // bike-b1's second record is another stream's
			wantLogged: map[string]any{"stream": "bike-b2", "sequenceNumber": recordedAtInvalid.Change.SequenceNumber},
		},
		{
			name:    "corrupt image of no stream holds up the rest of the batch",
			batch:   events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{mixed.Records[0], noStream, mixed.Records[3]}},
			handler: ok, wantHandled: []int{0}, wantFailed: 1,
			wantLogged: map[string]any{"sequenceNumber": noStream.Change.SequenceNumber},
		},
		{
			name:    "record without an image is reported by sequence number",
			batch:   events.DynamoDBEvent{Records: corrupt.Records[:1]},
			handler: ok, wantFailed: 0,
			wantLogged: map[string]any{"sequenceNumber": corrupt.Records[0].Change.SequenceNumber},
		},
		{
			name: "panicking handler is a failure", batch: five,
			handler: func(_ context.Context, r eventstore.Record) error {
				if r.Version == 2 {
					panic("handler bug")
				}
				return nil
			},
			wantHandled: []int{0}, wantFailed: 1,
			wantLogged: map[string]any{"stream": "bike-1", "position": 2.0},
		},
		{
			name: "deadline within the margin: nothing is started", batch: five, ctx: withinMargin,
			handler: ok, wantFailed: 0,
		},
		{
			name: "cancelled context: nothing is started", batch: five, ctx: cancelled,
			handler: ok, wantFailed: 0,
		},
		{
			name: "empty batch", batch: events.DynamoDBEvent{}, handler: ok, wantFailed: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, nil))
			var mu sync.Mutex
			var handled []string
			h := func(ctx context.Context, r eventstore.Record) error {
				if err := tc.handler(ctx, r); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, r.ID)
				return nil
			}

			resp, err := awslambda.Stream(dynamo.StreamRecord, streamfn.Handle(h), awslambda.Logger(logger))(ctx, tc.batch)
			if err != nil {
				t.Fatal(err)
			}

			var wantHandled []string
			for _, i := range tc.wantHandled {
				wantHandled = append(wantHandled, eventID(t, tc.batch, i))
			}
			// Which records were handled; the order within a stream is the module's
			// concern (awslambda's TestStreamKeepsEachStreamInOrder).
			slices.Sort(handled)
			slices.Sort(wantHandled)
			if !reflect.DeepEqual(handled, wantHandled) {
				t.Errorf("handled %v, want %v", handled, wantHandled)
			}
			var wantFailures []events.DynamoDBBatchItemFailure
			if tc.wantFailed >= 0 {
				wantFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: tc.batch.Records[tc.wantFailed].Change.SequenceNumber}}
			}
			if !reflect.DeepEqual(resp.BatchItemFailures, wantFailures) {
				t.Errorf("failures %+v, want %+v", resp.BatchItemFailures, wantFailures)
			}
			checkLogs(t, &logs, len(tc.batch.Records), len(tc.wantHandled), tc.wantFailed >= 0, tc.wantLogged)
		})
	}
}

// checkLogs checks a batch's log: one summary line of records records, handled of
// them handled; with a failure one line more, carrying wantLogged; never a payload.
func checkLogs(t *testing.T, logs *bytes.Buffer, records, handled int, failed bool, wantLogged map[string]any) {
	t.Helper()
	lines := logLines(t, logs)
	if strings.Contains(logs.String(), "PAYLOAD") {
		t.Errorf("the logs carry a payload:\n%s", logs.String())
	}
	summaries := 0
	for _, l := range lines {
		if l["msg"] == "stream batch" {
			summaries++
			if l["records"] != float64(records) || l["handled"] != float64(handled) {
				t.Errorf("summary %v", l)
			}
		}
	}
	if summaries != 1 {
		t.Errorf("%d summary lines, want 1:\n%s", summaries, logs.String())
	}
	wantLines := 1
	if failed {
		wantLines = 2
	}
	if len(lines) != wantLines {
		t.Errorf("%d log lines, want %d:\n%s", len(lines), wantLines, logs.String())
	}
	if wantLogged != nil && !anyLineHas(lines, wantLogged) {
		t.Errorf("no log line has %v:\n%s", wantLogged, logs.String())
	}
}

// TestStreamRecordIsTheEventStoresRecord: a stream record decodes as the
// deadlines' record of the event appended (its stream, version, type, time and
// data), whose Source is the event store's record itself, as the store reads it
// back; MODIFY and REMOVE are no event.
func TestStreamRecordIsTheEventStoresRecord(t *testing.T) {
	batch := imageSample(t, "batch.json")
	for i, rec := range batch.Records {
		got, ok, err := dynamo.StreamRecord(rec)
		if rec.EventName != "INSERT" {
			if ok || err != nil {
				t.Errorf("record %d, %s: %+v, %v, %v; want no event", i, rec.EventName, got, ok, err)
			}
			continue
		}
		want, derr := dynamo.DecodeImage(rec.Change.NewImage)
		if err != nil || !ok || derr != nil {
			t.Fatalf("record %d: %v, %v, %v", i, ok, err, derr)
		}
		if !reflect.DeepEqual(got.Source, want) {
			t.Errorf("record %d: Source %+v, want the store's record %+v", i, got.Source, want)
		}
		if got.Stream != want.StreamID || got.Position != want.Version || got.Type != want.Type || !got.At.Equal(want.RecordedAt) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("record %d: %+v, want the record of %+v", i, got, want)
		}
		if again := dynamo.RecordOf(want); !reflect.DeepEqual(again, got) {
			t.Errorf("RecordOf: %+v, want what the stream gave, %+v", again, got)
		}
	}
}

// TestEventRecordIsWhatStreamRecordReadsBack: a record as EventRecord plays
// Lambda's delivery of it decodes to the same record, keys and all.
func TestEventRecordIsWhatStreamRecordReadsBack(t *testing.T) {
	r := eventstore.Record{StreamID: "bike-1", Version: 7, Event: eventstore.Event{
		ID: "e7", Type: "BikeRequested", Data: json.RawMessage(`{"bikeId":"bike-1"}`), Tags: []string{"bike:bike-1", "rental:r"},
		RecordedAt: time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC), CorrelationID: "r", CausationID: "request:1",
	}}
	rec := dynamo.EventRecord(r, "000000000000000000007")
	got, ok, err := dynamo.StreamRecord(rec)
	if err != nil || !ok || !reflect.DeepEqual(got.Source, r) || rec.Change.Keys["streamId"].String() != "bike-1" || rec.Change.Keys["version"].Number() != "7" {
		t.Errorf("StreamRecord(EventRecord(r)) = %+v, %v, %v (keys %v); want r back", got.Source, ok, err, rec.Change.Keys)
	}
}
