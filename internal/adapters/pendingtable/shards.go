package pendingtable

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
	"github.com/bikerental/bikerental/internal/eventstore"
)

// ConfigKey is the PendingPayments item that records how many index shards the
// table's rows are spread over. It has no due shard, so it is never in the sweep's
// index.
const ConfigKey = "#config"

const configShards = "shards" // N: the shard count the rows were written with

// ErrShardMismatch reports a projection whose shard count is not the table's: its
// rows would land on shards the sweep does not read, or the other way round.
var ErrShardMismatch = errors.New("deadline: the shard count differs from the PendingPayments table's")

// ShardMismatchError is ErrShardMismatch with both counts.
type ShardMismatchError struct {
	Table        string
	TableShards  int
	ConfigShards int
}

func (e *ShardMismatchError) Error() string {
	return fmt.Sprintf("deadline: %s is sharded %d ways, and this is configured for %d (PENDING_SHARDS): "+
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
		Key:                       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: ConfigKey}},
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
		Key:                       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: ConfigKey}},
		UpdateExpression:          aws.String("SET #n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": configShards},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(p.shards)}},
	})
	if err != nil {
		return fmt.Errorf("deadline: record the shard count of %s: %w", p.table, err)
	}
	return nil
}

// Reshard moves the row a record created to its shard under the projection's
// count: a payment's outstanding row after its PaymentPrepared, a rental's open
// process after its BikeRequested, a cancellation owed to the provider after its
// CancellationOwedAtProvider, a refund owed after its RefundOwed. A settled payment's, a completed process's or a
// settled cancellation's marker, a row already there, and every other record are left as they are.
func (p *Projection) Reshard(ctx context.Context, r eventstore.Record) error {
	var key, shard string
	if c, ok, err := deadline.ProcessChangeOf(r); err != nil || ok {
		if err != nil || c.Completed {
			return err
		}
		key, shard = OpenKey(c.RentalID), p.openShardOf(c.RentalID)
	} else if c, ok, err := deadline.CancellationChangeOf(r); err != nil || ok {
		if err != nil || c.Settled {
			return err
		}
		key, shard = OwedKey(c.Reference), p.owedShardOf(c.Reference)
	} else if c, ok, err := deadline.RefundChangeOf(r); err != nil || ok {
		if err != nil || c.Refunded {
			return err
		}
		key, shard = RefundKey(c.Reference), p.refundShardOf(c.Reference)
	} else if c, ok, err := deadline.PaymentChangeOf(r); err != nil || !ok || c.Settled != "" {
		return err
	} else {
		key, shard = c.Reference, p.ShardOf(c.Reference)
	}
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression:       aws.String("attribute_exists(#shard) AND #shard <> :shard"),
		UpdateExpression:          aws.String("SET #shard = :shard"),
		ExpressionAttributeNames:  map[string]string{"#shard": schema.PendingDueShard},
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: shard}},
	})
	return ignoreFailedCondition(err, key)
}
