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
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Parked stream records. A record a stream consumer could not handle when it came
// (streambatch.Options.Park) is kept as a row of its own, keyed by the consumer,
// the record's version and its stream id (ParkedKey), so that the record's
// position in the stream can move on. The row is in a lane of its own
// (deadline.ParkedLane: "parked#0", …, by the stream id's hash), stamped with the
// time it is due for redelivery: the sweep's query, whose cutoff is its now, finds
// those that are due and reads nothing more, and the sweep redelivers them
// (Sweeper.Sweep). Redelivered, the row leaves the index and becomes a marker that
// DynamoDB's TTL deletes; a record parked again afterwards (Lambda may deliver it
// again) is parked anew.

// ParkedKeyPrefix starts the key of every parked record's row. No payment
// reference, process or payment stream id starts with it.
const ParkedKeyPrefix = "redeliver#"

// redeliveredMarker is the settled value of a parked record's row once redelivered.
const redeliveredMarker = "redelivered"

// ParkedKey returns the to-do table's key of a record parked for consumer:
// ParkedKeyPrefix, the consumer, the version and the stream id, separated by "#".
func ParkedKey(consumer, streamID string, version int64) string {
	return ParkedKeyPrefix + consumer + "#" + strconv.FormatInt(version, 10) + "#" + streamID
}

// parkedOfKey reverses ParkedKey.
func parkedOfKey(key string) (parked.Record, bool) {
	rest, ok := strings.CutPrefix(key, ParkedKeyPrefix)
	if !ok {
		return parked.Record{}, false
	}
	consumer, rest, ok1 := strings.Cut(rest, "#")
	v, stream, ok2 := strings.Cut(rest, "#")
	version, err := strconv.ParseInt(v, 10, 64)
	if !ok1 || !ok2 || err != nil || version < 1 || stream == "" || !known(consumer) {
		return parked.Record{}, false
	}
	return parked.Record{Consumer: consumer, StreamID: stream, Version: version}, true
}

func known(consumer string) bool {
	for _, c := range eventfilter.Consumers() {
		if c == consumer {
			return true
		}
	}
	return false
}

// Park keeps r for delivery again to consumer, due at due: one conditional
// UpdateItem, which creates the row, or makes a redelivered one's marker parked
// again, and leaves a row that is parked already as it is (its due time and
// attempts). Safe to call any number of times for the same record.
func (p *Projection) Park(ctx context.Context, consumer string, r eventstore.Record, due time.Time) error {
	if !known(consumer) {
		return fmt.Errorf("deadline: park %s version %d: unknown consumer %q", r.StreamID, r.Version, consumer)
	}
	if r.StreamID == "" || r.Version < 1 {
		return fmt.Errorf("deadline: park: record %q version %d", r.StreamID, r.Version)
	}
	key := ParkedKey(consumer, r.StreamID, r.Version)
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_not_exists(#shard)"),
		UpdateExpression:    aws.String("SET #at = :at, #shard = :shard, #attempts = :zero REMOVE #settled, #exp"),
		ExpressionAttributeNames: map[string]string{
			"#at": schema.DeadlineDueAt, "#shard": schema.DeadlineKindShard, "#attempts": schema.DeadlineAttempts,
			"#settled": schema.DeadlineSettled, "#exp": schema.DeadlineExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at":    &types.AttributeValueMemberN{Value: strconv.FormatInt(due.UnixMilli(), 10)},
			":shard": &types.AttributeValueMemberS{Value: p.parkedShardOf(r.StreamID)},
			":zero":  &types.AttributeValueMemberN{Value: "0"},
		},
	})
	return ignoreFailedCondition(err, key)
}

// parkedShardOf returns the index partition of a parked record of a stream.
func (p *Projection) parkedShardOf(streamID string) string {
	return deadline.ParkedLane.Prefix + p.ShardOf(streamID)
}

// Unpark implements parked.Rows: the row of a redelivered record leaves
// the index and becomes a marker that DynamoDB's TTL deletes. A row no longer
// parked is left as it is.
func (p *Projection) Unpark(ctx context.Context, row parked.Record) error {
	key := ParkedKey(row.Consumer, row.StreamID, row.Version)
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_exists(#shard)"),
		UpdateExpression:    aws.String("SET #settled = :settled, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#settled": schema.DeadlineSettled, "#exp": schema.DeadlineExpiresAt, "#shard": schema.DeadlineKindShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":settled": &types.AttributeValueMemberS{Value: redeliveredMarker},
			":exp":     &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(p.markerTTL).Unix(), 10)},
		},
	})
	return ignoreFailedCondition(err, key)
}

