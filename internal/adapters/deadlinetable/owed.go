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
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Owed cancellations. Besides its deadlines, the projection keeps one row per
// payment whose cancellation is owed to the provider
// (payment.CancellationOwedAtProvider): created with that event, due at once (its
// time), and settled when the provider confirms the cancellation or a success
// arrives meanwhile. Its key is the payment's stream id, and it is in a lane of its
// own (deadline.OwedLane: "owed#0", "owed#1", …), which the sweep's retries
// (owed.Retries) read a page at a time, soonest due first. A retry the provider
// left unanswered restamps the row with the time it is due again (owedPutOff), so
// that the sweep does not retry it until then, keeping when it became owed.

// settledMarker is the settled value of an owed cancellation's row once settled.
const settledMarker = "cancellation-settled"

// OwedKey returns the to-do table's key of a payment's owed-cancellation row.
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
func (p *Projection) owed(ctx context.Context, c owed.Change, r eventstore.Record) error {
	return p.createOnce(ctx, OwedKey(c.Reference), c.RentalID, r.RecordedAt.UnixMilli(), p.owedShardOf(c.Reference))
}

// owedPutOff moves an outstanding owed-cancellation row's due time to
// owed.Backoff(c.Tries) after r, the retry the provider left unanswered:
// one conditional UpdateItem of its due time, which only ever puts the row off: a
// late or replayed record, or one for a settled row's marker, changes nothing.
func (p *Projection) owedPutOff(ctx context.Context, c owed.Change, r eventstore.Record) error {
	key := OwedKey(c.Reference)
	stamp := r.RecordedAt.Add(owed.Backoff(c.Tries)).UnixMilli()
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_exists(#shard) AND #at < :at"),
		// The row's first due time is when the cancellation became owed: it is
		// kept, once, before the due time moves.
		UpdateExpression: aws.String("SET #since = if_not_exists(#since, #at), #at = :at"),
		ExpressionAttributeNames: map[string]string{
			"#at": schema.DeadlineDueAt, "#shard": schema.DeadlineKindShard, "#since": schema.DeadlineOwedSince,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": &types.AttributeValueMemberN{Value: strconv.FormatInt(stamp, 10)},
		},
	})
	return ignoreFailedCondition(err, key)
}

// owedShardOf returns the index partition of a payment's owed-cancellation row.
func (p *Projection) owedShardOf(reference string) string {
	return deadline.OwedLane.Prefix + p.ShardOf(reference)
}

// cancellationSettled turns a payment's owed-cancellation row into a marker that
// leaves the index and that DynamoDB's TTL deletes later. Settling is final, so the
// marker is written whatever the row held, and before the row existed if the
// settlement arrives first.
func (p *Projection) cancellationSettled(ctx context.Context, c owed.Change, r eventstore.Record) error {
	return p.finalMarker(ctx, OwedKey(c.Reference), c.RentalID, settledMarker, r, "owed cancellation")
}

func decodeOwed(item map[string]types.AttributeValue) (owed.Cancellation, error) {
	key, ms, err := stamped(item, "owed-cancellation row")
	if err != nil {
		return owed.Cancellation{}, err
	}
	ref, ok := referenceOfOwedKey(key)
	if !ok {
		return owed.Cancellation{}, fmt.Errorf("deadline: owed-cancellation row %q: not a payment's key", key)
	}
	rentalID, _ := payment.RentalIDFor(ref)
	due := time.UnixMilli(ms).UTC() // the index's: when it became owed, unless put off (OwedCancellations)
	return owed.Cancellation{Reference: ref, RentalID: rentalID, OwedAt: due, Due: due}, nil
}

// OwedCancellations returns every cancellation owed to the provider, due or not,
// oldest first: one Query per shard of their lane, never a scan, and one GetItem
// per row for when it became owed (the index holds keys and due times only, and a
// row put off is due later than it became owed). It also returns how many items
// DynamoDB read.
func (p *Projection) OwedCancellations(ctx context.Context) ([]owed.Cancellation, int, error) {
	var rows []owed.Cancellation
	read := 0
	for s := range p.shards {
		n, err := p.OwedPages(ctx, s, maxPage, func(page []owed.Cancellation) bool {
			rows = append(rows, page...)
			return true
		})
		read += n
		if err != nil {
			return nil, read, err
		}
	}
	for i, r := range rows {
		since, ok, err := p.owedSince(ctx, r.Reference)
		read++
		if err != nil {
			return nil, read, err
		}
		if ok {
			rows[i].OwedAt = since
		}
	}
	owed.Sort(rows)
	return rows, read, nil
}

// owedSince reads when the cancellation of the payment reference became owed, as
// its row keeps it once a retry was put off; ok is false for a row never put off
// (its due time is that time) or no longer there.
func (p *Projection) owedSince(ctx context.Context, reference string) (time.Time, bool, error) {
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(p.table),
		Key:                      map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: OwedKey(reference)}},
		ProjectionExpression:     aws.String("#since"),
		ExpressionAttributeNames: map[string]string{"#since": schema.DeadlineOwedSince},
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("deadline: read when %s became owed: %w", reference, err)
	}
	n, ok := out.Item[schema.DeadlineOwedSince].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, false, nil
	}
	ms, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("deadline: owed-cancellation row of %s: %s %q: %w", reference, schema.DeadlineOwedSince, n.Value, err)
	}
	return time.UnixMilli(ms).UTC(), true, nil
}
