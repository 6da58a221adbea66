package deadline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/examples/orders"
	"github.com/bikerental/bikerental/examples/orders/deadline"
	"github.com/bikerental/bikerental/examples/orders/internal/moto"
)

// t0 is when the tests' histories start: 30 days ago, on the hour, so that every
// sweep's scheduled time (14 days after it at the latest) is before the clock,
// which the sweep would take instead.
var t0 = time.Now().UTC().Truncate(time.Hour).Add(-30 * 24 * time.Hour)

// fixture is an Orders table and a Deadlines table on moto, the handlers
// deadline.New builds over them from the environment (as the functions' mains
// do), a store that writes the tests' own events at a clock of their own, and the
// Orders table's stream, read as Lambda delivers it.
type fixture struct {
	t         *testing.T
	db        *dynamodb.Client
	orders    string
	deadlines string
	at        time.Time // the clock of the tests' own events
	store     *orders.Store
	h         deadline.Handlers
	stream    *stream
	delivered []events.DynamoDBEventRecord // every record the projector was given
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	moto.SetEnv(t)
	ctx := context.Background()
	cfg := moto.Config(t)
	f := &fixture{t: t, db: dynamodb.NewFromConfig(cfg), orders: moto.TableName("orders"), deadlines: moto.TableName("deadlines"), at: t0}
	if _, err := f.db.CreateTable(ctx, orders.Definition(f.orders)); err != nil {
		t.Fatalf("create the Orders table: %v", err)
	}
	desc, err := f.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.orders)})
	if err != nil || desc.Table.LatestStreamArn == nil {
		t.Fatalf("the Orders table's stream: %v", err)
	}
	if err := dynamo.Create(ctx, f.db, f.deadlines); err != nil {
		t.Fatal(err)
	}
	f.store = &orders.Store{DB: f.db, Table: f.orders, Now: func() time.Time { return f.at }}
	f.stream = &stream{client: dynamodbstreams.NewFromConfig(cfg), arn: *desc.Table.LatestStreamArn, after: map[string]string{}}
	t.Setenv("ORDERS_TABLE", f.orders)
	f.h = f.handlers(f.deadlines)
	return f
}

// handlers builds the functions' handlers as their mains do, over the Deadlines
// table named table.
func (f *fixture) handlers(table string) deadline.Handlers {
	f.t.Helper()
	f.t.Setenv("DEADLINES_TABLE", table)
	h, err := deadline.New(context.Background())
	if err != nil {
		f.t.Fatalf("deadline.New: %v", err)
	}
	return h
}

// do runs a command of the tests' own at the time at, which must act.
func (f *fixture) do(at time.Time, command func(context.Context, string) (deadlines.Outcome, error), id string) {
	f.t.Helper()
	f.at = at
	if out, err := command(context.Background(), id); err != nil || out != deadlines.Acted {
		f.t.Fatalf("%s at %s: %s, %v", id, at.Format(time.RFC3339), out, err)
	}
}

// project delivers what was written to the Orders table since the last call to
// the projector, in one batch, which must succeed whole.
func (f *fixture) project() {
	f.t.Helper()
	records := f.stream.next(f.t)
	if len(records) == 0 {
		f.t.Fatal("nothing new on the stream to project")
	}
	deliver(f.t, f.h, records)
	f.delivered = append(f.delivered, records...)
}

func deliver(t *testing.T, h deadline.Handlers, records []events.DynamoDBEventRecord) {
	t.Helper()
	resp, err := h.Projector(context.Background(), events.DynamoDBEvent{Records: records})
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("projector: %v, failures %v", err, resp.BatchItemFailures)
	}
}

