package capacity_test

import (
	"context"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/deadlines/internal/moto"
)

func TestMain(m *testing.M) { moto.Main(m) }

type av = types.AttributeValue

func str(v string) av { return &types.AttributeValueMemberS{Value: v} }
func num(v string) av { return &types.AttributeValueMemberN{Value: v} }

// counted returns a client whose calls counter records, under the label "test".
func counted(cfg aws.Config, counter *capacity.Counter) *dynamodb.Client {
	c := cfg.Copy()
	c.APIOptions = append(slices.Clone(cfg.APIOptions), counter.Middleware("test"))
	return dynamodb.NewFromConfig(c)
}

// one runs f and returns the one call it made, failing the test otherwise.
func one(t *testing.T, counter *capacity.Counter, f func(ctx context.Context) error, wantErr bool) capacity.Call {
	t.Helper()
	counter.Reset()
	err := f(context.Background())
	if (err != nil) != wantErr {
		t.Fatalf("err = %v, want an error: %v", err, wantErr)
	}
	calls := counter.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls recorded, want 1: %+v", len(calls), calls)
	}
	if calls[0].Approximate != "" {
		t.Errorf("units approximate: %s", calls[0].Approximate)
	}
	return calls[0]
}

func usage(t *testing.T, c capacity.Call) capacity.Usage {
	t.Helper()
	if len(c.Tables) != 1 {
		t.Fatalf("%s: %d usages, want 1: %+v", c.Operation, len(c.Tables), c.Tables)
	}
	return c.Tables[0]
}

// The attributes of the tables of these tests, a Deadlines table's: items keyed by
// key, and an index of those that have a kind and shard, by it and their due
// time, that projects keys only.
const (
	attrKey     = "key"
	attrSubject = "subject"
	attrShard   = "kindShard"
	attrDue     = "dueAtMs"
	attrVersion = "version"
	attrSettled = "settled"
	byDue       = "DueByKind"
)

// createTable creates a table on moto, deleted when the test ends: keyed by key,
// with the keys-only index byDue if indexed.
func createTable(t *testing.T, client *dynamodb.Client, prefix string, indexed bool) string {
	t.Helper()
	name := moto.TableName(t, prefix)
	s := func(v string) *string { return &v }
	in := &dynamodb.CreateTableInput{
		TableName:            s(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: s(attrKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: s(attrKey), KeyType: types.KeyTypeHash}},
	}
	if indexed {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: s(attrShard), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: s(attrDue), AttributeType: types.ScalarAttributeTypeN})
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
			IndexName: s(byDue),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: s(attrShard), KeyType: types.KeyTypeHash},
				{AttributeName: s(attrDue), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}}
	}
	if _, err := client.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: s(name)}) })
	return name
}

// settledRow is row once settled: out of the index, with how it settled.
func settledRow(row map[string]av) map[string]av {
	out := map[string]av{}
	for k, v := range row {
		if k != attrShard {
			out[k] = v
		}
	}
	out[attrSettled], out[attrVersion] = str("done"), num("2")
	return out
}

