package streambatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/streampoll/streampolltest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
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

func TestHandleBatch(t *testing.T) {
	five := insertBatch(t, 5)
	mixed := sample(t, "batch.json") // INSERT v1, MODIFY, REMOVE, INSERT v2
	corrupt := sample(t, "corrupt.json")
	var recordedAtInvalid events.DynamoDBEventRecord
	for _, rec := range corrupt.Records {
		if rec.EventID == "recorded-at-invalid" {
			recordedAtInvalid = rec
		}
	}
	failOn := func(version int64) streambatch.Handler {
		return func(_ context.Context, r eventstore.Record) error {
			if r.Version == version {
				return errors.New("boom")
			}
			return nil
		}
	}
	ok := func(context.Context, eventstore.Record) error { return nil }
	withinMargin := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), streambatch.DeadlineMargin/2)
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
		handler streambatch.Handler
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
			wantLogged: map[string]any{"streamId": "bike-1", "version": 3.0, "type": "E", "error": "boom"},
		},
		{
			name: "MODIFY and REMOVE are skipped", batch: mixed, handler: ok,
			wantHandled: []int{0, 3}, wantFailed: -1,
		},
		{
			name:    "corrupt image is reported",
			batch:   events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{mixed.Records[0], recordedAtInvalid, mixed.Records[3]}},
			handler: ok, wantHandled: []int{0, 2}, wantFailed: 1, // bike-b1's second record is another stream's
			wantLogged: map[string]any{"streamId": "bike-b2", "version": "7", "sequenceNumber": recordedAtInvalid.Change.SequenceNumber},
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
			wantLogged: map[string]any{"streamId": "bike-1", "version": 2.0},
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

			resp := streambatch.HandleBatch(ctx, tc.batch, h, streambatch.Options{Logger: logger})

			var wantHandled []string
			for _, i := range tc.wantHandled {
				r, err := dynamo.DecodeImage(tc.batch.Records[i].Change.NewImage)
				if err != nil {
					t.Fatal(err)
				}
				wantHandled = append(wantHandled, r.ID)
			}
			// Which records were handled; the order within a stream is the
			// concern of TestHandleBatchKeepsEachStreamInOrder.
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

			lines := logLines(t, &logs)
			if strings.Contains(logs.String(), "PAYLOAD") {
				t.Errorf("the logs carry a payload:\n%s", logs.String())
			}
			summaries := 0
			for _, l := range lines {
				if l["msg"] == "stream batch" {
					summaries++
					if l["records"] != float64(len(tc.batch.Records)) || l["handled"] != float64(len(tc.wantHandled)) {
						t.Errorf("summary %v", l)
					}
				}
			}
			if summaries != 1 {
				t.Errorf("%d summary lines, want 1:\n%s", summaries, logs.String())
			}
			wantLines := 1
			if tc.wantFailed >= 0 {
				wantLines = 2
			}
			if len(lines) != wantLines {
				t.Errorf("%d log lines, want %d:\n%s", len(lines), wantLines, logs.String())
			}
			if tc.wantLogged != nil {
				if !anyLineHas(lines, tc.wantLogged) {
					t.Errorf("no log line has %v:\n%s", tc.wantLogged, logs.String())
				}
			}
		})
	}
}

func anyLineHas(lines []map[string]any, want map[string]any) bool {
	for _, l := range lines {
		match := true
		for k, v := range want {
			if l[k] != v {
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}

// sample decodes a Lambda DynamoDB stream event from testdata.
func sample(t *testing.T, name string) events.DynamoDBEvent {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}
