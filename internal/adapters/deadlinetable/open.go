package deadlinetable

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Open processes. Besides its outstanding payments, the projection keeps one row per
// rental whose rental-payment process has not completed: the process-stuck kind's
// (deadlinekinds.StuckKind), created when the bike is requested (BikeRequested),
// due the payment timeout and the grace after it, and settled when the process
// records its completion, in a lane of its own ("stuck#0", "stuck#1", …). A
// process that stays open past its due time is stuck: the sweep finds it with a
// query per shard, never a scan.

// OpenKey returns the to-do table's key of a rental's open-process row.
func OpenKey(rentalID string) string { return deadlinekinds.StuckPrefix + rentalID }

// createOnce creates the row at key for rentalID in the index partition shard,
// due at stamp (Unix milliseconds), unless a row or marker
// already stands there: a late or replayed event never reopens what settled.
func (p *Projection) createOnce(ctx context.Context, key, rentalID string, stamp int64, shard string) error {
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_not_exists(#ref)"),
		UpdateExpression:    aws.String("SET #rental = :rental, #at = :at, #shard = :shard"),
		ExpressionAttributeNames: map[string]string{
			"#ref": schema.DeadlineKey, "#rental": schema.DeadlineSubject, "#at": schema.DeadlineDueAt,
			"#shard": schema.DeadlineKindShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental": &types.AttributeValueMemberS{Value: rentalID},
			":at":     &types.AttributeValueMemberN{Value: strconv.FormatInt(stamp, 10)},
			":shard":  &types.AttributeValueMemberS{Value: shard},
		},
	})
	return ignoreFailedCondition(err, key)
}

// finalMarker turns the row at key into a marker settled with marker, out of the
// index, which DynamoDB's TTL deletes markerTTL after the record that settled it;
// for rows whose settling is final, so it is written whatever the row held, and
// before the row existed if the settlement arrives first. what names the row in an
// error.
func (p *Projection) finalMarker(ctx context.Context, key, rentalID, marker string, r eventstore.Record, what string) error {
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(p.table),
		Key:              map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		UpdateExpression: aws.String("SET #rental = :rental, #settled = :settled, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#rental": schema.DeadlineSubject, "#settled": schema.DeadlineSettled, "#exp": schema.DeadlineExpiresAt,
			"#shard": schema.DeadlineKindShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental":  &types.AttributeValueMemberS{Value: rentalID},
			":settled": &types.AttributeValueMemberS{Value: marker},
			":exp":     &types.AttributeValueMemberN{Value: strconv.FormatInt(r.RecordedAt.Add(p.markerTTL).Unix(), 10)},
		},
	})
	if err != nil {
		return fmt.Errorf("deadline: project %s %s: %w", what, key, err)
	}
	return nil
}

// stamped reads the key of a row of the index and its due time (Unix
// milliseconds). what names the row in its errors.
func stamped(item map[string]types.AttributeValue, what string) (key string, ms int64, err error) {
	k, ok1 := item[schema.DeadlineKey].(*types.AttributeValueMemberS)
	at, ok2 := item[schema.DeadlineDueAt].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return "", 0, fmt.Errorf("deadline: %s lacks %s or %s", what, schema.DeadlineKey, schema.DeadlineDueAt)
	}
	ms, err = strconv.ParseInt(at.Value, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("deadline: %s %s: %s %q", what, k.Value, schema.DeadlineDueAt, at.Value)
	}
	return k.Value, ms, nil
}

// OpenBefore returns every rental whose process has been open since before the
// cutoff, oldest first: one Query per shard of the stuck kind's lane, never a
// scan. It also returns how many items DynamoDB read.
func (p *Projection) OpenBefore(ctx context.Context, cutoff time.Time) ([]deadlinekinds.Open, int, error) {
	open, _, read, err := p.OpenAndOwed(ctx, cutoff)
	return open, read, err
}

// OpenAndOwed is OpenBefore, and also returns every cancellation owed to the
// provider (owed.go); each list oldest first.
func (p *Projection) OpenAndOwed(ctx context.Context, cutoff time.Time) ([]deadlinekinds.Open, []owed.Cancellation, int, error) {
	b, read, err := p.Backlog(ctx, cutoff)
	return b.Open, b.Owed, read, err
}