// The counter against moto on a table whose keys-only index makes every write's
// index cost visible.
func TestCounterCountsEveryKindOfCall(t *testing.T) {
	cfg := moto.Config(t)
	plain := dynamodb.NewFromConfig(cfg)
	table := createTable(t, plain, "rows", true)
	counter := capacity.NewCounter(plain)
	db := counted(cfg, counter)
	tbl := aws.String(table)
	key := func(ref string) map[string]av { return map[string]av{attrKey: str(ref)} }
	outstanding := map[string]av{
		attrKey: str("k_1"), attrSubject: str("s_1"),
		attrDue: num("1764460800000"), attrShard: str("due#0"), attrVersion: num("1"),
	}
	update := func(ctx context.Context, expr, cond string, values map[string]av) error {
		in := &dynamodb.UpdateItemInput{TableName: tbl, Key: key("k_1"), UpdateExpression: aws.String(expr), ExpressionAttributeValues: values}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
			in.ExpressionAttributeNames = map[string]string{"#ref": attrKey}
		}
		_, err := db.UpdateItem(ctx, in)
		return err
	}

	t.Run("update creating an indexed row", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			return update(ctx, "SET subject = :r, dueAtMs = :at, kindShard = :s, version = :v", "attribute_not_exists(#ref)",
				map[string]av{":r": str("s_1"), ":at": num("1764460800000"), ":s": str("due#0"), ":v": num("1")})
		}, false)
		u := usage(t, c)
		if c.Service != "DynamoDB" || c.Operation != "UpdateItem" || c.Function != "test" || c.Attempts != 1 {
			t.Errorf("call = %+v", c)
		}
		if u.ItemsWritten != 1 || u.BytesWritten != capacity.ItemSize(outstanding) || u.WriteUnits != 1 || u.IndexWriteUnits != 1 {
			t.Errorf("usage = %+v, want 1 item of %d bytes, 1 write unit and 1 on the index", u, capacity.ItemSize(outstanding))
		}
	})
	t.Run("update refused by its condition", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			return update(ctx, "SET version = :v", "attribute_not_exists(#ref)", map[string]av{":v": num("2")})
		}, true)
		if u := usage(t, c); !c.ConditionFailed || c.Err == "" || u.WriteUnits != 1 || u.IndexWriteUnits != 0 {
			t.Errorf("call = %+v, want a failed condition billed 1 write unit and nothing on the index", c)
		}
	})
	t.Run("update leaving the index", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			return update(ctx, "SET settled = :how, version = :v REMOVE kindShard", "", map[string]av{":how": str("done"), ":v": num("2")})
		}, false)
		if u := usage(t, c); u.WriteUnits != 1 || u.IndexWriteUnits != 1 || u.BytesWritten != max(capacity.ItemSize(outstanding), capacity.ItemSize(settledRow(outstanding))) {
			t.Errorf("usage = %+v, want the larger item, 1 write unit and 1 index delete", u)
		}
	})
	t.Run("strongly consistent get", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("k_1"), ConsistentRead: aws.Bool(true)})
			return err
		}, false)
		if u := usage(t, c); u.ItemsRead != 1 || u.ReadUnits != 1 || u.Consistency != capacity.Strong {
			t.Errorf("usage = %+v, want 1 item, 1 read unit", u)
		}
	})
	t.Run("projected get is billed on the whole item", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("k_1"), ProjectionExpression: aws.String("version")})
			return err
		}, false)
		if u := usage(t, c); u.ItemsRead != 1 || u.BytesRead <= 20 || u.ReadUnits != 0.5 {
			t.Errorf("usage = %+v, want the whole item, half a unit", u)
		}
	})
	t.Run("eventually consistent get of nothing", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("k_none")})
			return err
		}, false)
		if u := usage(t, c); u.ItemsRead != 0 || u.ReadUnits != 0.5 {
			t.Errorf("usage = %+v, want no item and half a unit", u)
		}
	})

	big := func(ref string, size int) map[string]av {
		it := map[string]av{attrKey: str(ref)}
		it["pad"] = str(strings.Repeat("x", size-capacity.ItemSize(it)-len("pad")))
		return it
	}
	put := func(it map[string]av) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: it})
			return err
		}
	}
	t.Run("put of 3000 bytes", func(t *testing.T) {
		if u := usage(t, one(t, counter, put(big("k_big", 3000)), false)); u.BytesWritten != 3000 || u.WriteUnits != 3 || u.IndexWriteUnits != 0 {
			t.Errorf("usage = %+v, want 3000 bytes, 3 units", u)
		}
	})
	t.Run("put replacing it with 500 bytes is billed the larger", func(t *testing.T) {
		if u := usage(t, one(t, counter, put(big("k_big", 500)), false)); u.BytesWritten != 3000 || u.WriteUnits != 3 {
			t.Errorf("usage = %+v, want 3000 bytes, 3 units", u)
		}
	})
	t.Run("delete", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("k_big")})
			return err
		}, false)
		if u := usage(t, c); u.BytesWritten != 500 || u.WriteUnits != 1 {
			t.Errorf("usage = %+v, want 500 bytes, 1 unit", u)
		}
	})

	indexed := func(ref, at string) map[string]av {
		return map[string]av{attrKey: str(ref), attrShard: str("1"), attrDue: num(at), attrSubject: str("b_" + ref)}
	}
	t.Run("batch write", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
				{PutRequest: &types.PutRequest{Item: indexed("k_a", "100")}},
				{PutRequest: &types.PutRequest{Item: indexed("k_b", "200")}},
			}}})
			return err
		}, false)
		if u := usage(t, c); u.ItemsWritten != 2 || u.WriteUnits != 2 || u.IndexWriteUnits != 2 {
			t.Errorf("usage = %+v, want 2 items, 2 units, 2 on the index", u)
		}
	})
	t.Run("index query", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String(byDue),
				KeyConditionExpression:    aws.String("kindShard = :s"),
				ExpressionAttributeValues: map[string]av{":s": str("1")}})
			return err
		}, false)
		u := usage(t, c)
		entry := capacity.ItemSize(map[string]av{attrKey: str("k_a"), attrShard: str("1"), attrDue: num("100")})
		if u.Index != byDue || u.ItemsRead != 2 || u.BytesRead != 2*entry || u.ReadUnits != 0.5 || u.Consistency != capacity.Eventual {
			t.Errorf("usage = %+v, want 2 index entries of %d bytes, half a unit", u, entry)
		}
	})
	t.Run("empty index query costs the minimum", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String(byDue),
				KeyConditionExpression:    aws.String("kindShard = :s"),
				ExpressionAttributeValues: map[string]av{":s": str("3")}})
			return err
		}, false)
		if u := usage(t, c); u.ItemsRead != 0 || u.ReadUnits != 0.5 {
			t.Errorf("usage = %+v, want half a unit", u)
		}
	})
	t.Run("batch get", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {
				Keys: []map[string]av{key("k_a"), key("k_b"), key("k_none")}, ConsistentRead: aws.Bool(true)}}})
			return err
		}, false)
		if u := usage(t, c); u.ItemsRead != 2 || u.ReadUnits != 3 {
			t.Errorf("usage = %+v, want 2 items read and 3 units (one per key asked)", u)
		}
	})
	t.Run("transaction", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: tbl, Item: big("k_t1", 1500)}},
				{Put: &types.Put{TableName: tbl, Item: indexed("k_t2", "300")}},
			}})
			return err
		}, false)
		if u := usage(t, c); u.ItemsWritten != 2 || u.WriteUnits != 2*2+2*1 || u.IndexWriteUnits != 1 {
			t.Errorf("usage = %+v, want 6 units (twice 2 and twice 1) and 1 on the index", u)
		}
	})
	t.Run("cancelled transaction still consumes", func(t *testing.T) {
		c := one(t, counter, func(ctx context.Context) error {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: tbl, Item: indexed("k_t3", "400")}},
				{Put: &types.Put{TableName: tbl, Item: indexed("k_t2", "300"), ConditionExpression: aws.String("attribute_not_exists(#ref)"),
					ExpressionAttributeNames: map[string]string{"#ref": attrKey}}},
			}})
			return err
		}, true)
		if u := usage(t, c); !c.ConditionFailed || u.WriteUnits != 4 || u.IndexWriteUnits != 0 {
			t.Errorf("call = %+v, want a cancelled transaction billed 4 units, nothing on the index", c)
		}
	})
	t.Run("a filter makes a query approximate", func(t *testing.T) {
		counter.Reset()
		_, err := db.Query(context.Background(), &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String(byDue),
			KeyConditionExpression: aws.String("kindShard = :s"), FilterExpression: aws.String("dueAtMs > :at"),
			ExpressionAttributeValues: map[string]av{":s": str("1"), ":at": num("150")}})
		if err != nil {
			t.Fatal(err)
		}
		calls := counter.Calls()
		if len(calls) != 1 || !strings.Contains(calls[0].Approximate, "dropped by a filter") {
			t.Errorf("calls = %+v, want one call marked approximate", calls)
		}
		if got := capacity.Approximations(calls); len(got) != 1 {
			t.Errorf("Approximations = %q", got)
		}
	})

	tot := capacity.Total(counter.Calls())
	if tot.Calls != 1 || tot.ItemsRead != 2 {
		t.Errorf("Total = %+v", tot)
	}
}

