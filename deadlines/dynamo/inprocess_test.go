package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
)

// inProcess is one Deadlines table (dynamo.Definition) held in memory, behind
// dynamo.API, for the benchmarks that size the module at 100,000 rows: moto takes
// a few milliseconds for each of the Table's conditional writes and reads its
// whole table for every query, too slow for a run of that size. It is used by
// benchmarks only, never by a test in moto's place; TestTheInProcessTableIsMotos
// holds it to moto on a small run (the same items, the same units, call by call).
//
// It takes exactly the expression forms the Table writes and refuses any other
// with an error: conditions of comparisons, BETWEEN, attribute_exists,
// attribute_not_exists and begins_with joined by AND, OR, NOT and parentheses;
// updates of SET (a value, or if_not_exists) and REMOVE; key conditions of the
// index (its partition key equal, its sort key compared, BETWEEN or begins_with);
// GetItem's ProjectionExpression and ConsistentRead; Query's Limit,
// ExclusiveStartKey and ScanIndexForward.
//
// It keeps DynamoDB's accounting, recorded as capacity.Calls as the counter
// records them: item sizes by capacity.ItemSize, units by capacity's rules (a
// write billed on the larger of the item before and after it, a refused one
// too; a GetItem on the whole item; a page of a query on its index entries,
// summed and rounded up to 4 KB, half a unit each eventually consistent); and its
// global secondary index is kept on the index's keys, keys only, with the write
// units of keeping it counted per index partition key (IndexWrites). A query page
// ends at Limit items (and then carries a LastEvaluatedKey, as DynamoDB may even
// when nothing follows; see motoPaging), or before an item that would take it
// past 1 MB of index entries read.
type inProcess struct {
	name     string
	tableKey string         // the table's partition key
	index    capacity.Index // DueByKind: its name, keys (partition, sort), KEYS_ONLY
	// motoPaging ends a page of Limit items with a LastEvaluatedKey only when the
	// partition holds another entry after it, in the key condition or not, as
	// moto does; DynamoDB may answer with one when nothing follows ("If
	// LastEvaluatedKey is not empty, it does not necessarily mean that there is
	// more data in the result set"), which costs one more, empty, query. The
	// check against moto pages as moto does; the benchmarks as DynamoDB may.
	motoPaging bool

	mu          sync.Mutex
	items       map[string]map[string]types.AttributeValue // by the table key's string value
	partitions  map[string]*indexPartition                 // by the index's partition key value
	calls       []capacity.Call
	indexWrites map[string]int // write units of the index, by its partition key value
}

// maxPage is the most a Query reads in one page: "A single Query operation will
// read up to the maximum number of items set (if using the Limit parameter) or a
// maximum of 1 MB of data".
const maxPage = 1 << 20

// indexPartition holds the index entries of one partition key: the table key of
// each item in it, sorted by sort key and then table key when read.
type indexPartition struct {
	keys   map[string]bool
	sorted []string
	dirty  bool
}

// newInProcess returns an empty table named name, defined as dynamo.Definition
// defines it.
func newInProcess(name string) *inProcess {
	def := dynamo.Definition(name)
	gsi := def.GlobalSecondaryIndexes[0]
	x := capacity.Index{Name: aws.ToString(gsi.IndexName), Projection: gsi.Projection.ProjectionType}
	for _, k := range gsi.KeySchema {
		x.Keys = append(x.Keys, aws.ToString(k.AttributeName)) // the hash key is listed first
	}
	return &inProcess{
		name: name, tableKey: aws.ToString(def.KeySchema[0].AttributeName), index: x,
		items: map[string]map[string]types.AttributeValue{}, partitions: map[string]*indexPartition{},
		indexWrites: map[string]int{},
	}
}

var _ dynamo.API = (*inProcess)(nil)

// Calls returns the calls made since the table was made or last reset.
func (t *inProcess) Calls() []capacity.Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.calls)
}

// Reset forgets the calls made so far.
func (t *inProcess) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = nil
}

