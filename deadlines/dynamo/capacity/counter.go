package capacity

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Reader is what the counter reads through, outside the counted clients: the
// tables' key schemas and indexes, and items as they are before and after a write
// (the request alone does not say how large an updated item is). *dynamodb.Client
// has it. Give the counter a client built from a configuration that does not carry
// the counter's own middleware, or its reads would be counted too.
type Reader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ Reader = (*dynamodb.Client)(nil)

// Call is one request an instrumented client made, as the counter saw it.
type Call struct {
	// Function is the label the client's middleware was installed with.
	Function string
	// Service is the SDK's service id ("DynamoDB", "Scheduler", ...) and Operation
	// the API operation ("PutItem"). Calls to services other than DynamoDB are
	// recorded without units, so that they can be counted.
	Service, Operation string
	// Attempts is how many times the SDK sent the request (retries included).
	Attempts int
	// Err is the error the caller got, if any.
	Err string
	// ConditionFailed reports a write refused by its condition (for
	// TransactWriteItems, a cancelled transaction), which still consumes units.
	ConditionFailed bool
	// Approximate says why the units are an estimate rather than what DynamoDB
	// bills; it is empty when they follow the published rules exactly.
	Approximate string
	// Tables holds what the call read and wrote, per table and index.
	Tables []Usage
}

// Usage is what one call read and wrote on one table, or one index of it.
type Usage struct {
	Table string
	// Index names the global secondary index a Query or Scan read; empty for the
	// table itself.
	Index string
	// Consistency is how the reads were served.
	Consistency Consistency
	// ItemsRead and BytesRead are the items a read returned and their size.
	// ItemsWritten and BytesWritten are the items a write targeted (those refused by
	// a condition included, since they are billed too) and the billed size of each
	// (the larger of the item before and after the write).
	ItemsRead, BytesRead, ItemsWritten, BytesWritten int
	// ReadUnits and WriteUnits are the request units billed on the table (or index,
	// for a read); IndexWriteUnits those of keeping the table's global secondary
	// indexes up to date, which are billed as write request units too.
	ReadUnits       float64
	WriteUnits      int
	IndexWriteUnits int
}

// Counter records the calls of every client its middleware is installed on
// (Middleware), until Reset. It is safe for concurrent use.
type Counter struct {
	reader Reader

	mu     sync.Mutex
	calls  []Call
	tables map[string]tableInfo
}

// NewCounter returns a counter that learns about tables and items through reader
// (see Reader).
func NewCounter(reader Reader) *Counter {
	return &Counter{reader: reader, tables: map[string]tableInfo{}}
}

// Calls returns the calls recorded since the counter was made or last reset, in the
// order they ended.
func (c *Counter) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// Reset forgets the calls recorded so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

func (c *Counter) record(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

// middleware IDs; a stack takes at most one counter.
const (
	initializeID = "capacity.Counter"
	attemptsID   = "capacity.Attempts"
)

type attemptsKey struct{}

// Middleware returns an APIOptions entry that records every call of a client built
// with it under the label function, installed on a configuration or on one client:
//
//	cfg.APIOptions = append(cfg.APIOptions, counter.Middleware("writer"))
//	counted := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
//		o.APIOptions = append(o.APIOptions, counter.Middleware("writer"))
//	})
//
// It never changes a request or its outcome: a failure to measure makes the call's
// units approximate, never the call fail. DynamoDB writes are bracketed by reads of
// the item through the counter's Reader, so that their billed size (the larger of
// the item before and after) is known; those reads are not counted, and they see
// exactly what the write saw as long as no other writer changes the same item in
// between. The counter is a measuring instrument for tests and benchmarks: against
// AWS, those reads would be billed like any other.
func (c *Counter) Middleware(function string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(initializeID,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				attempts := new(atomic.Int64)
				ctx = middleware.WithStackValue(ctx, attemptsKey{}, attempts)
				call := Call{Function: function, Service: awsmiddleware.GetServiceID(ctx), Operation: awsmiddleware.GetOperationName(ctx)}
				var m *measurement
				if call.Service == "DynamoDB" {
					m = c.before(ctx, in.Parameters)
				}
				out, md, err := next.HandleInitialize(ctx, in)
				call.Attempts = int(attempts.Load())
				if err != nil {
					call.Err = err.Error()
				}
				if m != nil {
					c.after(ctx, m, &call, out.Result, err)
				}
				c.record(call)
				return out, md, err
			}), middleware.After)
		if err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
		count := middleware.FinalizeMiddlewareFunc(attemptsID,
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if n, ok := middleware.GetStackValue(ctx, attemptsKey{}).(*atomic.Int64); ok {
					n.Add(1)
				}
				return next.HandleFinalize(ctx, in)
			})
		// After the retryer, so that each attempt passes through it.
		if _, ok := stack.Finalize.Get("Retry"); ok {
			err = stack.Finalize.Insert(count, "Retry", middleware.After)
		} else {
			err = stack.Finalize.Add(count, middleware.Before)
		}
		if err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
		return nil
	}
}