// failFirst answers the first request with a retryable server error, as DynamoDB
// does now and then, and passes every other one on.
type failFirst struct {
	next   aws.HTTPClient
	failed atomic.Bool
}

func (f *failFirst) Do(r *http.Request) (*http.Response, error) {
	if f.failed.CompareAndSwap(false, true) {
		body := `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"try again"}`
		return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error", Request: r,
			Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Crc32": {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)}},
			Body:   io.NopCloser(strings.NewReader(body))}, nil
	}
	return f.next.Do(r)
}

func TestCounterCountsAttemptsAndOtherServices(t *testing.T) {
	cfg := moto.Config(t)
	plain := dynamodb.NewFromConfig(cfg)
	table := createTable(t, plain, "items", false)
	counter := capacity.NewCounter(plain)
	flaky := cfg.Copy()
	flaky.HTTPClient = &failFirst{next: cfg.HTTPClient}
	if flaky.HTTPClient.(*failFirst).next == nil {
		flaky.HTTPClient.(*failFirst).next = http.DefaultClient
	}
	db := counted(flaky, counter)
	c := one(t, counter, func(ctx context.Context) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]av{attrKey: str("s-1"), attrVersion: num("1")}})
		return err
	}, false)
	if u := usage(t, c); c.Attempts != 2 || u.WriteUnits != 1 {
		t.Errorf("call = %+v, want 2 attempts and 1 write unit", c)
	}

	counted := cfg.Copy()
	counted.APIOptions = append(slices.Clone(cfg.APIOptions), counter.Middleware("sweep"))
	counter.Reset()
	_, err := scheduler.NewFromConfig(counted).GetSchedule(context.Background(), &scheduler.GetScheduleInput{Name: aws.String("no-such-schedule")})
	if err == nil {
		t.Fatal("GetSchedule of a missing schedule succeeded")
	}
	calls := counter.Calls()
	if len(calls) != 1 || calls[0].Service != "Scheduler" || calls[0].Operation != "GetSchedule" || calls[0].Function != "sweep" || len(calls[0].Tables) != 0 {
		t.Errorf("calls = %+v, want one Scheduler GetSchedule without units", calls)
	}
}

