package deadlinetable

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// legacyConfigShards is the attribute of the Deadlines table's ConfigKey item
// that records its shard count.
const legacyConfigShards = configShards

// CarryParked parks again, in the projection's table, every stream record parked
// in the Deadlines table named legacy (the to-do list before the Deadlines
// table), due when it was due there, and returns how many it found. It reads that
// table's shard count and, for each shard, the parked records' partition of its
// index (the rows stamped below 0 of "open-<n>"): one Query per shard, never a
// scan. The owed cancellations there are not carried: a rebuild projects them
// from their events. It writes nothing to legacy, and parking is idempotent, so
// it is safe to run again.
func (p *Projection) CarryParked(ctx context.Context, legacy string) (int, error) {
	shards, err := p.legacyShards(ctx, legacy)
	if err != nil {
		return 0, err
	}
	carried := 0
	for s := range shards {
		in := &dynamodb.QueryInput{
			TableName: aws.String(legacy), IndexName: aws.String(schema.LegacyPendingByStamp),
			KeyConditionExpression:    aws.String("#shard = :shard AND #at < :zero"),
			ExpressionAttributeNames:  map[string]string{"#shard": schema.LegacyPendingShard, "#at": schema.LegacyPendingStamp},
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: schema.LegacyParkedShardLane + strconv.Itoa(s)}, ":zero": &types.AttributeValueMemberN{Value: "0"}},
		}
		pages := dynamodb.NewQueryPaginator(p.client, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return carried, fmt.Errorf("deadline: read the parked records of %s: %w", legacy, err)
			}
			for _, item := range page.Items {
				ok, err := p.carry(ctx, item)
				if err != nil {
					return carried, err
				}
				if ok {
					carried++
				}
			}
		}
	}
	return carried, nil
}

// carry parks again the parked record of one item of the legacy index; ok is false
// for an item that is no parked record (an owed cancellation).
func (p *Projection) carry(ctx context.Context, item map[string]types.AttributeValue) (ok bool, err error) {
	key, _ := item[schema.LegacyPendingKey].(*types.AttributeValueMemberS)
	at, _ := item[schema.LegacyPendingStamp].(*types.AttributeValueMemberN)
	if key == nil || at == nil || !strings.HasPrefix(key.Value, ParkedKeyPrefix) {
		return false, nil
	}
	parked, valid := parkedOfKey(key.Value)
	ms, err := strconv.ParseInt(at.Value, 10, 64)
	if !valid || err != nil {
		return false, fmt.Errorf("deadline: parked row %q (%s %q): not a parked record's", key.Value, schema.LegacyPendingStamp, at.Value)
	}
	r := eventstore.Record{StreamID: parked.StreamID, Version: parked.Version}
	return true, p.Park(ctx, parked.Consumer, r, time.UnixMilli(-ms))
}

// legacyShards reads the shard count the Deadlines table named legacy
// records, or DefaultShards if it records none.
func (p *Projection) legacyShards(ctx context.Context, legacy string) (int, error) {
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(legacy), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.LegacyPendingKey: &types.AttributeValueMemberS{Value: ConfigKey}},
	})
	if err != nil {
		return 0, fmt.Errorf("deadline: read the shard count of %s: %w", legacy, err)
	}
	n, ok := out.Item[legacyConfigShards].(*types.AttributeValueMemberN)
	if !ok {
		return DefaultShards, nil
	}
	shards, err := strconv.Atoi(n.Value)
	if err != nil || shards < 1 || shards > MaxShards {
		return 0, fmt.Errorf("deadline: %s records %q shards", legacy, n.Value)
	}
	return shards, nil
}
