package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
)

// TestTheInProcessTableIsMotos holds the benchmarks' in-process table to moto: the
// same run of the Table (openings, repeats, settlements before and after, a
// takeover, an ordered kind moved, settled and opened again, the shard count
// checked and changed, reads of every partition a page at a time and whole, rows
// read one by one) on each gives the same answers, leaves the same items, costs
// the same units call by call (moto's counted by capacity.Counter), and writes the
// index's partitions the same units each (moto's attributed from the items before
// and after each write). Pages of Limit items end as moto ends them (motoPaging).
func TestTheInProcessTableIsMotos(t *testing.T) {
	client, name := newTable(t)
	counter := capacity.NewCounter(client)
	counted := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Middleware("bench"))
	})
	onMoto := &attributed{API: counted, raw: client, table: name, index: newInProcess(name).index, writes: map[string]int{}}
	gotMoto := playTheTable(t, onMoto, name)

	local := newInProcess(name)
	local.motoPaging = true
	gotLocal := playTheTable(t, local, name)

	if !reflect.DeepEqual(gotLocal, gotMoto) {
		t.Errorf("the answers differ:\nin process %q\nmoto       %q", gotLocal, gotMoto)
	}
	if a := capacity.Approximations(counter.Calls()); len(a) > 0 {
		t.Errorf("moto's units are approximate: %q", a)
	}
	motoCalls, localCalls := comparableCalls(counter.Calls()), comparableCalls(local.Calls())
	if len(motoCalls) != len(localCalls) {
		t.Errorf("%d calls in process, %d on moto", len(localCalls), len(motoCalls))
	}
	for i := range min(len(motoCalls), len(localCalls)) {
		if !reflect.DeepEqual(localCalls[i], motoCalls[i]) {
			t.Errorf("call %d: in process %+v, moto %+v", i, localCalls[i], motoCalls[i])
		}
	}
	if want := capacity.Total(counter.Calls()); capacity.Total(local.Calls()).IndexWriteUnits != want.IndexWriteUnits || sum(onMoto.writes) != want.IndexWriteUnits {
		t.Errorf("index write units: %d in process, %d attributed on moto, %d counted on moto",
			capacity.Total(local.Calls()).IndexWriteUnits, sum(onMoto.writes), want.IndexWriteUnits)
	}
	if !reflect.DeepEqual(local.IndexWrites(), onMoto.writes) {
		t.Errorf("index writes by partition: in process %v, moto %v", local.IndexWrites(), onMoto.writes)
	}
	if items := scanAll(t, client, name); !reflect.DeepEqual(local.Items(), items) {
		t.Errorf("the items differ:\nin process %v\nmoto       %v", local.Items(), items)
	}
	if total := capacity.Total(local.Calls()); total.Calls < 60 || total.ConditionFailures == 0 || total.IndexWriteUnits == 0 {
		t.Errorf("the run is not the one intended: %+v", total)
	}
}