func TestGroupBy(t *testing.T) {
	calls := []capacity.Call{
		{Function: "command", Operation: "Query", Tables: []capacity.Usage{{Table: "events", ReadUnits: 1, ItemsRead: 2}}},
		{Function: "command", Operation: "PutItem", Tables: []capacity.Usage{{Table: "events", WriteUnits: 1, ItemsWritten: 1}}},
		{Function: "process", Operation: "TransactWriteItems", Tables: []capacity.Usage{
			{Table: "events", WriteUnits: 4, ItemsWritten: 2}, {Table: "deadlines", WriteUnits: 2, IndexWriteUnits: 1, ItemsWritten: 1}}},
		{Function: "sweep", Service: "Scheduler", Operation: "DeleteSchedule"},
	}
	byTable := capacity.GroupBy(calls, func(_ capacity.Call, u capacity.Usage) string { return u.Table })
	if got := byTable["events"]; got.Calls != 3 || got.WriteUnits != 5 || got.ReadUnits != 1 || got.ItemsWritten != 3 {
		t.Errorf("events = %+v", got)
	}
	if got := byTable["deadlines"]; got.Calls != 1 || got.AllWriteUnits() != 3 {
		t.Errorf("deadlines = %+v", got)
	}
	if _, ok := byTable[""]; ok {
		t.Error("a call without usage was grouped under an empty key")
	}
	byFunction := capacity.GroupBy(calls, func(c capacity.Call, _ capacity.Usage) string { return c.Function })
	if got := byFunction["process"]; got.Calls != 1 || got.AllWriteUnits() != 7 {
		t.Errorf("process = %+v", got)
	}
	if got := byFunction["sweep"]; got.Calls != 1 || got.AllWriteUnits() != 0 {
		t.Errorf("sweep = %+v", got)
	}
	if tot := capacity.Total(calls); tot.Calls != 4 || tot.AllWriteUnits() != 8 {
		t.Errorf("Total = %+v", tot)
	}
}
