package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/internal/moto"
)

func TestMain(m *testing.M) { moto.Main(m) }

// newTable creates a fresh Deadlines table on moto, deleted when the test ends,
// and returns a client of it and its name.
func newTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	client := moto.DynamoDB(t)
	name := moto.TableName(t, "deadlines")
	if err := dynamo.Create(context.Background(), client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return client, name
}

// open returns a Table of a fresh table over kinds.
func open(t testing.TB, kinds deadlines.Kinds, opts ...dynamo.Option) *dynamo.Table {
	t.Helper()
	client, name := newTable(t)
	tb, err := dynamo.New(client, name, kinds, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

var t0 = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

// The kinds of these tests. An invoice sent is due a week later, unless paid; an
// unpaid one handed to collection is collection's, due when the record says, and
// paying it settles that too. A reminder follows its stream's positions: set
// again later, it moves; done, it settles; set once more, it opens again. An
// escalated reminder is the operators' until they close it, or it is done.
var (
	invoice = deadlines.Kind{Name: "invoice", After: 7 * 24 * time.Hour, Work: deadlines.Send{},
		Changes: deadlines.Events{Opens: []string{"InvoiceSent"}, Settles: []string{"InvoicePaid"}}}
	collection = deadlines.Kind{Name: "collection", Prefix: "invoice#", Takes: "invoice", Work: deadlines.ByHand{ListedAs: "invoice"},
		Changes: dated{opens: "SentToCollection", settles: "InvoicePaid"}}
	reminder = deadlines.Kind{Name: "reminder", After: time.Hour, Ordered: true, Work: deadlines.Send{},
		Changes: dated{opens: "ReminderSet", settles: "ReminderDone"}}
	escalation = deadlines.Kind{Name: "escalation", Prefix: "reminder#", Takes: "reminder", Work: deadlines.ByHand{ListedAs: "reminder"},
		Changes: deadlines.Events{Opens: []string{"ReminderEscalated"}, Settles: []string{"EscalationClosed"}}}
	kinds = deadlines.MustKinds(invoice, collection, reminder, escalation)
)

// dated reads records whose data may name the row's due time ("due=<RFC 3339>");
// the subject is the stream.
type dated struct{ opens, settles string }

func (d dated) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	c, ok, err := deadlines.Events{Opens: []string{d.opens}, Settles: []string{d.settles}}.Change(r)
	if due, found := strings.CutPrefix(string(r.Data), "due="); found && ok && !c.Settled {
		if c.Due, err = time.Parse(time.RFC3339Nano, due); err != nil {
			return deadlines.Change{}, false, fmt.Errorf("%w: %q", deadlines.ErrCorruptRecord, r.Data)
		}
	}
	return c, ok, err
}

func rec(typ, stream string, position int64, at time.Time) deadlines.Record {
	return deadlines.Record{Stream: stream, Position: position, Type: typ, At: at}
}

func dueRec(typ, stream string, position int64, at, due time.Time) deadlines.Record {
	r := rec(typ, stream, position, at)
	r.Data = []byte("due=" + due.Format(time.RFC3339Nano))
	return r
}

func apply(t *testing.T, p deadlines.Projection, recs ...deadlines.Record) {
	t.Helper()
	for _, r := range recs {
		if err := p.Apply(context.Background(), r); err != nil {
			t.Fatalf("apply %s %s %d: %v", r.Type, r.Stream, r.Position, err)
		}
	}
}

// outstanding returns every outstanding row of k, from every shard, as
// "subject@due" with due as an offset from t0.
func outstanding(t *testing.T, idx deadlines.Index, k deadlines.Kind) []string {
	t.Helper()
	var rows []deadlines.Row
	for shard := range idx.Shards() {
		if _, err := idx.Rows(context.Background(), deadlines.Span{Kind: k, Shard: shard}, func(p []deadlines.Row) bool {
			rows = append(rows, p...)
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	deadlines.SortRows(rows)
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s@%s", r.Subject, r.Due.Sub(t0)))
	}
	return out
}

// counting is an API that counts the calls it passes on.
type counting struct {
	dynamo.API
	mu                    sync.Mutex
	updates, queries, get int
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.mu.Lock()
	c.updates++
	c.mu.Unlock()
	return c.API.UpdateItem(ctx, in, o...)
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.mu.Lock()
	c.queries++
	c.mu.Unlock()
	return c.API.Query(ctx, in, o...)
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.mu.Lock()
	c.get++
	c.mu.Unlock()
	return c.API.GetItem(ctx, in, o...)
}
