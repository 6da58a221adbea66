package deadlinetable

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// ConfigKey is the to-do table's item that records how many index shards the
// table's rows are spread over. It has no due shard, so it is never in the sweep's
// index.
const ConfigKey = "#config"

const configShards = "shards" // N: the shard count the rows were written with

// ErrShardMismatch reports a projection whose shard count is not the table's: its
// rows would land on shards the sweep does not read, or the other way round.
var ErrShardMismatch = errors.New("deadline: the shard count differs from the to-do table's")

// ShardMismatchError is ErrShardMismatch with both counts.
type ShardMismatchError struct {
	Table        string
	TableShards  int
	ConfigShards int
}

func (e *ShardMismatchError) Error() string {
	return fmt.Sprintf("deadline: %s is sharded %d ways, and this is configured for %d (DEADLINES_SHARDS): "+
		"change the table's count with rentalctl rebuild -shards %d -reshard, which moves every outstanding row",
		e.Table, e.TableShards, e.ConfigShards, e.ConfigShards)
}

// Unwrap makes a ShardMismatchError match ErrShardMismatch.
func (e *ShardMismatchError) Unwrap() error { return ErrShardMismatch }

// CheckShards records the projection's shard count in a table that has none yet
// and returns a *ShardMismatchError when the table's is another. It is one
// UpdateItem, and safe to call any number of times, from any number of writers.
func (p *Projection) CheckShards(ctx context.Context) error {
	out, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: ConfigKey}},
		UpdateExpression:          aws.String("SET #n = if_not_exists(#n, :n)"),
		ExpressionAttributeNames:  map[string]string{"#n": configShards},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(p.shards)}},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return fmt.Errorf("deadline: read the shard count of %s: %w", p.table, err)
	}
	n, _ := out.Attributes[configShards].(*types.AttributeValueMemberN)
	if n == nil {
		return fmt.Errorf("deadline: %s records no shard count", p.table)
	}
	if stored, err := strconv.Atoi(n.Value); err != nil || stored != p.shards {
		return &ShardMismatchError{Table: p.table, TableShards: stored, ConfigShards: p.shards}
	}
	return nil
}

// SetShards records the projection's shard count as the table's, whatever it was:
// for the rebuild that moves every outstanding row to its shard under the new count.
func (p *Projection) SetShards(ctx context.Context) error {
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: ConfigKey}},
		UpdateExpression:          aws.String("SET #n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": configShards},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(p.shards)}},
	})
	if err != nil {
		return fmt.Errorf("deadline: record the shard count of %s: %w", p.table, err)
	}
	return nil
}

// Reshard moves the rows a record opened to their shard under the projection's
// count: a row of a kind after its opening record (a payment's after its
// PaymentPrepared, a rental's open process after its BikeRequested), a cancellation
// owed to the provider after its CancellationOwedAtProvider. A settled row's or
// cancellation's marker, a row already there, and every other record are left as
// they are.
func (p *Projection) Reshard(ctx context.Context, r eventstore.Record) error {
	if c, ok, err := owed.ChangeOf(r); err != nil || ok {
		if err != nil || c.Settled {
			return err
		}
		return p.moveTo(ctx, OwedKey(c.Reference), p.owedShardOf(c.Reference), deadline.OwedLane.Prefix)
	}
	changes, err := p.kinds.Changes(r)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if c.Settled {
			continue
		}
		if err := p.moveTo(ctx, c.Kind.Key(c.Subject), p.shardOf(c.Kind, c.Subject), c.Kind.Lane().Prefix); err != nil {
			return err
		}
	}
	return nil
}

// moveTo moves the outstanding row at key to shard, in the lane of the given
// prefix, unless it is there already, is a marker, or is in another lane (a row
// another kind took over, or has yet to).
func (p *Projection) moveTo(ctx context.Context, key, shard, lane string) error {
	values := map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: shard}}
	cond := "#shard <> :shard AND " + p.inLane("#shard", lane, ":lane", values)
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String("SET #shard = :shard"),
		ExpressionAttributeNames:  map[string]string{"#shard": schema.DeadlineKindShard},
		ExpressionAttributeValues: values,
	})
	return ignoreFailedCondition(err, key)
}

// inLane is a condition that the item's attribute name (a lane and shard) is in
// the lane of the given prefix: it exists and begins with the prefix, which no
// other lane's begins with (each ends in "#"). Its value is added to values, named
// value.
func (p *Projection) inLane(name, lane, value string, values map[string]types.AttributeValue) string {
	values[value] = &types.AttributeValueMemberS{Value: lane}
	return "attribute_exists(" + name + ") AND begins_with(" + name + ", " + value + ")"
}
