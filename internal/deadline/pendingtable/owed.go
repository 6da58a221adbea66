package pendingtable

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/deadline"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/schema"
)

// Owed cancellations. Besides its outstanding payments and open processes, the
// projection keeps one row per payment whose cancellation is owed to the provider
// (payment.CancellationOwedAtProvider): created with that event, stamped with its
// time, and settled when the provider confirms the cancellation or a success
// arrives meanwhile. Its key is the payment's stream id, and it is in the same
// index, under due shards of its own ("owed-0", "owed-1", …), so that no other
// query reads one. The sweep reads them all, a query per shard, and tries each
// again (Sweeper.Sweep).

// OwedShardPrefix starts the due shard of every owed cancellation's row.
const OwedShardPrefix = "owed-"

// settledMarker is the settled value of an owed cancellation's row once settled.
const settledMarker = "cancellation-settled"

// OwedKey returns the PendingPayments key of a payment's owed-cancellation row.
func OwedKey(reference string) string { return payment.StreamID(reference) }

// referenceOfOwedKey reverses OwedKey.
func referenceOfOwedKey(key string) (string, bool) {
	ref, ok := strings.CutPrefix(key, payment.StreamID(""))
	if _, err := payment.RentalIDFor(ref); err != nil {
		return "", false
	}
	return ref, ok
}

// owed creates a payment's owed-cancellation row, stamped with the time the
// cancellation was found owed, unless the payment already has one: the same row, or
// the marker of a settled one, which a late or replayed event never reopens (a
// payment's cancellation becomes owed once at most).
func (p *Projection) owed(ctx context.Context, ref string, r eventstore.Record) error {
	rentalID, _ := payment.RentalIDFor(ref)
	key := OwedKey(ref)
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_not_exists(#ref)"),
		UpdateExpression:    aws.String("SET #rental = :rental, #at = :at, #shard = :shard"),
		ExpressionAttributeNames: map[string]string{
			"#ref": schema.PendingReference, "#rental": schema.PendingRentalID, "#at": schema.PendingPreparedAt,
			"#shard": schema.PendingDueShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental": &types.AttributeValueMemberS{Value: rentalID},
			":at":     &types.AttributeValueMemberN{Value: strconv.FormatInt(r.RecordedAt.UnixMilli(), 10)},
			":shard":  &types.AttributeValueMemberS{Value: OwedShardPrefix + p.ShardOf(ref)},
		},
	})
	return ignoreFailedCondition(err, key)
}

// cancellationSettled turns a payment's owed-cancellation row into a marker that
// leaves the index and that DynamoDB's TTL deletes later. Settling is final, so the
// marker is written whatever the row held, and before the row existed if the
// settlement arrives first.
func (p *Projection) cancellationSettled(ctx context.Context, ref string, r eventstore.Record) error {
	rentalID, _ := payment.RentalIDFor(ref)
	key := OwedKey(ref)
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(p.table),
		Key:              map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: key}},
		UpdateExpression: aws.String("SET #rental = :rental, #settled = :settled, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#rental": schema.PendingRentalID, "#settled": schema.PendingSettled, "#exp": schema.PendingExpiresAt,
			"#shard": schema.PendingDueShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental":  &types.AttributeValueMemberS{Value: rentalID},
			":settled": &types.AttributeValueMemberS{Value: settledMarker},
			":exp":     &types.AttributeValueMemberN{Value: strconv.FormatInt(r.RecordedAt.Add(p.markerTTL).Unix(), 10)},
		},
	})
	if err != nil {
		return fmt.Errorf("deadline: project owed cancellation %s: %w", key, err)
	}
	return nil
}

func decodeOwed(item map[string]types.AttributeValue) (deadline.OwedCancellation, error) {
	key, ok1 := item[schema.PendingReference].(*types.AttributeValueMemberS)
	at, ok2 := item[schema.PendingPreparedAt].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return deadline.OwedCancellation{}, fmt.Errorf("deadline: owed-cancellation row lacks %s or %s", schema.PendingReference, schema.PendingPreparedAt)
	}
	ref, ok := referenceOfOwedKey(key.Value)
	if !ok {
		return deadline.OwedCancellation{}, fmt.Errorf("deadline: owed-cancellation row %q: not a payment's key", key.Value)
	}
	ms, err := strconv.ParseInt(at.Value, 10, 64)
	if err != nil {
		return deadline.OwedCancellation{}, fmt.Errorf("deadline: owed-cancellation row %s: %s %q", key.Value, schema.PendingPreparedAt, at.Value)
	}
	rentalID, _ := payment.RentalIDFor(ref)
	return deadline.OwedCancellation{Reference: ref, RentalID: rentalID, OwedAt: time.UnixMilli(ms).UTC()}, nil
}

// OwedCancellations implements deadline.Index: one Query per shard of the index,
// never a scan. It also returns how many items DynamoDB read.
func (p *Projection) OwedCancellations(ctx context.Context) ([]deadline.OwedCancellation, int, error) {
	var all []deadline.OwedCancellation
	read := 0
	for s := range p.shards {
		n, err := queryIndex(ctx, p, OwedShardPrefix+strconv.Itoa(s), time.Time{}, 0, decodeOwed, func(page []deadline.OwedCancellation) bool {
			all = append(all, page...)
			return true
		})
		read += n
		if err != nil {
			return nil, read, err
		}
	}
	deadline.SortOwed(all)
	return all, read, nil
}
