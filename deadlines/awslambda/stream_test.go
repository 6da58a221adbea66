package awslambda_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
)

var quiet = awslambda.Logger(slog.New(slog.DiscardHandler))

func TestStream(t *testing.T) {
	var five []deadlines.Record
	for p := range int64(5) {
		five = append(five, record("order-1", p+1))
	}
	fiveBatch := recordsBatch(five)
	mixed := sample(t, "batch.json") // INSERT 1, MODIFY, REMOVE, INSERT 2
	corrupt := sample(t, "corrupt.json")
	noStream := insert(record("order-2", 1), 9)
	delete(noStream.Change.NewImage, "stream")

	failOn := func(position int64) awslambda.Handler {
		return func(_ context.Context, r deadlines.Record) error {
			if r.Position == position {
				return errors.New("boom")
			}
			return nil
		}
	}
	ok := func(context.Context, deadlines.Record) error { return nil }
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
		opts    []awslambda.StreamOption
		decode  awslambda.Decoder
		handler awslambda.Handler
		// wantHandled are the indexes of the records the handler completed;
		// wantFailed is the index of the record reported, or -1.
		wantHandled []int
		wantFailed  int
		// wantLogged are attributes the failure's log line must carry.
		wantLogged map[string]any
	}{
		{
			name: "all handled", batch: fiveBatch, handler: ok,
			wantHandled: []int{0, 1, 2, 3, 4}, wantFailed: -1,
		},
		{
			name: "handler fails on the third of five", batch: fiveBatch, handler: failOn(3),
			wantHandled: []int{0, 1}, wantFailed: 2,
			wantLogged: map[string]any{"stream": "order-1", "position": 3.0, "type": "E", "error": "boom"},
		},
		{
			name: "records the decoder does not take are skipped", batch: mixed, handler: ok,
			wantHandled: []int{0, 3}, wantFailed: -1,
		},
		{
			name: "records of types the consumer does not handle are skipped", batch: mixed, handler: failOn(2),
			opts:        []awslambda.StreamOption{awslambda.Types("OrderPlaced", "OrderCancelled")},
			wantHandled: []int{0}, wantFailed: -1,
		},
		{
			name:    "an undecodable record is reported and holds back its stream only",
			batch:   events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{mixed.Records[0], corrupt.Records[1], insert(record("order-18", 8), 3), mixed.Records[3]}},
			handler: ok, wantHandled: []int{0, 3}, wantFailed: 1,
			wantLogged: map[string]any{"stream": "order-18", "position": 7.0, "sequenceNumber": corrupt.Records[1].Change.SequenceNumber},
		},
		{
			name:    "a record without an image is reported by sequence number and holds back the rest",
			batch:   events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{mixed.Records[0], corrupt.Records[0], mixed.Records[3]}},
			handler: ok, wantHandled: []int{0}, wantFailed: 1,
			wantLogged: map[string]any{"sequenceNumber": corrupt.Records[0].Change.SequenceNumber},
		},
		{
			name:  "an event of no stream is a failure",
			batch: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{noStream}},
			decode: func(rec events.DynamoDBEventRecord) (deadlines.Record, bool, error) {
				r, _, _ := decodeOrderEvent(rec)
				return r, true, nil
			},
			handler: ok, wantFailed: 0,
			wantLogged: map[string]any{"sequenceNumber": noStream.Change.SequenceNumber, "type": "E"},
		},
		{
			name: "a panicking decoder is a failure", batch: fiveBatch, handler: ok,
			decode: func(rec events.DynamoDBEventRecord) (deadlines.Record, bool, error) {
				if rec.Change.NewImage["position"].Number() == "4" {
					panic("decoder bug")
				}
				return decodeOrderEvent(rec)
			},
			wantHandled: []int{0, 1, 2}, wantFailed: 3,
			wantLogged: map[string]any{"sequenceNumber": fiveBatch.Records[3].Change.SequenceNumber},
		},
		{
			name: "a panicking handler is a failure", batch: fiveBatch,
			handler: func(_ context.Context, r deadlines.Record) error {
				if r.Position == 2 {
					panic("handler bug")
				}
				return nil
			},
			wantHandled: []int{0}, wantFailed: 1,
			wantLogged: map[string]any{"stream": "order-1", "position": 2.0},
		},
		{
			name: "deadline within the margin: nothing is started", batch: fiveBatch, ctx: withinMargin,
			handler: ok, wantFailed: 0,
		},
		{
			name: "deadline within a margin given: nothing is started", batch: fiveBatch,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Minute)
			},
			opts:    []awslambda.StreamOption{awslambda.Margin(2 * time.Minute)},
			handler: ok, wantFailed: 0,
		},
		{
			name: "cancelled context: nothing is started", batch: fiveBatch, ctx: cancelled,
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
			decode := tc.decode
			if decode == nil {
				decode = decodeOrderEvent
			}
			var logs bytes.Buffer
			var mu sync.Mutex
			var handled []string
			h := func(ctx context.Context, r deadlines.Record) error {
				if err := tc.handler(ctx, r); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, id(r))
				return nil
			}
			opts := append(slices.Clone(tc.opts), awslambda.Logger(slog.New(slog.NewJSONHandler(&logs, nil))))

			resp, err := awslambda.Stream(decode, h, opts...)(ctx, tc.batch)
			if err != nil {
				t.Fatalf("the handler returned %v", err)
			}

			var wantHandled []string
			for _, i := range tc.wantHandled {
				r, _, err := decodeOrderEvent(tc.batch.Records[i])
				if err != nil {
					t.Fatal(err)
				}
				wantHandled = append(wantHandled, id(r))
			}
			// Which records were handled; the order within a stream is the
			// concern of TestStreamKeepsEachStreamInOrder.
			slices.Sort(handled)
			slices.Sort(wantHandled)
			if !slices.Equal(handled, wantHandled) {
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

// checkLogs checks a batch's log lines: no payload, one summary line counting
// records and handled, a failure line when one failed, and a line carrying every
// attribute of want.
func checkLogs(t *testing.T, logs *bytes.Buffer, records, handled int, failure bool, want map[string]any) {
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
				t.Errorf("summary %v: want %d records, %d handled", l, records, handled)
			}
		}
	}
	if summaries != 1 {
		t.Errorf("%d summary lines, want 1:\n%s", summaries, logs.String())
	}
	wantLines := 1
	if failure {
		wantLines = 2
	}
	if len(lines) != wantLines {
		t.Errorf("%d log lines, want %d:\n%s", len(lines), wantLines, logs.String())
	}
	if want != nil && !anyLineHas(lines, want) {
		t.Errorf("no log line has %v:\n%s", want, logs.String())
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

// TestProjectorAppliesEachEventToTheProjection runs the sample batch through a
// projection: the events reach Apply in order, the others do not, and the row the
// first opened is settled by the second.
func TestProjectorAppliesEachEventToTheProjection(t *testing.T) {
	x := newRecorder(orderKinds(nil))
	resp, err := awslambda.Projector(x, decodeOrderEvent, quiet)(context.Background(), sample(t, "batch.json"))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("answered %+v, %v", resp, err)
	}
	var applied []string
	for _, r := range x.applied {
		applied = append(applied, id(r)+" "+r.Type)
	}
	if want := []string{"order-17@1 OrderPlaced", "order-17@2 OrderConfirmed"}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	if rows := x.outstanding(); len(rows) != 0 {
		t.Errorf("outstanding %v, want none: the order was confirmed", rows)
	}
}

