package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
)

// Apply implements deadlines.Projection, with one conditional UpdateItem per kind
// the record means something to, so that what a write does depends only on what
// the item already reflects:
//
//   - An opening creates the row: in the index, stamped with its due time. It
//     changes nothing if anything stands at the key already (the same row, or the
//     marker of a settled one), except that a kind that takes another over
//     (Kind.Takes) moves that kind's outstanding row into its own partitions, due
//     as the opening says, in the same write; and that an opening of an Ordered
//     kind later in the stream than what the row reflects opens the kind's
//     settled row again, or moves its outstanding one to its own due time.
//   - A settlement takes the row out of the index and leaves a marker (How), which
//     DynamoDB's TTL deletes the marker TTL after the record's time. It is final,
//     written over whatever the key holds (kinds that share a key share its
//     marker), unless the kind is Ordered: then it applies only if it is later in
//     the stream than what the row reflects.
//
// A record with a change about a subject its kind does not read back (empty, or
// refused by Kind.Valid) is an error wrapping deadlines.ErrCorruptRecord, and
// nothing of it is written: such a row would make every read of its shard fail.
// So is a record of an Ordered kind without a Position (1 or more). On an error
// from DynamoDB some kinds' writes may have been made: applying the record again
// is safe.
func (t *Table) Apply(ctx context.Context, r deadlines.Record) error {
	changes, err := t.kinds.Changes(r)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if subject, ok := c.Kind.SubjectOf(c.Kind.Key(c.Subject)); !ok || subject != c.Subject {
			return fmt.Errorf("%w: %s %s at %d: kind %s: subject %q is not one the kind reads back", deadlines.ErrCorruptRecord, r.Type, r.Stream, r.Position, c.Kind.Name, c.Subject)
		}
		if c.Kind.Ordered && r.Position < 1 {
			return fmt.Errorf("%w: %s %s at position %d: kind %s follows positions, from 1", deadlines.ErrCorruptRecord, r.Type, r.Stream, r.Position, c.Kind.Name)
		}
	}
	var marked []string // keys this record settled finally: kinds that share a key share one marker
	for _, c := range changes {
		key := c.Kind.Key(c.Subject)
		switch {
		case !c.Settled:
			err = t.open(ctx, c, r)
		case c.Kind.Ordered:
			err = t.settleOrdered(ctx, c, r)
		case slices.Contains(marked, key):
		default:
			marked = append(marked, key)
			err = t.settleFinally(ctx, c, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// open writes the row c opens, unless the key holds what the opening may not
// change (see Apply).
func (t *Table) open(ctx context.Context, c deadlines.KindChange, r deadlines.Record) error {
	k := c.Kind
	names := map[string]string{"#key": attrKey, "#subject": attrSubject, "#due": attrDueAt, "#shard": attrKindShard}
	values := map[string]types.AttributeValue{
		":subject": str(c.Subject),
		":due":     num(k.DueAt(c.Change, r.At).UnixMilli()),
		":shard":   str(partition(k.Name, t.shardOf(c.Subject))),
	}
	set := "SET #subject = :subject, #due = :due, #shard = :shard"
	cond := "attribute_not_exists(#key)"
	if k.Ordered {
		names["#v"], names["#settled"], names["#exp"] = attrVersion, attrSettled, attrExpiresAt
		values[":v"], values[":own"] = num(r.Position), str(lane(k.Name))
		set += ", #v = :v REMOVE #settled, #exp"
		// Later in the stream than the kind's marker or its outstanding row: open
		// it again, or move it. A final marker has no version, and another kind's
		// row is not this one's to move.
		cond += " OR (#v < :v AND (attribute_exists(#settled) OR begins_with(#shard, :own)))"
	}
	if k.Takes != "" {
		// The taken kind's outstanding row, whatever position it reflects: in the
		// stream's order the taken row would be this kind's by now, and a
		// taken row is never the taken kind's to move back. A marker has no
		// shard.
		values[":taken"] = str(lane(k.Takes))
		cond += " OR begins_with(#shard, :taken)"
	}
	key := k.Key(c.Subject)
	_, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.table),
		Key:                       itemKey(key),
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String(set),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return unlessFailedCondition(err, "open", k, key)
}

// settleOrdered settles the row of an Ordered kind unless the row reflects a
// later record of its stream.
func (t *Table) settleOrdered(ctx context.Context, c deadlines.KindChange, r deadlines.Record) error {
	key := c.Kind.Key(c.Subject)
	_, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(t.table),
		Key:                 itemKey(key),
		ConditionExpression: aws.String("attribute_not_exists(#v) OR #v < :v"),
		UpdateExpression:    aws.String("SET #subject = :subject, #settled = :settled, #v = :v, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#subject": attrSubject, "#settled": attrSettled, "#v": attrVersion, "#exp": attrExpiresAt, "#shard": attrKindShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":subject": str(c.Subject), ":settled": str(how(c, r)), ":v": num(r.Position), ":exp": num(t.expiry(r)),
		},
	})
	return unlessFailedCondition(err, "settle", c.Kind, key)
}

// settleFinally turns whatever the key holds into a final marker, before the row
// exists if the settlement comes first. It drops the version, so that no opening
// of an Ordered kind sharing the key opens the row again.
func (t *Table) settleFinally(ctx context.Context, c deadlines.KindChange, r deadlines.Record) error {
	key := c.Kind.Key(c.Subject)
	_, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(t.table),
		Key:              itemKey(key),
		UpdateExpression: aws.String("SET #subject = :subject, #settled = :settled, #exp = :exp REMOVE #shard, #v"),
		ExpressionAttributeNames: map[string]string{
			"#subject": attrSubject, "#settled": attrSettled, "#exp": attrExpiresAt, "#shard": attrKindShard, "#v": attrVersion,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":subject": str(c.Subject), ":settled": str(how(c, r)), ":exp": num(t.expiry(r)),
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: settle %s row %s: %w", c.Kind.Name, key, err)
	}
	return nil
}

// how is what a marker keeps of how its row settled: the change's How, or the
// record's type.
func how(c deadlines.KindChange, r deadlines.Record) string {
	if c.How != "" {
		return c.How
	}
	return r.Type
}

// expiry is when DynamoDB's TTL deletes the marker r leaves, Unix seconds.
func (t *Table) expiry(r deadlines.Record) int64 { return r.At.Add(t.markerTTL).Unix() }

// unlessFailedCondition is err, but nil for a failed condition: the item already
// reflects what the write would have, or something later.
func unlessFailedCondition(err error, what string, k deadlines.Kind, key string) error {
	var failed *types.ConditionalCheckFailedException
	if err == nil || errors.As(err, &failed) {
		return nil
	}
	return fmt.Errorf("dynamo: %s %s row %s: %w", what, k.Name, key, err)
}

func itemKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrKey: str(key)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
