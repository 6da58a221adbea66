package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
)

// configKey is the key of the table's item that records its shard count. It has
// no index attributes, so no read of the index ever meets it; New refuses a kind
// whose keys may be it.
const configKey = "#config"

// The config item's attributes.
const (
	configShards = "shards"     // N: the count the rows are written with
	configMoving = "movingFrom" // N: while a Reshard is unfinished, the most shards rows may still be in
)

// ErrShardMismatch reports a Table whose shard count is not the one its table
// records: its rows would go to partitions the others do not read, and the other
// way round.
var ErrShardMismatch = errors.New("dynamo: the shard count is not the table's")

// ShardMismatchError is ErrShardMismatch with both counts.
type ShardMismatchError struct {
	Table       string
	TableShards int // the count the table records
	Shards      int // the Table's own count
}

func (e *ShardMismatchError) Error() string {
	return fmt.Sprintf("dynamo: table %s records %d shards, and this is made with %d: use %d, or move every row with Reshard (made with %d, once no writer with %d runs)",
		e.Table, e.TableShards, e.Shards, e.TableShards, e.Shards, e.TableShards)
}

// Unwrap makes a ShardMismatchError match ErrShardMismatch.
func (e *ShardMismatchError) Unwrap() error { return ErrShardMismatch }

// CheckShards records the Table's shard count in a table that records none yet,
// and returns a *ShardMismatchError when the table records another. Call it
// before writing or reading: it is one UpdateItem, safe to call any number of
// times, from any number of writers at once.
func (t *Table) CheckShards(ctx context.Context) error {
	out, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.table),
		Key:                       itemKey(configKey),
		UpdateExpression:          aws.String("SET #n = if_not_exists(#n, :n)"),
		ExpressionAttributeNames:  map[string]string{"#n": configShards},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(t.shards))},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return fmt.Errorf("dynamo: read the shard count of %s: %w", t.table, err)
	}
	stored, ok := number(out.Attributes, configShards)
	if !ok {
		return fmt.Errorf("dynamo: %s records no shard count", t.table)
	}
	if stored != t.shards {
		return &ShardMismatchError{Table: t.table, TableShards: stored, Shards: t.shards}
	}
	return nil
}

// Reshard makes the Table's shard count the table's: it records the count, then
// moves every outstanding row of the Table's kinds to the shard the count gives,
// reading every partition of each kind's rows that may hold one (under the count
// the table recorded, under an unfinished Reshard's, and under this one), and
// returns how many rows it moved. Each move is conditional on the row being where
// it was read, outstanding, and of its kind, so a Table with the new count may
// apply records meanwhile; a writer with the old count may not (CheckShards then
// refuses to start one). Reads of the index see writes a moment late: rows
// written just before Reshard starts may be left. Interrupted, Reshard leaves a
// note in the table, and the next one reads the same partitions again; it is safe
// to run again at any time. Until it returns, a sweep or listing with the new
// count may miss rows not yet moved.
func (t *Table) Reshard(ctx context.Context) (moved int, err error) {
	widest, err := t.startReshard(ctx)
	if err != nil {
		return 0, err
	}
	for _, k := range t.kinds.All() {
		for shard := range widest {
			n, err := t.moveRows(ctx, k, shard)
			moved += n
			if err != nil {
				return moved, err
			}
		}
	}
	_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.table),
		Key:                       itemKey(configKey),
		ConditionExpression:       aws.String("#n = :n"),
		UpdateExpression:          aws.String("REMOVE #moving"),
		ExpressionAttributeNames:  map[string]string{"#n": configShards, "#moving": configMoving},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(t.shards))},
	})
	if err != nil {
		return moved, fmt.Errorf("dynamo: reshard %s: finish (did another Reshard change the count meanwhile?): %w", t.table, err)
	}
	return moved, nil
}

// startReshard records the Table's count as the table's, with the most shards
// rows may be in until the Reshard finishes, and returns that: the count the
// table recorded (every one, MaxShards, if it recorded none), an unfinished
// Reshard's, or the Table's own, whichever is most.
func (t *Table) startReshard(ctx context.Context) (int, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: itemKey(configKey), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, fmt.Errorf("dynamo: reshard %s: read its shard count: %w", t.table, err)
	}
	recorded, hasCount := number(out.Item, configShards)
	moving, _ := number(out.Item, configMoving)
	widest := min(max(recorded, moving, t.shards), MaxShards)
	cond := "attribute_not_exists(#n)"
	values := map[string]types.AttributeValue{":n": num(int64(t.shards)), ":w": num(int64(widest))}
	if hasCount {
		cond, values[":was"] = "#n = :was", num(int64(recorded))
	} else {
		widest = MaxShards
		values[":w"] = num(MaxShards)
	}
	_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.table),
		Key:                       itemKey(configKey),
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String("SET #n = :n, #moving = :w"),
		ExpressionAttributeNames:  map[string]string{"#n": configShards, "#moving": configMoving},
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return 0, fmt.Errorf("dynamo: reshard %s: record %d shards (did another Reshard change the count meanwhile?): %w", t.table, t.shards, err)
	}
	return widest, nil
}

// moveRows moves each row in k's partition of shard that the Table's count puts
// in another shard to that one, and returns how many it moved.
func (t *Table) moveRows(ctx context.Context, k deadlines.Kind, shard int) (int, error) {
	from := partition(k.Name, shard)
	in, _ := t.query(k.Name, deadlines.Span{Kind: k, Shard: shard})
	moved := 0
	pages := dynamodb.NewQueryPaginator(t.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return moved, fmt.Errorf("dynamo: reshard: query %s: %w", from, err)
		}
		for _, item := range page.Items {
			row, err := decode(k, item)
			if err != nil {
				return moved, err
			}
			to := partition(k.Name, t.shardOf(row.Subject))
			if to == from {
				continue
			}
			_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(t.table),
				Key:                       itemKey(k.Key(row.Subject)),
				ConditionExpression:       aws.String("#shard = :from"),
				UpdateExpression:          aws.String("SET #shard = :to"),
				ExpressionAttributeNames:  map[string]string{"#shard": attrKindShard},
				ExpressionAttributeValues: map[string]types.AttributeValue{":from": str(from), ":to": str(to)},
			})
			var failed *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				moved++
			case !errors.As(err, &failed): // a failed condition: settled, taken over or moved meanwhile
				return moved, fmt.Errorf("dynamo: reshard: move %s row %s to %s: %w", k.Name, row.Subject, to, err)
			}
		}
	}
	return moved, nil
}

// number reads the whole number attribute name of item.
func number(item map[string]types.AttributeValue, name string) (int, bool) {
	n, _ := item[name].(*types.AttributeValueMemberN)
	if n == nil {
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	return v, err == nil
}