// tableInfo is what the counter knows of a table: its primary key attributes and its
// global secondary indexes.
type tableInfo struct {
	keys    []string
	indexes []Index
}

func (c *Counter) table(ctx context.Context, name string) (tableInfo, error) {
	c.mu.Lock()
	info, ok := c.tables[name]
	c.mu.Unlock()
	if ok {
		return info, nil
	}
	out, err := c.reader.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
	if err != nil {
		return tableInfo{}, fmt.Errorf("describe table %s: %w", name, err)
	}
	info = tableInfo{keys: keyNames(out.Table.KeySchema)}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		x := Index{Name: deref(g.IndexName), Keys: keyNames(g.KeySchema), Projection: types.ProjectionTypeAll}
		if g.Projection != nil {
			x.Projection, x.NonKey = g.Projection.ProjectionType, g.Projection.NonKeyAttributes
		}
		info.indexes = append(info.indexes, x)
	}
	c.mu.Lock()
	c.tables[name] = info
	c.mu.Unlock()
	return info, nil
}

func keyNames(schema []types.KeySchemaElement) []string {
	names := make([]string, 0, len(schema))
	for _, k := range schema {
		if k.KeyType == types.KeyTypeHash {
			names = append([]string{deref(k.AttributeName)}, names...)
		} else {
			names = append(names, deref(k.AttributeName))
		}
	}
	return names
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// read gets the whole item with key from table, strongly consistently; nil if there
// is none.
func (c *Counter) read(ctx context.Context, table string, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	consistent := true
	out, err := c.reader.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: &consistent})
	if err != nil {
		return nil, fmt.Errorf("read %s item: %w", table, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// write is one item a write operation touches.
type write struct {
	table string
	key   map[string]types.AttributeValue
	// put is the item a Put writes; nil for the other kinds.
	put map[string]types.AttributeValue
	// kind is "put", "update", "delete" or "check" (a transaction's ConditionCheck).
	kind   string
	before map[string]types.AttributeValue
}

// measurement is what the counter learned before a DynamoDB call went out.
type measurement struct {
	params any
	writes []*write
	approx []string
}

func (m *measurement) approximate(format string, args ...any) {
	m.approx = append(m.approx, fmt.Sprintf(format, args...))
}

// before notes the items a write is about to change, as they are now.
func (c *Counter) before(ctx context.Context, params any) *measurement {
	m := &measurement{params: params}
	add := func(table *string, key, put map[string]types.AttributeValue, kind string) {
		m.writes = append(m.writes, &write{table: deref(table), key: key, put: put, kind: kind})
	}
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		add(in.TableName, nil, in.Item, "put")
	case *dynamodb.UpdateItemInput:
		add(in.TableName, in.Key, nil, "update")
	case *dynamodb.DeleteItemInput:
		add(in.TableName, in.Key, nil, "delete")
	case *dynamodb.BatchWriteItemInput:
		for _, table := range sortedKeys(in.RequestItems) {
			for _, r := range in.RequestItems[table] {
				switch {
				case r.PutRequest != nil:
					add(&table, nil, r.PutRequest.Item, "put")
				case r.DeleteRequest != nil:
					add(&table, r.DeleteRequest.Key, nil, "delete")
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, t := range in.TransactItems {
			switch {
			case t.Put != nil:
				add(t.Put.TableName, nil, t.Put.Item, "put")
			case t.Update != nil:
				add(t.Update.TableName, t.Update.Key, nil, "update")
			case t.Delete != nil:
				add(t.Delete.TableName, t.Delete.Key, nil, "delete")
			case t.ConditionCheck != nil:
				add(t.ConditionCheck.TableName, t.ConditionCheck.Key, nil, "check")
			}
		}
	}
	for _, w := range m.writes {
		if w.key == nil {
			info, err := c.table(ctx, w.table)
			if err != nil {
				m.approximate("%v", err)
				continue
			}
			w.key = keyOf(w.put, info.keys)
		}
		before, err := c.read(ctx, w.table, w.key)
		if err != nil {
			m.approximate("%v", err)
			continue
		}
		w.before = before
	}
	return m
}

func keyOf(item map[string]types.AttributeValue, keys []string) map[string]types.AttributeValue {
	key := make(map[string]types.AttributeValue, len(keys))
	for _, k := range keys {
		if v, ok := item[k]; ok {
			key[k] = v
		}
	}
	return key
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// after turns what the call did into units on call.
func (c *Counter) after(ctx context.Context, m *measurement, call *Call, result any, err error) {
	var failed *types.ConditionalCheckFailedException
	var cancelled *types.TransactionCanceledException
	conditionFailed := errors.As(err, &failed)
	transactionCancelled := errors.As(err, &cancelled)
	call.ConditionFailed = conditionFailed || transactionCancelled
	if err != nil && !call.ConditionFailed {
		// A request DynamoDB refused (validation, throttling, a network failure the
		// retries did not overcome) consumed nothing that can be known.
		call.Tables = nil
		finish(call, m)
		return
	}
	tables := &usages{}
	switch in := m.params.(type) {
	case *dynamodb.GetItemInput:
		out, _ := result.(*dynamodb.GetItemOutput)
		u := tables.get(deref(in.TableName), "", consistency(in.ConsistentRead))
		item := map[string]types.AttributeValue(nil)
		if out != nil {
			item = out.Item
		}
		if len(item) > 0 && (in.ProjectionExpression != nil || len(in.AttributesToGet) > 0) {
			// The bill is for the whole item, not the attributes returned.
			if full, err := c.read(ctx, deref(in.TableName), in.Key); err != nil {
				m.approximate("%v", err)
			} else if full != nil {
				item = full
			}
		}
		u.readOne(item)
		u.ReadUnits += ReadUnits(ItemSize(item), u.Consistency)
	case *dynamodb.QueryInput:
		out, _ := result.(*dynamodb.QueryOutput)
		c.page(ctx, m, tables.get(deref(in.TableName), deref(in.IndexName), consistency(in.ConsistentRead)),
			in.IndexName != nil, in.ProjectionExpression != nil || len(in.AttributesToGet) > 0 || in.Select == types.SelectCount, queryPage(out))
	case *dynamodb.ScanInput:
		out, _ := result.(*dynamodb.ScanOutput)
		c.page(ctx, m, tables.get(deref(in.TableName), deref(in.IndexName), consistency(in.ConsistentRead)),
			in.IndexName != nil, in.ProjectionExpression != nil || len(in.AttributesToGet) > 0 || in.Select == types.SelectCount, scanPage(out))
	case *dynamodb.BatchGetItemInput:
		out, _ := result.(*dynamodb.BatchGetItemOutput)
		batchGet(m, tables, in, out)
	case *dynamodb.TransactGetItemsInput:
		out, _ := result.(*dynamodb.TransactGetItemsOutput)
		c.transactGet(ctx, m, tables, in, out)
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
		c.writes(ctx, m, tables, call.ConditionFailed, false, nil)
	case *dynamodb.BatchWriteItemInput:
		out, _ := result.(*dynamodb.BatchWriteItemOutput)
		var unprocessed map[string][]types.WriteRequest
		if out != nil {
			unprocessed = out.UnprocessedItems
		}
		c.writes(ctx, m, tables, false, false, unprocessed)
	case *dynamodb.TransactWriteItemsInput:
		c.writes(ctx, m, tables, call.ConditionFailed, true, nil)
	default:
		if unmodelled[call.Operation] {
			m.approximate("%s is not modelled: its units are not counted", call.Operation)
		}
	}
	call.Tables = tables.values()
	finish(call, m)
}

// batchGet counts a BatchGetItem: each item read as a GetItem of its own.
func batchGet(m *measurement, tables *usages, in *dynamodb.BatchGetItemInput, out *dynamodb.BatchGetItemOutput) {
	for _, table := range sortedKeys(in.RequestItems) {
		ka := in.RequestItems[table]
		u := tables.get(table, "", consistency(ka.ConsistentRead))
		var items []map[string]types.AttributeValue
		if out != nil {
			items = out.Responses[table]
		}
		if ka.ProjectionExpression != nil || len(ka.AttributesToGet) > 0 {
			m.approximate("BatchGetItem on %s with a projection: billed on whole items, counted on the attributes returned", table)
		}
		// Keys asked for and not found still cost a minimal read each; unprocessed
		// keys were not read.
		missing := len(ka.Keys) - len(items)
		if out != nil {
			missing -= len(out.UnprocessedKeys[table].Keys)
		}
		sizes := make([]int, 0, len(items)+max(0, missing))
		for _, item := range items {
			u.readOne(item)
			sizes = append(sizes, ItemSize(item))
		}
		for range max(0, missing) {
			sizes = append(sizes, 0)
		}
		u.ReadUnits += ReadUnitsEach(sizes, u.Consistency)
	}
}

// transactGet counts a TransactGetItems: each item read transactionally, billed
// whole whatever its projection.
func (c *Counter) transactGet(ctx context.Context, m *measurement, tables *usages, in *dynamodb.TransactGetItemsInput, out *dynamodb.TransactGetItemsOutput) {
	for i, g := range in.TransactItems {
		if g.Get == nil {
			continue
		}
		u := tables.get(deref(g.Get.TableName), "", Transactional)
		var item map[string]types.AttributeValue
		if out != nil && i < len(out.Responses) {
			item = out.Responses[i].Item
		}
		if g.Get.ProjectionExpression != nil {
			if full, err := c.read(ctx, deref(g.Get.TableName), g.Get.Key); err != nil {
				m.approximate("%v", err)
			} else if full != nil {
				item = full
			}
		}
		u.readOne(item)
		u.ReadUnits += ReadUnits(ItemSize(item), Transactional)
	}
}

// unmodelled lists the DynamoDB operations that consume request units but that the
// counter does not count (PartiQL). The operations not listed and not counted above
// (DescribeTable, CreateTable, ...) are not billed per request.
var unmodelled = map[string]bool{
	"ExecuteStatement": true, "BatchExecuteStatement": true, "ExecuteTransaction": true,
}

func finish(call *Call, m *measurement) {
	if len(m.approx) > 0 {
		call.Approximate = fmt.Sprint(m.approx)
	}
}

func consistency(consistent *bool) Consistency {
	if consistent != nil && *consistent {
		return Strong
	}
	return Eventual
}

// pageResult is one page of a Query or Scan.
type pageResult struct {
	items          []map[string]types.AttributeValue
	scanned, count int32
}

func queryPage(out *dynamodb.QueryOutput) pageResult {
	if out == nil {
		return pageResult{}
	}
	return pageResult{out.Items, out.ScannedCount, out.Count}
}

func scanPage(out *dynamodb.ScanOutput) pageResult {
	if out == nil {
		return pageResult{}
	}
	return pageResult{out.Items, out.ScannedCount, out.Count}
}

// page counts one Query or Scan page: the items it returned, summed and rounded up
// to 4 KB as one read. On an index, an item is the index entry, which is what the
// index query returns and bills. Items a filter dropped were read and billed but
// never seen here, and a projection on the table hides part of each item: either
// makes the count a lower bound, and says so.
func (c *Counter) page(ctx context.Context, m *measurement, u *Usage, onIndex, projected bool, p pageResult) {
	size := 0
	for _, item := range p.items {
		if projected && !onIndex {
			if info, err := c.table(ctx, u.Table); err == nil {
				if full, err := c.read(ctx, u.Table, keyOf(item, info.keys)); err == nil && full != nil {
					item = full
				} else {
					m.approximate("%s: a projected item could not be read whole", u.Table)
				}
			} else {
				m.approximate("%v", err)
			}
		}
		u.readOne(item)
		size += ItemSize(item)
	}
	if projected && onIndex {
		m.approximate("%s %s: a projection on an index query is counted on the attributes returned", u.Table, u.Index)
	}
	if p.scanned > p.count {
		m.approximate("%s: %d items dropped by a filter were read and billed but not seen", u.Table, p.scanned-p.count)
	}
	u.ReadUnits += ReadUnits(size, u.Consistency)
}

// writes counts the items of a write operation, reading each item again after the
// write where the request does not say what it became.
func (c *Counter) writes(ctx context.Context, m *measurement, tables *usages, failed, transaction bool, unprocessed map[string][]types.WriteRequest) {
	for _, w := range m.writes {
		if isUnprocessed(w, unprocessed) {
			continue
		}
		var after map[string]types.AttributeValue
		switch {
		case failed || w.kind == "check":
			after = w.before
		case w.kind == "put":
			after = w.put
		case w.kind == "update":
			a, err := c.read(ctx, w.table, w.key)
			if err != nil {
				m.approximate("%v", err)
			}
			after = a
		}
		size := max(ItemSize(w.before), ItemSize(after))
		if failed && w.kind == "put" {
			// "For an existing item, the number of write capacity units consumed
			// depends on the size of the new item ... For a new item, DynamoDB
			// consumes one write capacity unit." For a failed update the new item
			// is never computed; the item as it stands is used instead.
			size = 0
			if w.before != nil {
				size = ItemSize(w.put)
			}
		}
		units := WriteUnits(size)
		if transaction {
			units = TransactWriteUnits(size)
		}
		u := tables.get(w.table, "", Strong)
		u.ItemsWritten++
		u.BytesWritten += size
		u.WriteUnits += units
		if failed || w.kind == "check" {
			continue
		}
		info, err := c.table(ctx, w.table)
		if err != nil {
			m.approximate("%v", err)
			continue
		}
		for _, x := range info.indexes {
			u.IndexWriteUnits += x.IndexWriteUnits(w.before, after, info.keys)
		}
	}
}

func isUnprocessed(w *write, unprocessed map[string][]types.WriteRequest) bool {
	for _, r := range unprocessed[w.table] {
		var item map[string]types.AttributeValue
		switch {
		case r.PutRequest != nil && w.kind == "put":
			item = r.PutRequest.Item
		case r.DeleteRequest != nil && w.kind == "delete":
			item = r.DeleteRequest.Key
		default:
			continue
		}
		if sameKey(item, w.key) {
			return true
		}
	}
	return false
}

func sameKey(item, key map[string]types.AttributeValue) bool {
	if len(key) == 0 {
		return false
	}
	for k, v := range key {
		if !equalValue(item[k], v) {
			return false
		}
	}
	return true
}

func equalValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && string(a.Value) == string(b.Value)
	}
	return false
}

// usages collects a call's usage per table and index, in first-use order.
type usages struct{ list []*Usage }

func (t *usages) get(table, index string, c Consistency) *Usage {
	for _, u := range t.list {
		if u.Table == table && u.Index == index {
			return u
		}
	}
	u := &Usage{Table: table, Index: index, Consistency: c}
	t.list = append(t.list, u)
	return u
}

func (t *usages) values() []Usage {
	out := make([]Usage, len(t.list))
	for i, u := range t.list {
		out[i] = *u
	}
	return out
}

func (u *Usage) readOne(item map[string]types.AttributeValue) {
	if item == nil {
		return
	}
	u.ItemsRead++
	u.BytesRead += ItemSize(item)
}