// IndexWrites returns the write units of keeping the index, by index partition
// key, since the table was made.
func (t *inProcess) IndexWrites() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.indexWrites)
}

// Items returns a copy of every item, by table key.
func (t *inProcess) Items() map[string]map[string]types.AttributeValue {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]map[string]types.AttributeValue, len(t.items))
	for k, item := range t.items {
		out[k] = maps.Clone(item)
	}
	return out
}

func (t *inProcess) record(op string, u capacity.Usage, err error) {
	c := capacity.Call{Function: "bench", Service: "DynamoDB", Operation: op, Attempts: 1, Tables: []capacity.Usage{u}}
	var failed *types.ConditionalCheckFailedException
	if err != nil {
		c.Err, c.ConditionFailed = err.Error(), errors.As(err, &failed)
	}
	t.calls = append(t.calls, c)
}

// refuse records a call DynamoDB would refuse, which consumes nothing.
func (t *inProcess) refuse(op string, err error) error {
	t.calls = append(t.calls, capacity.Call{Function: "bench", Service: "DynamoDB", Operation: op, Attempts: 1, Err: err.Error()})
	return err
}

// keyOf returns the string value of a request's table key.
func (t *inProcess) keyOf(table *string, key map[string]types.AttributeValue) (string, error) {
	if aws.ToString(table) != t.name {
		return "", fmt.Errorf("in-process table: no table %q (this is %q)", aws.ToString(table), t.name)
	}
	k, ok := key[t.tableKey].(*types.AttributeValueMemberS)
	if !ok || len(key) != 1 {
		return "", fmt.Errorf("in-process table: want a key of %s (S) alone, got %v", t.tableKey, key)
	}
	return k.Value, nil
}

// UpdateItem implements dynamo.API.
func (t *inProcess) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key, err := t.keyOf(in.TableName, in.Key)
	if err != nil {
		return nil, t.refuse("UpdateItem", err)
	}
	ex := exprEnv{names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	var cond expr
	if in.ConditionExpression != nil {
		if cond, err = parseCondition(aws.ToString(in.ConditionExpression)); err != nil {
			return nil, t.refuse("UpdateItem", err)
		}
	}
	actions, err := parseUpdate(aws.ToString(in.UpdateExpression))
	if err != nil {
		return nil, t.refuse("UpdateItem", err)
	}
	before := t.items[key]
	after := maps.Clone(before)
	if after == nil {
		after = map[string]types.AttributeValue{t.tableKey: in.Key[t.tableKey]}
	}
	for _, a := range actions {
		name, err := ex.name(a.path)
		if err != nil {
			return nil, t.refuse("UpdateItem", err)
		}
		if name == t.tableKey {
			return nil, t.refuse("UpdateItem", fmt.Errorf("in-process table: an update of the key attribute %s", name))
		}
		if a.remove {
			delete(after, name)
			continue
		}
		v, err := ex.value(a.value)
		if err != nil {
			return nil, t.refuse("UpdateItem", err)
		}
		if a.ifNotExists != "" {
			other, err := ex.name(a.ifNotExists)
			if err != nil {
				return nil, t.refuse("UpdateItem", err)
			}
			if cur, ok := before[other]; ok {
				v = cur
			}
		}
		after[name] = v
	}
	if cond != nil {
		ok, err := cond.eval(ex, before)
		if err != nil {
			return nil, t.refuse("UpdateItem", err)
		}
		if !ok {
			size := capacity.ItemSize(before)
			err := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
			t.record("UpdateItem", capacity.Usage{Table: t.name, Consistency: capacity.Strong, ItemsWritten: 1, BytesWritten: size,
				WriteUnits: capacity.WriteUnits(size)}, err)
			return nil, err
		}
	}
	for _, x := range t.index.Keys {
		if v, ok := after[x]; ok && !keyType(v, x == t.index.Keys[0]) {
			return nil, t.refuse("UpdateItem", fmt.Errorf("in-process table: index key %s of the wrong type", x))
		}
	}
	size := max(capacity.ItemSize(before), capacity.ItemSize(after))
	u := capacity.Usage{Table: t.name, Consistency: capacity.Strong, ItemsWritten: 1, BytesWritten: size, WriteUnits: capacity.WriteUnits(size)}
	for partition, units := range indexWrites(t.index, t.tableKey, before, after) {
		u.IndexWriteUnits += units
		t.indexWrites[partition] += units
	}
	t.moveEntry(key, before, after)
	t.items[key] = after
	t.record("UpdateItem", u, nil)
	out := &dynamodb.UpdateItemOutput{}
	switch in.ReturnValues {
	case types.ReturnValueNone, "":
	case types.ReturnValueAllNew:
		out.Attributes = maps.Clone(after)
	default:
		return nil, fmt.Errorf("in-process table: ReturnValues %s is not modelled", in.ReturnValues)
	}
	return out, nil
}