// sweep invokes the sweep as its EventBridge Scheduler schedule does, for the
// scheduled time at.
func (f *fixture) sweep(h deadline.Handlers, at time.Time) awslambda.Summary {
	f.t.Helper()
	sum, err := h.Sweep(context.Background(), json.RawMessage(fmt.Sprintf(`{"scheduledTime": %q}`, at.Format(time.RFC3339))))
	if err != nil || sum.Incomplete {
		f.t.Fatalf("sweep at %s: %v (incomplete %v)", at.Format(time.RFC3339), err, sum.Incomplete)
	}
	if !sum.Now.Equal(at) {
		f.t.Fatalf("the sweep ran as of %s, not its scheduled time %s", sum.Now, at)
	}
	return sum
}

// count is how many events of type typ the stream id holds.
func (f *fixture) count(id, typ string) int {
	f.t.Helper()
	evs, err := f.store.Read(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(slices.DeleteFunc(evs, func(e orders.Event) bool { return e.Type != typ }))
}

// outstanding lists the outstanding rows of the Deadlines table named table.
func (f *fixture) outstanding(table string) []deadlines.Row {
	f.t.Helper()
	kinds := deadline.Kinds(nil)
	idx, err := dynamo.New(f.db, table, kinds)
	if err != nil {
		f.t.Fatal(err)
	}
	page, err := deadlines.List(context.Background(), idx, kinds, deadlines.Query{Limit: deadlines.MaxLimit})
	if err != nil {
		f.t.Fatal(err)
	}
	return page.Rows
}

// want checks what a sweep did for the kind named kind.
func want(t *testing.T, sum awslambda.Summary, kind string, found, acted, declined, nothing int) {
	t.Helper()
	k, ok := sum.Kind(kind)
	if !ok {
		t.Fatalf("the sweep did not cover %s", kind)
	}
	if k.Found != found || k.Acted != acted || k.Declined != declined || k.NothingToDo != nothing || k.Failed != 0 || k.Left != 0 {
		t.Errorf("sweep at %s, %s: found %d, acted %d, declined %d, nothing to do %d, failed %d, left %d; want found %d, acted %d, declined %d, nothing to do %d",
			sum.Now.Format(time.RFC3339), kind, k.Found, k.Acted, k.Declined, k.NothingToDo, k.Failed, k.Left, found, acted, declined, nothing)
	}
}

// sent is how many commands a sweep sent, for every kind.
func sent(sum awslambda.Summary) int {
	n := 0
	for _, k := range sum.Kinds {
		n += k.Acted + k.Declined + k.NothingToDo + k.Failed
	}
	return n
}

const (
	unconfirmed = "unconfirmed-order"
	unpaid      = "unpaid-invoice"
)

func TestAnOrderConfirmedInTimeIsNeverCancelled(t *testing.T) {
	f := newFixture(t)
	f.do(t0, f.store.Place, "o-1")
	f.project()
	f.do(t0.Add(14*time.Minute), f.store.Confirm, "o-1")
	f.project()
	for _, at := range []time.Duration{16 * time.Minute, time.Hour, 30 * 24 * time.Hour} {
		want(t, f.sweep(f.h, t0.Add(at)), unconfirmed, 0, 0, 0, 0)
	}
	if n := f.count("o-1", orders.OrderCancelled); n != 0 {
		t.Errorf("%d OrderCancelled, want none", n)
	}
	if rows := f.outstanding(f.deadlines); len(rows) != 0 {
		t.Errorf("outstanding %v, want none", rows)
	}
}

func TestAnOrderNotConfirmedInTimeIsCancelledOnce(t *testing.T) {
	f := newFixture(t)
	f.do(t0, f.store.Place, "o-1")
	f.project()
	want(t, f.sweep(f.h, t0.Add(15*time.Minute)), unconfirmed, 0, 0, 0, 0) // due, not yet overdue
	want(t, f.sweep(f.h, t0.Add(16*time.Minute)), unconfirmed, 1, 1, 0, 0)
	// The projection has not caught up with the OrderCancelled: the row is still
	// overdue, and the command finds nothing left to do.
	want(t, f.sweep(f.h, t0.Add(17*time.Minute)), unconfirmed, 1, 0, 0, 1)
	f.project()
	want(t, f.sweep(f.h, t0.Add(18*time.Minute)), unconfirmed, 0, 0, 0, 0)
	if n := f.count("o-1", orders.OrderCancelled); n != 1 {
		t.Errorf("%d OrderCancelled, want one", n)
	}
	if rows := f.outstanding(f.deadlines); len(rows) != 0 {
		t.Errorf("outstanding %v, want none", rows)
	}
}

func TestACancelAfterTheConfirmationIsDeclined(t *testing.T) {
	f := newFixture(t)
	f.do(t0, f.store.Place, "o-1")
	f.project()
	f.do(t0.Add(14*time.Minute), f.store.Confirm, "o-1") // written, not yet projected
	want(t, f.sweep(f.h, t0.Add(16*time.Minute)), unconfirmed, 1, 0, 1, 0)
	if n := f.count("o-1", orders.OrderCancelled); n != 0 {
		t.Errorf("%d OrderCancelled, want none", n)
	}
	f.project() // the confirmation settles the row
	want(t, f.sweep(f.h, t0.Add(17*time.Minute)), unconfirmed, 0, 0, 0, 0)
}

func TestTheReminderIsSentOnce(t *testing.T) {
	f := newFixture(t)
	issue := func(ctx context.Context, id string) (deadlines.Outcome, error) { return f.store.Issue(ctx, id, "o-1") }
	f.do(t0, issue, "i-1") // unpaid: reminded
	f.do(t0, issue, "i-2") // paid in time: never reminded
	f.do(t0.Add(time.Hour), f.store.Pay, "i-2")
	f.do(t0.Add(2*time.Hour), issue, "i-3") // paid once overdue, before the sweep: declined
	f.project()
	week := 7 * 24 * time.Hour
	want(t, f.sweep(f.h, t0.Add(week)), unpaid, 0, 0, 0, 0)
	want(t, f.sweep(f.h, t0.Add(week+time.Minute)), unpaid, 1, 1, 0, 0)
	want(t, f.sweep(f.h, t0.Add(week+2*time.Minute)), unpaid, 1, 0, 0, 1) // not yet projected
	f.do(t0.Add(week+3*time.Hour), f.store.Pay, "i-3")
	want(t, f.sweep(f.h, t0.Add(week+3*time.Hour)), unpaid, 2, 0, 1, 1)
	f.project()
	want(t, f.sweep(f.h, t0.Add(2*week)), unpaid, 0, 0, 0, 0)
	for id, n := range map[string]int{"i-1": 1, "i-2": 0, "i-3": 0} {
		if got := f.count(id, orders.ReminderSent); got != n {
			t.Errorf("%s: %d ReminderSent, want %d", id, got, n)
		}
	}
}

// history writes, projects and sweeps a history of every case: an order confirmed,
// one cancelled by the sweep, one not yet due; an invoice reminded by the sweep,
// one paid. It returns the time of its last sweep, after which nothing is
// overdue.
func (f *fixture) history() time.Time {
	f.t.Helper()
	issue := func(ctx context.Context, id string) (deadlines.Outcome, error) { return f.store.Issue(ctx, id, "o-1") }
	week := 7 * 24 * time.Hour
	f.do(t0, f.store.Place, "o-1")
	f.do(t0.Add(time.Minute), f.store.Place, "o-2")
	f.do(t0.Add(2*time.Minute), issue, "i-1")
	f.do(t0.Add(3*time.Minute), issue, "i-2")
	f.do(t0.Add(5*time.Minute), f.store.Confirm, "o-1")
	f.do(t0.Add(time.Hour), f.store.Pay, "i-2")
	f.do(t0.Add(week), f.store.Place, "o-3")
	f.project()
	sum := f.sweep(f.h, t0.Add(week+10*time.Minute))
	want(f.t, sum, unconfirmed, 1, 1, 0, 0)
	want(f.t, sum, unpaid, 1, 1, 0, 0)
	f.project()
	last := t0.Add(week + 11*time.Minute)
	if sum := f.sweep(f.h, last); sent(sum) != 0 {
		f.t.Fatalf("the history's last sweep sent %d commands", sent(sum))
	}
	return last
}

// items returns every item of a table as text, in key order.
func (f *fixture) items(table string) []string {
	f.t.Helper()
	var out []string
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := f.db.Scan(context.Background(), in)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, item := range page.Items {
			var attrs []string
			for name, v := range item {
				switch v := v.(type) {
				case *types.AttributeValueMemberS:
					attrs = append(attrs, name+"="+strconv.Quote(v.Value))
				case *types.AttributeValueMemberN:
					attrs = append(attrs, name+"="+v.Value)
				default:
					attrs = append(attrs, fmt.Sprintf("%s=%T", name, v))
				}
			}
			slices.Sort(attrs)
			out = append(out, strings.Join(attrs, " "))
		}
		if len(page.LastEvaluatedKey) == 0 {
			slices.Sort(out)
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func TestAReplayChangesNothing(t *testing.T) {
	t.Run("the same records delivered again", func(t *testing.T) {
		f := newFixture(t)
		last := f.history()
		before, events := f.items(f.deadlines), f.items(f.orders)
		if len(before) != 6 { // the table's own item, and a row or marker for each of the five streams
			t.Fatalf("the Deadlines table holds %q, want six items", before)
		}
		deliver(t, f.h, f.delivered)
		if after := f.items(f.deadlines); !slices.Equal(before, after) {
			t.Errorf("the Deadlines table changed:\nbefore %q\nafter  %q", before, after)
		}
		if sum := f.sweep(f.h, last.Add(time.Minute)); sent(sum) != 0 {
			t.Errorf("a sweep after the replay sent %d commands", sent(sum))
		}
		if after := f.items(f.orders); !slices.Equal(events, after) {
			t.Errorf("the Orders table changed:\nbefore %q\nafter  %q", events, after)
		}
	})
	t.Run("the to-do table rebuilt from the events", func(t *testing.T) {
		f := newFixture(t)
		last := f.history()
		before, events := f.items(f.deadlines), f.items(f.orders)
		fresh := moto.TableName("deadlines-rebuilt")
		if err := dynamo.Create(context.Background(), f.db, fresh); err != nil {
			t.Fatal(err)
		}
		h := f.handlers(fresh)
		records := f.scanOrders()
		if len(records) != 9 {
			t.Fatalf("%d events in the Orders table, want the history's 9", len(records))
		}
		for batch := range slices.Chunk(records, 4) { // Lambda's batches, here small ones
			deliver(t, h, batch)
		}
		if after := f.items(fresh); !slices.Equal(before, after) {
			t.Errorf("the rebuilt table differs:\nbefore  %q\nrebuilt %q", before, after)
		}
		rows := f.outstanding(fresh)
		if due := t0.Add(7*24*time.Hour + 15*time.Minute); len(rows) != 1 || rows[0].Subject != "o-3" || !rows[0].Due.Equal(due) {
			t.Errorf("outstanding after the rebuild %v, want o-3 due at %s", rows, due)
		}
		if sum := f.sweep(h, last.Add(time.Minute)); sent(sum) != 0 {
			t.Errorf("a sweep of the rebuilt table sent %d commands", sent(sum))
		}
		if after := f.items(f.orders); !slices.Equal(events, after) {
			t.Errorf("the Orders table changed:\nbefore %q\nafter  %q", events, after)
		}
	})
}

// scanOrders reads every event of the Orders table with a Scan, as the INSERT
// records that wrote them, each stream's in its order.
func (f *fixture) scanOrders() []events.DynamoDBEventRecord {
	f.t.Helper()
	var evs []orders.Event
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(f.orders), ConsistentRead: aws.Bool(true)}
	for {
		page, err := f.db.Scan(context.Background(), in)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, item := range page.Items {
			e, err := orders.EventOf(item)
			if err != nil {
				f.t.Fatal(err)
			}
			evs, items = append(evs, e), append(items, item)
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(evs[a].ID, evs[b].ID); c != 0 {
			return c
		}
		return int(evs[a].Seq - evs[b].Seq)
	})
	out := make([]events.DynamoDBEventRecord, len(order))
	for i, j := range order {
		out[i] = itemRecord(items[j])
	}
	return out
}

func TestNewRefusesAMissingTableName(t *testing.T) {
	moto.SetEnv(t)
	for _, missing := range []string{"ORDERS_TABLE", "DEADLINES_TABLE"} {
		t.Setenv("ORDERS_TABLE", "orders")
		t.Setenv("DEADLINES_TABLE", "deadlines")
		t.Setenv(missing, "")
		if _, err := deadline.New(context.Background()); err == nil {
			t.Errorf("without %s: no error", missing)
		}
	}
}

func TestTheSweepRefusesInputItCannotRead(t *testing.T) {
	f := newFixture(t)
	f.do(t0, f.store.Place, "o-1")
	f.project()
	if _, err := f.h.Sweep(context.Background(), json.RawMessage(`{"scheduledTime": 42}`)); err == nil {
		t.Error("no error")
	}
	if n := f.count("o-1", orders.OrderCancelled); n != 0 {
		t.Errorf("%d OrderCancelled after a refused input", n)
	}
}

// TestTheOrdersItemsDecode reads stream records of the Orders table's layout with
// the decoder the projector is built with.
func TestTheOrdersItemsDecode(t *testing.T) {
	decode, err := deadline.Items.Decoder()
	if err != nil {
		t.Fatal(err)
	}
	image := func(at string) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{
			"id": events.NewStringAttribute("o-1"), "seq": events.NewNumberAttribute("2"),
			"type": events.NewStringAttribute(orders.OrderConfirmed), "at": events.NewStringAttribute(at),
		}
	}
	record := func(name string, img map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: name, Change: events.DynamoDBStreamRecord{NewImage: img}}
	}
	at := time.Date(2026, 3, 2, 9, 5, 0, 123e6, time.UTC)
	r, ok, err := decode(record("INSERT", image("2026-03-02T09:05:00.123Z")))
	if want := (deadlines.Record{Stream: "o-1", Position: 2, Type: orders.OrderConfirmed, At: at}); err != nil || !ok || r.Stream != want.Stream ||
		r.Position != want.Position || r.Type != want.Type || !r.At.Equal(want.At) {
		t.Errorf("an INSERT: %+v, %v, %v; want %+v", r, ok, err, want)
	}
	for _, name := range []string{"MODIFY", "REMOVE"} {
		if _, ok, err := decode(record(name, nil)); ok || err != nil {
			t.Errorf("a %s: %v, %v; want no event, no error", name, ok, err)
		}
	}
	for name, img := range map[string]map[string]events.DynamoDBAttributeValue{
		"a bad time":  image("yesterday"),
		"no time":     {"id": events.NewStringAttribute("o-1"), "seq": events.NewNumberAttribute("1"), "type": events.NewStringAttribute(orders.OrderPlaced)},
		"no position": {"id": events.NewStringAttribute("o-1"), "type": events.NewStringAttribute(orders.OrderPlaced), "at": events.NewStringAttribute("2026-03-02T09:05:00Z")},
	} {
		r, ok, err := decode(record("INSERT", img))
		if !errors.Is(err, deadlines.ErrCorruptRecord) || ok || r.Stream != "o-1" {
			t.Errorf("%s: %+v, %v, %v; want an error naming the stream", name, r, ok, err)
		}
	}
}