// TestProjectorFailsARecordAKindCannotRead feeds the projection an opening whose
// subject cannot be read: the record fails, with ErrCorruptRecord logged, and the
// stream's later records wait.
func TestProjectorFailsARecordAKindCannotRead(t *testing.T) {
	kinds := deadlines.MustKinds(deadlines.Kind{
		Name: "unpaid-invoice", After: 7 * 24 * time.Hour, Work: deadlines.Send{},
		Changes: deadlines.Events{Opens: []string{"InvoiceIssued"}, Settles: []string{"InvoicePaid"}, Subject: func(r deadlines.Record) (string, error) {
			if len(r.Data) == 0 {
				return "", deadlines.ErrCorruptRecord
			}
			return string(r.Data), nil
		}},
	})
	x := newRecorder(kinds)
	issued := deadlines.Record{Stream: "invoice-9", Position: 1, Type: "InvoiceIssued", At: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	paid := issued
	paid.Position, paid.Type, paid.Data = 2, "InvoicePaid", []byte("9")
	batch := recordsBatch([]deadlines.Record{issued, paid})
	var logs bytes.Buffer
	resp, _ := awslambda.Projector(x, decodeOrderEvent, awslambda.Logger(slog.New(slog.NewJSONHandler(&logs, nil))))(context.Background(), batch)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != batch.Records[0].Change.SequenceNumber {
		t.Errorf("failures %+v, want the issue's", resp.BatchItemFailures)
	}
	if len(x.applied) != 0 {
		t.Errorf("applied %v after a record that failed", x.applied)
	}
	if !strings.Contains(logs.String(), deadlines.ErrCorruptRecord.Error()) {
		t.Errorf("the failure is not logged as a corrupt record:\n%s", logs.String())
	}
}