// keyType reports whether v is of the type of the index's partition key (S) or
// sort key (N).
func keyType(v types.AttributeValue, partition bool) bool {
	if partition {
		_, ok := v.(*types.AttributeValueMemberS)
		return ok
	}
	_, ok := v.(*types.AttributeValueMemberN)
	return ok
}

// indexWrites returns the write units of keeping index x when a table item, keyed
// by tableKey, changes from before to after (nil for absent), by index partition
// key: an entry that appears is written to its partition, one that disappears to
// its own, one whose keys change to both, one whose projected attributes alone
// change to its partition; each is capacity's Index.IndexWriteUnits shared out
// among the partitions it writes to.
func indexWrites(x capacity.Index, tableKey string, before, after map[string]types.AttributeValue) map[string]int {
	keys := []string{tableKey}
	old, cur := x.Entry(before, keys), x.Entry(after, keys)
	part := func(e map[string]types.AttributeValue) string {
		return e[x.Keys[0]].(*types.AttributeValueMemberS).Value
	}
	out := map[string]int{}
	switch units := x.IndexWriteUnits(before, after, keys); {
	case units == 0:
	case old == nil:
		out[part(cur)] = units
	case cur == nil:
		out[part(old)] = units
	case !sameEntryKeys(x, old, cur): // a delete from one partition and a put in the other
		out[part(old)] += capacity.WriteUnits(capacity.ItemSize(old))
		out[part(cur)] += capacity.WriteUnits(capacity.ItemSize(cur))
	default:
		out[part(cur)] = units
	}
	return out
}

func sameEntryKeys(x capacity.Index, a, b map[string]types.AttributeValue) bool {
	for _, k := range x.Keys {
		if compare(a[k], b[k]) != 0 {
			return false
		}
	}
	return true
}

// moveEntry keeps the index partitions as an item changes from before to after.
func (t *inProcess) moveEntry(key string, before, after map[string]types.AttributeValue) {
	keys := []string{t.tableKey}
	old, cur := t.index.Entry(before, keys), t.index.Entry(after, keys)
	if old != nil {
		p := t.partitions[old[t.index.Keys[0]].(*types.AttributeValueMemberS).Value]
		delete(p.keys, key)
		p.dirty = true
	}
	if cur != nil {
		pk := cur[t.index.Keys[0]].(*types.AttributeValueMemberS).Value
		p := t.partitions[pk]
		if p == nil {
			p = &indexPartition{keys: map[string]bool{}}
			t.partitions[pk] = p
		}
		p.keys[key] = true
		p.dirty = true
	}
}

