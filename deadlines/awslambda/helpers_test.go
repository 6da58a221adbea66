package awslambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/memory"
)

// decodeOrderEvent reads an item of an Orders events table, one event per item
// (orderItems).
var decodeOrderEvent = func() awslambda.Decoder {
	d, err := orderItems.Decoder()
	if err != nil {
		panic(err)
	}
	return d
}()

// insert returns r as the INSERT of its item that a stream delivers, with the
// sequence number seq.
func insert(r deadlines.Record, seq int) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID: "id-" + strconv.Itoa(seq), EventName: string(events.DynamoDBOperationTypeInsert), EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprintf("%021d", seq), StreamViewType: "NEW_IMAGE",
			NewImage: map[string]events.DynamoDBAttributeValue{
				"stream":   events.NewStringAttribute(r.Stream),
				"position": events.NewNumberAttribute(strconv.FormatInt(r.Position, 10)),
				"type":     events.NewStringAttribute(r.Type),
				"at":       events.NewStringAttribute(r.At.Format(time.RFC3339Nano)),
				"data":     events.NewStringAttribute(string(r.Data)),
			},
		},
	}
}

// recordsBatch returns records as one stream batch delivers them, in the order
// given, with sequence numbers increasing along it.
func recordsBatch(records []deadlines.Record) events.DynamoDBEvent {
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(records))}
	for i, r := range records {
		ev.Records[i] = insert(r, i+1)
	}
	return ev
}

// record is the event at position of stream, of type "E", with a payload no log
// line may carry.
func record(stream string, position int64) deadlines.Record {
	return deadlines.Record{Stream: stream, Position: position, Type: "E", Data: []byte(`{"note":"PAYLOAD"}`),
		At: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

// id names a record in the tests: stream@position.
func id(r deadlines.Record) string { return fmt.Sprintf("%s@%d", r.Stream, r.Position) }

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

// logLines parses the JSON log lines in buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
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

// recorder is a projection in memory that keeps the records applied to it, in
// order.
type recorder struct {
	*memory.Index
	kinds   deadlines.Kinds
	mu      sync.Mutex
	applied []deadlines.Record
}

func newRecorder(kinds deadlines.Kinds) *recorder {
	return &recorder{Index: memory.New(kinds, 2), kinds: kinds}
}

func (x *recorder) Apply(ctx context.Context, r deadlines.Record) error {
	if err := x.Index.Apply(ctx, r); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.applied = append(x.applied, r)
	return nil
}

// outstanding returns the outstanding rows, soonest due first.
func (x *recorder) outstanding() []deadlines.Row {
	page, err := deadlines.List(context.Background(), x, x.kinds, deadlines.Query{Limit: deadlines.MaxLimit})
	if err != nil {
		panic(err)
	}
	return page.Rows
}

// sent is a command that keeps what it is sent for, as "kind subject cause".
type sent struct {
	mu   sync.Mutex
	sent []string
}

func (s *sent) Send(_ context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, row.Kind+" "+row.Subject+" "+cause)
	return deadlines.Acted, nil
}

func (s *sent) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}