// Postpone implements parked.Rows: the row's due time moves to due and its
// attempts count one more. A row no longer parked is left as it is.
func (p *Projection) Postpone(ctx context.Context, row parked.Record, due time.Time) error {
	key := ParkedKey(row.Consumer, row.StreamID, row.Version)
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_exists(#shard)"),
		UpdateExpression:    aws.String("SET #at = :at ADD #attempts :one"),
		ExpressionAttributeNames: map[string]string{
			"#at": schema.DeadlineDueAt, "#shard": schema.DeadlineKindShard, "#attempts": schema.DeadlineAttempts,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at":  &types.AttributeValueMemberN{Value: strconv.FormatInt(due.UnixMilli(), 10)},
			":one": &types.AttributeValueMemberN{Value: "1"},
		},
	})
	return ignoreFailedCondition(err, key)
}

var _ parked.Rows = (*Projection)(nil)

func decodeParked(item map[string]types.AttributeValue) (parked.Record, error) {
	key, ms, err := stamped(item, "parked row")
	if err != nil {
		return parked.Record{}, err
	}
	row, ok := parkedOfKey(key)
	if !ok {
		return parked.Record{}, fmt.Errorf("deadline: parked row %q: not a parked record's key", key)
	}
	row.Due = time.UnixMilli(ms).UTC()
	return row, nil
}

// Backlog returns the open processes stuck before cutoff (the process-stuck kind's
// rows opened before it), every cancellation owed to the provider and every parked
// record: one Query per shard of each of their lanes, never a scan; each list
// oldest (or soonest due) first. It also returns how many items DynamoDB read.
func (p *Projection) Backlog(ctx context.Context, cutoff time.Time) (deadlinekinds.Backlog, int, error) {
	stuck, ok := p.kinds.ByName(deadlinekinds.Stuck)
	if !ok {
		return deadlinekinds.Backlog{}, 0, fmt.Errorf("deadline: %s declares no %s kind", p.table, deadlinekinds.Stuck)
	}
	var b deadlinekinds.Backlog
	read := 0
	for s := range p.shards {
		n, err := p.LanePages(ctx, stuck.Lane(), s, stuck.DueAt(cutoff), func(page []deadline.Row) bool {
			for _, r := range page {
				b.Open = append(b.Open, deadlinekinds.Open{RentalID: r.Subject, RequestedAt: r.Since})
			}
			return true
		})
		read += n
		if err == nil {
			n, err = p.ParkedPages(ctx, s, time.Time{}, func(page []parked.Record) bool {
				b.Parked = append(b.Parked, page...)
				return true
			})
			read += n
		}
		if err != nil {
			return deadlinekinds.Backlog{}, read, err
		}
	}
	owed, n, err := p.OwedCancellations(ctx)
	if err != nil {
		return deadlinekinds.Backlog{}, read + n, err
	}
	b.Owed = owed
	deadlinekinds.SortOpen(b.Open)
	parked.Sort(b.Parked)
	return b, read + n, nil
}

// ReshardParked moves every parked record's row to its shard under the
// projection's count, and returns how many it found on another shard. Parked records come from no
// event of the store, so the rebuild's replay (Reshard) never reaches them: without
// this, a record parked on a shard the new count no longer has would never be read
// by a sweep again. It reads every shard the parked lane can have (MaxShards), so
// that a reshard interrupted before it got here is mended by the next rebuild;
// parked records are few, and a rebuild reads the whole event store anyway. Safe to
// run while records are parked and unparked: a row is moved only while it is
// still parked, on another shard.
func (p *Projection) ReshardParked(ctx context.Context) (int, error) {
	moved := 0
	for s := range MaxShards {
		var rows []parked.Record
		if _, err := p.ParkedPages(ctx, s, time.Time{}, func(page []parked.Record) bool { rows = append(rows, page...); return true }); err != nil {
			return moved, fmt.Errorf("deadline: read the parked records of shard %d: %w", s, err)
		}
		for _, r := range rows {
			to := p.parkedShardOf(r.StreamID)
			if to == deadline.ParkedLane.Shard(s) {
				continue
			}
			if err := p.moveTo(ctx, ParkedKey(r.Consumer, r.StreamID, r.Version), to, deadline.ParkedLane.Prefix); err != nil {
				return moved, err
			}
			moved++
		}
	}
	return moved, nil
}