// entries returns the table keys of partition pk, in the index's order: by sort
// key, then by table key.
func (t *inProcess) entries(pk string) []string {
	p := t.partitions[pk]
	if p == nil {
		return nil
	}
	if p.dirty {
		p.sorted = slices.Collect(maps.Keys(p.keys))
		sortKey := t.index.Keys[1]
		slices.SortFunc(p.sorted, func(a, b string) int {
			if c := compare(t.items[a][sortKey], t.items[b][sortKey]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		p.dirty = false
	}
	return p.sorted
}

// GetItem implements dynamo.API.
func (t *inProcess) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key, err := t.keyOf(in.TableName, in.Key)
	if err != nil {
		return nil, t.refuse("GetItem", err)
	}
	if len(in.AttributesToGet) > 0 {
		return nil, t.refuse("GetItem", errors.New("in-process table: AttributesToGet is not modelled"))
	}
	consistency := capacity.Eventual
	if aws.ToBool(in.ConsistentRead) {
		consistency = capacity.Strong
	}
	item := t.items[key]
	out := maps.Clone(item)
	if in.ProjectionExpression != nil && item != nil {
		ex := exprEnv{names: in.ExpressionAttributeNames}
		out = map[string]types.AttributeValue{}
		for p := range strings.SplitSeq(aws.ToString(in.ProjectionExpression), ",") {
			name, err := ex.name(strings.TrimSpace(p))
			if err != nil {
				return nil, t.refuse("GetItem", err)
			}
			if v, ok := item[name]; ok {
				out[name] = v
			}
		}
	}
	u := capacity.Usage{Table: t.name, Consistency: consistency, ReadUnits: capacity.ReadUnits(capacity.ItemSize(item), consistency)}
	if item != nil {
		u.ItemsRead, u.BytesRead = 1, capacity.ItemSize(item)
	}
	t.record("GetItem", u, nil)
	return &dynamodb.GetItemOutput{Item: out}, nil
}

// Query implements dynamo.API, for queries of the index.
func (t *inProcess) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case aws.ToString(in.TableName) != t.name:
		return nil, t.refuse("Query", fmt.Errorf("in-process table: no table %q", aws.ToString(in.TableName)))
	case aws.ToString(in.IndexName) != t.index.Name:
		return nil, t.refuse("Query", fmt.Errorf("in-process table: queries of index %q are not modelled", aws.ToString(in.IndexName)))
	case aws.ToBool(in.ConsistentRead):
		return nil, t.refuse("Query", errors.New("in-process table: consistent reads are not supported on global secondary indexes"))
	case in.FilterExpression != nil || in.ProjectionExpression != nil || in.Select != "" || len(in.KeyConditions) > 0:
		return nil, t.refuse("Query", errors.New("in-process table: filters, projections, Select and KeyConditions are not modelled"))
	}
	ex := exprEnv{names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	pk, sortCond, err := t.keyCondition(ex, aws.ToString(in.KeyConditionExpression))
	if err != nil {
		return nil, t.refuse("Query", err)
	}
	keys := t.entries(pk)
	if !aws.ToBool(in.ScanIndexForward) && in.ScanIndexForward != nil {
		keys = slices.Clone(keys)
		slices.Reverse(keys)
	}
	if in.ExclusiveStartKey != nil {
		start, err := t.keyOf(in.TableName, map[string]types.AttributeValue{t.tableKey: in.ExclusiveStartKey[t.tableKey]})
		if err != nil {
			return nil, t.refuse("Query", err)
		}
		i := slices.Index(keys, start)
		if i < 0 {
			return nil, t.refuse("Query", fmt.Errorf("in-process table: ExclusiveStartKey %q is no entry of %s", start, pk))
		}
		keys = keys[i+1:]
	}
	limit := int(aws.ToInt32(in.Limit))
	out := &dynamodb.QueryOutput{}
	size := 0
	for _, k := range keys {
		if t.motoPaging && limit > 0 && len(out.Items) == limit {
			out.LastEvaluatedKey = maps.Clone(out.Items[len(out.Items)-1])
			break
		}
		entry := t.index.Entry(t.items[k], []string{t.tableKey})
		if sortCond != nil {
			ok, err := sortCond.eval(ex, entry)
			if err != nil {
				return nil, t.refuse("Query", err)
			}
			if !ok {
				continue
			}
		}
		n := capacity.ItemSize(entry)
		if (limit > 0 && len(out.Items) == limit) || size+n > maxPage {
			last := out.Items[len(out.Items)-1]
			out.LastEvaluatedKey = maps.Clone(last)
			break
		}
		out.Items = append(out.Items, entry)
		size += n
	}
	if !t.motoPaging && limit > 0 && len(out.Items) == limit && out.LastEvaluatedKey == nil {
		out.LastEvaluatedKey = maps.Clone(out.Items[len(out.Items)-1])
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	t.record("Query", capacity.Usage{Table: t.name, Index: t.index.Name, Consistency: capacity.Eventual,
		ItemsRead: len(out.Items), BytesRead: size, ReadUnits: capacity.ReadUnits(size, capacity.Eventual)}, nil)
	return out, nil
}

// keyCondition reads a key condition of the index: its partition key equal to a
// value, and what is left for the sort key (nil: nothing).
func (t *inProcess) keyCondition(ex exprEnv, s string) (string, expr, error) {
	e, err := parseCondition(s)
	if err != nil {
		return "", nil, err
	}
	var sortCond expr
	if and, ok := e.(binary); ok && and.op == "AND" {
		e, sortCond = and.left, and.right
	}
	eq, ok := e.(comparison)
	if !ok || eq.op != "=" {
		return "", nil, fmt.Errorf("in-process table: key condition %q: want the partition key equal to a value first", s)
	}
	if name, err := ex.name(eq.left); err != nil || name != t.index.Keys[0] {
		return "", nil, fmt.Errorf("in-process table: key condition %q: want %s first", s, t.index.Keys[0])
	}
	v, err := ex.value(eq.right)
	if err != nil {
		return "", nil, err
	}
	pk, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", nil, fmt.Errorf("in-process table: key condition %q: the partition key is a string", s)
	}
	if sortCond != nil {
		var path string
		switch c := sortCond.(type) {
		case comparison:
			path = c.left
		case between:
			path = c.path
		case function:
			if c.name == "begins_with" {
				path = c.path
			}
		}
		if name, err := ex.name(path); err != nil || name != t.index.Keys[1] {
			return "", nil, fmt.Errorf("in-process table: key condition %q: want a condition on %s after AND", s, t.index.Keys[1])
		}
	}
	return pk.Value, sortCond, nil
}

// exprEnv resolves an expression's placeholders.
type exprEnv struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (ex exprEnv) name(path string) (string, error) {
	if n, ok := ex.names[path]; ok && strings.HasPrefix(path, "#") {
		return n, nil
	}
	return "", fmt.Errorf("in-process table: %q: want a #name of ExpressionAttributeNames (other paths are not modelled)", path)
}

func (ex exprEnv) value(v string) (types.AttributeValue, error) {
	if a, ok := ex.values[v]; ok && strings.HasPrefix(v, ":") {
		return a, nil
	}
	return nil, fmt.Errorf("in-process table: %q: want a :value of ExpressionAttributeValues", v)
}

// expr is a parsed condition.
type expr interface {
	eval(ex exprEnv, item map[string]types.AttributeValue) (bool, error)
}

type binary struct {
	op          string // AND, OR
	left, right expr
}

type not struct{ e expr }

type comparison struct {
	op          string // =, <>, <, <=, >, >=
	left, right string // a #name and a :value, or the other way round
}

type between struct{ path, low, high string }

type function struct {
	name  string // attribute_exists, attribute_not_exists, begins_with
	path  string
	value string // begins_with's
}

func (b binary) eval(ex exprEnv, item map[string]types.AttributeValue) (bool, error) {
	l, err := b.left.eval(ex, item)
	if err != nil {
		return false, err
	}
	r, err := b.right.eval(ex, item)
	if err != nil {
		return false, err
	}
	if b.op == "AND" {
		return l && r, nil
	}
	return l || r, nil
}

func (n not) eval(ex exprEnv, item map[string]types.AttributeValue) (bool, error) {
	v, err := n.e.eval(ex, item)
	return !v, err
}

// operand resolves a #name (from item; nil if absent) or a :value.
func operand(ex exprEnv, item map[string]types.AttributeValue, s string) (types.AttributeValue, error) {
	if strings.HasPrefix(s, ":") {
		return ex.value(s)
	}
	name, err := ex.name(s)
	if err != nil {
		return nil, err
	}
	return item[name], nil
}

func (c comparison) eval(ex exprEnv, item map[string]types.AttributeValue) (bool, error) {
	l, err := operand(ex, item, c.left)
	if err != nil {
		return false, err
	}
	r, err := operand(ex, item, c.right)
	if err != nil {
		return false, err
	}
	if l == nil || r == nil || !sameType(l, r) {
		return false, nil
	}
	d := compare(l, r)
	switch c.op {
	case "=":
		return d == 0, nil
	case "<>":
		return d != 0, nil
	case "<":
		return d < 0, nil
	case "<=":
		return d <= 0, nil
	case ">":
		return d > 0, nil
	}
	return d >= 0, nil
}

func (b between) eval(ex exprEnv, item map[string]types.AttributeValue) (bool, error) {
	lo, err := comparison{">=", b.path, b.low}.eval(ex, item)
	if err != nil || !lo {
		return false, err
	}
	return comparison{"<=", b.path, b.high}.eval(ex, item)
}

func (f function) eval(ex exprEnv, item map[string]types.AttributeValue) (bool, error) {
	name, err := ex.name(f.path)
	if err != nil {
		return false, err
	}
	v, ok := item[name]
	switch f.name {
	case "attribute_exists":
		return ok, nil
	case "attribute_not_exists":
		return !ok, nil
	}
	prefix, err := ex.value(f.value)
	if err != nil {
		return false, err
	}
	s, isS := v.(*types.AttributeValueMemberS)
	p, isP := prefix.(*types.AttributeValueMemberS)
	return isS && isP && strings.HasPrefix(s.Value, p.Value), nil
}

// sameType reports whether a and b are both strings or both numbers: the only
// types the Table compares.
func sameType(a, b types.AttributeValue) bool {
	switch a.(type) {
	case *types.AttributeValueMemberS:
		_, ok := b.(*types.AttributeValueMemberS)
		return ok
	case *types.AttributeValueMemberN:
		_, ok := b.(*types.AttributeValueMemberN)
		return ok
	}
	return false
}

// compare orders two strings by their bytes (DynamoDB compares strings by their
// UTF-8 bytes) and two numbers by value; any other pair is equal only when both
// are nil.
func compare(a, b types.AttributeValue) int {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value)
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			x, _, errA := big.ParseFloat(a.Value, 10, 128, big.ToNearestEven)
			y, _, errB := big.ParseFloat(b.Value, 10, 128, big.ToNearestEven)
			if errA == nil && errB == nil {
				return x.Cmp(y)
			}
		}
	}
	if a == nil && b == nil {
		return 0
	}
	return 1
}