// playTheTable runs the Table over api, a fresh Deadlines table named name, and
// returns what each step answered.
func playTheTable(t *testing.T, api dynamo.API, name string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	tb, err := dynamo.New(api, name, kinds, dynamo.WithShards(2))
	if err != nil {
		t.Fatal(err)
	}
	note("check shards: %v", tb.CheckShards(ctx))
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	recs := []deadlines.Record{
		rec("InvoicePaid", "inv-9", 2, ms(1)), // settled before it opens
		rec("InvoiceSent", "inv-9", 1, ms(0)),
	}
	for i := range 9 {
		recs = append(recs, rec("InvoiceSent", fmt.Sprintf("inv-%d", i), 1, ms(10*i)))
	}
	recs = append(recs,
		rec("InvoiceSent", "inv-1", 1, ms(10)), // again
		rec("InvoicePaid", "inv-2", 2, ms(500)),
		dueRec("SentToCollection", "inv-3", 2, ms(600), ms(99)),
		rec("InvoicePaid", "inv-3", 3, ms(700)),
		dueRec("SentToCollection", "inv-4", 2, ms(600), ms(98)),
		rec("ReminderSet", "r-1", 1, ms(0)),
		rec("ReminderSet", "r-1", 2, ms(5)), // moves it
		rec("ReminderSet", "r-1", 1, ms(0)), // replayed
		rec("ReminderDone", "r-1", 3, ms(6)),
		rec("ReminderSet", "r-1", 4, ms(7)), // opens it again
		rec("ReminderSet", "r-2", 1, ms(1)),
		rec("ReminderEscalated", "r-2", 2, ms(2)),
		rec("ReminderDone", "r-3", 2, ms(2)), // an ordered settlement first
		rec("ReminderSet", "r-3", 1, ms(1)),
	)
	for _, r := range recs {
		note("apply %s %s %d: %v", r.Type, r.Stream, r.Position, tb.Apply(ctx, r))
	}
	read := func(tb *dynamo.Table, span deadlines.Span) {
		var pages []string
		n, err := tb.Rows(ctx, span, func(rows []deadlines.Row) bool {
			var page []string
			for _, r := range rows {
				page = append(page, r.Subject+"@"+r.Due.Sub(t0).String())
			}
			pages = append(pages, strings.Join(page, " "))
			return true
		})
		note("rows %s shard %d before %v page %d: %q read %d, %v", span.Kind.Name, span.Shard, span.Before.Sub(t0), span.Page, pages, n, err)
	}
	week := 7 * 24 * time.Hour
	for _, k := range kinds.All() {
		for shard := range tb.Shards() {
			read(tb, deadlines.Span{Kind: k, Shard: shard})
			read(tb, deadlines.Span{Kind: k, Shard: shard, Page: 1})
			read(tb, deadlines.Span{Kind: k, Shard: shard, Page: 2})
			read(tb, deadlines.Span{Kind: k, Shard: shard, From: t0.Add(week + 20*time.Millisecond), Before: t0.Add(week + 75*time.Millisecond), Page: 2})
			read(tb, deadlines.Span{Kind: k, Shard: shard, Before: t0.Add(week + 45*time.Millisecond)})
		}
	}
	for _, s := range []string{"inv-0", "inv-2", "inv-3", "inv-4", "inv-9", "nobody"} {
		row, ok, err := tb.Row(ctx, invoice, s)
		note("row invoice %s: %v %v %v", s, row.Due.Sub(t0), ok, err)
	}
	wider, err := dynamo.New(api, name, kinds, dynamo.WithShards(3))
	if err != nil {
		t.Fatal(err)
	}
	note("check 3 shards: %v", wider.CheckShards(ctx))
	moved, err := wider.Reshard(ctx)
	note("reshard to 3: moved %d, %v", moved, err)
	for _, k := range kinds.All() {
		for shard := range wider.Shards() {
			read(wider, deadlines.Span{Kind: k, Shard: shard})
		}
	}
	return out
}

// attributed is moto's table behind a counted client, with the write units of
// each UpdateItem's index entry attributed to the index partitions written, from
// the item before and after the write read through raw (which is not counted).
type attributed struct {
	dynamo.API
	raw   *dynamodb.Client
	table string
	index capacity.Index

	mu     sync.Mutex
	writes map[string]int
}

func (a *attributed) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	get := func() (map[string]types.AttributeValue, error) {
		out, err := a.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: in.TableName, Key: in.Key, ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) == 0 {
			return nil, err
		}
		return out.Item, nil
	}
	before, err := get()
	if err != nil {
		return nil, err
	}
	out, err := a.API.UpdateItem(ctx, in, o...)
	if err != nil {
		return out, err
	}
	after, err := get()
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for p, n := range indexWrites(a.index, "key", before, after) {
		a.writes[p] += n
	}
	return out, nil
}

// comparableCall is what two tables' calls must share: the operation, whether it
// failed and by a condition, and what it read and wrote.
type comparableCall struct {
	Operation              string
	Failed, ConditionFails bool
	Tables                 []capacity.Usage
}

func comparableCalls(calls []capacity.Call) []comparableCall {
	out := make([]comparableCall, len(calls))
	for i, c := range calls {
		out[i] = comparableCall{c.Operation, c.Err != "", c.ConditionFailed, c.Tables}
	}
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// scanAll returns every item of moto's table named name, by key.
func scanAll(t *testing.T, client *dynamodb.Client, name string) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(name)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			out[item["key"].(*types.AttributeValueMemberS).Value] = maps.Clone(item)
		}
	}
	return out
}