// The parser. Tokens are names (#x), values (:x), words (functions, keywords),
// and the punctuation ( ) , = <> < <= > >=.

func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.ContainsRune("(),=", c):
			toks = append(toks, string(c))
			i++
		case c == '<' || c == '>':
			j := i + 1
			if j < len(s) && (s[j] == '=' || (c == '<' && s[j] == '>')) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		case c == '#' || c == ':' || c == '_' || unicode.IsLetter(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("in-process table: expression %q: %q is not modelled", s, c)
		}
	}
	return toks, nil
}

type parser struct {
	src  string
	toks []string
	pos  int
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) expect(tok string) error {
	if got := p.next(); !strings.EqualFold(got, tok) {
		return fmt.Errorf("in-process table: expression %q: want %q, got %q", p.src, tok, got)
	}
	return nil
}

func (p *parser) placeholder(prefix string) (string, error) {
	t := p.next()
	if !strings.HasPrefix(t, prefix) || len(t) < 2 {
		return "", fmt.Errorf("in-process table: expression %q: want a %s placeholder, got %q", p.src, prefix, t)
	}
	return t, nil
}

func (p *parser) operand() (string, error) {
	t := p.next()
	if (strings.HasPrefix(t, "#") || strings.HasPrefix(t, ":")) && len(t) > 1 {
		return t, nil
	}
	return "", fmt.Errorf("in-process table: expression %q: want a #name or a :value, got %q", p.src, t)
}

// parseCondition parses a condition or a key condition.
func parseCondition(s string) (expr, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{src: s, toks: toks}
	e, err := p.or()
	if err == nil && p.pos != len(toks) {
		err = fmt.Errorf("in-process table: expression %q: unexpected %q", s, p.peek())
	}
	return e, err
}

func (p *parser) or() (expr, error) {
	left, err := p.and()
	for err == nil && strings.EqualFold(p.peek(), "OR") {
		p.next()
		var right expr
		if right, err = p.and(); err == nil {
			left = binary{"OR", left, right}
		}
	}
	return left, err
}

func (p *parser) and() (expr, error) {
	left, err := p.not()
	for err == nil && strings.EqualFold(p.peek(), "AND") {
		p.next()
		var right expr
		if right, err = p.not(); err == nil {
			left = binary{"AND", left, right}
		}
	}
	return left, err
}

func (p *parser) not() (expr, error) {
	if strings.EqualFold(p.peek(), "NOT") {
		p.next()
		e, err := p.not()
		return not{e}, err
	}
	return p.primary()
}

func (p *parser) primary() (expr, error) {
	switch t := p.peek(); t {
	case "(":
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case "attribute_exists", "attribute_not_exists", "begins_with":
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		path, err := p.placeholder("#")
		if err != nil {
			return nil, err
		}
		f := function{name: t, path: path}
		if t == "begins_with" {
			if err := p.expect(","); err != nil {
				return nil, err
			}
			if f.value, err = p.placeholder(":"); err != nil {
				return nil, err
			}
		}
		return f, p.expect(")")
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	switch op := p.next(); op {
	case "=", "<>", "<", "<=", ">", ">=":
		right, err := p.operand()
		return comparison{op, left, right}, err
	default:
		if !strings.EqualFold(op, "BETWEEN") {
			return nil, fmt.Errorf("in-process table: expression %q: %q is not modelled", p.src, op)
		}
		low, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err := p.expect("AND"); err != nil {
			return nil, err
		}
		high, err := p.operand()
		return between{left, low, high}, err
	}
}

// action is one action of an update: SET path = value (or = if_not_exists(other,
// value)), or REMOVE path.
type action struct {
	path        string
	remove      bool
	value       string
	ifNotExists string
}

// parseUpdate parses an update of SET and REMOVE clauses, each at most once.
func parseUpdate(s string) ([]action, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{src: s, toks: toks}
	var out []action
	seen := map[string]bool{}
	for p.pos < len(toks) {
		clause := strings.ToUpper(p.next())
		if (clause != "SET" && clause != "REMOVE") || seen[clause] {
			return nil, fmt.Errorf("in-process table: update %q: clause %q is not modelled, or repeated", s, clause)
		}
		seen[clause] = true
		for {
			path, err := p.placeholder("#")
			if err != nil {
				return nil, err
			}
			a := action{path: path, remove: clause == "REMOVE"}
			if !a.remove {
				if err := p.expect("="); err != nil {
					return nil, err
				}
				if p.peek() == "if_not_exists" {
					p.next()
					if err := p.expect("("); err != nil {
						return nil, err
					}
					if a.ifNotExists, err = p.placeholder("#"); err != nil {
						return nil, err
					}
					if err := p.expect(","); err != nil {
						return nil, err
					}
					if a.value, err = p.placeholder(":"); err != nil {
						return nil, err
					}
					if err := p.expect(")"); err != nil {
						return nil, err
					}
				} else if a.value, err = p.placeholder(":"); err != nil {
					return nil, err
				}
			}
			out = append(out, a)
			if p.peek() != "," {
				break
			}
			p.next()
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("in-process table: update %q: no action", s)
	}
	return out, nil
}
