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

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Owed cancellations. Besides its outstanding payments and open processes, the
// projection keeps one row per payment whose cancellation is owed to the provider
// (payment.CancellationOwedAtProvider): created with that event, stamped with its
// time, and settled when the provider confirms the cancellation or a success
// arrives meanwhile. Its key is the payment's stream id, and it is in the same
// index under the open processes' due shards ("open-0", "open-1", …), stamped
// with the time it became owed negated (-Unix milliseconds; the index carries
// keys only), so that the sweep's query for stuck rentals, whose cutoff is always
// later, finds every one first, and reads nothing more when none is owed: the
// sweep then tries each again (Sweeper.Sweep). A retry the provider left
// unanswered restamps the row with the time it is due again, negated as well
// (owedPutOff), so that the sweep passes it by until then. No payment query reads
// one.

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
func (p *Projection) owed(ctx context.Context, c deadlinekinds.CancellationChange, r eventstore.Record) error {
	return p.createOnce(ctx, OwedKey(c.Reference), c.RentalID, -r.RecordedAt.UnixMilli(), p.owedShardOf(c.Reference))
}

// owedPutOff moves an outstanding owed-cancellation row's due time to
// deadline.OwedBackoff(c.Tries) after r, the retry the provider left unanswered:
// one conditional UpdateItem of its stamp (-Unix milliseconds of the due time,
// still below 0, so that the same query finds it), which only ever puts the row
// off: a late or replayed record, or one for a settled row's marker, changes
// nothing.
func (p *Projection) owedPutOff(ctx context.Context, c deadlinekinds.CancellationChange, r eventstore.Record) error {
	key := OwedKey(c.Reference)
	stamp := -r.RecordedAt.Add(deadline.OwedBackoff(c.Tries)).UnixMilli()
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(p.table),
		Key:                 map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression: aws.String("attribute_exists(#shard) AND #at > :at"),
		UpdateExpression:    aws.String("SET #at = :at"),
		ExpressionAttributeNames: map[string]string{
			"#at": schema.PendingPreparedAt, "#shard": schema.PendingDueShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": &types.AttributeValueMemberN{Value: strconv.FormatInt(stamp, 10)},
		},
	})
	return ignoreFailedCondition(err, key)
}

// owedShardOf returns the index partition of a payment's owed-cancellation row.
func (p *Projection) owedShardOf(reference string) string {
	return OpenShardPrefix + p.ShardOf(reference)
}

// owedCutoff is the cutoff of a query of the open processes' partitions that finds
// the owed cancellations alone: they are stamped below 0 in the index.
var owedCutoff = time.UnixMilli(0)

// cancellationSettled turns a payment's owed-cancellation row into a marker that
// leaves the index and that DynamoDB's TTL deletes later. Settling is final, so the
// marker is written whatever the row held, and before the row existed if the
// settlement arrives first.
func (p *Projection) cancellationSettled(ctx context.Context, c deadlinekinds.CancellationChange, r eventstore.Record) error {
	return p.finalMarker(ctx, OwedKey(c.Reference), c.RentalID, settledMarker, r, "owed cancellation")
}

func decodeOwed(item map[string]types.AttributeValue) (deadline.OwedCancellation, error) {
	key, ms, err := stamped(item, "owed-cancellation row", true)
	if err != nil {
		return deadline.OwedCancellation{}, err
	}
	ref, ok := referenceOfOwedKey(key)
	if !ok {
		return deadline.OwedCancellation{}, fmt.Errorf("deadline: owed-cancellation row %q: not a payment's key", key)
	}
	rentalID, _ := payment.RentalIDFor(ref)
	at := time.UnixMilli(-ms).UTC()
	return deadline.OwedCancellation{Reference: ref, RentalID: rentalID, OwedAt: at, Due: at}, nil
}

// OwedCancellations implements deadline.Index: one Query per shard of the index,
// for the rows stamped below 0, never a scan. It also returns how many items DynamoDB
// read.
func (p *Projection) OwedCancellations(ctx context.Context) ([]deadline.OwedCancellation, int, error) {
	_, owed, read, err := p.OpenAndOwed(ctx, owedCutoff)
	return owed, read, err
}

// laneRow is one row of a lane's partition: a row of a kind, an owed cancellation
// or a parked stream record (parked.go), told apart by its key.
type laneRow struct {
	row    *deadline.Row
	owed   *deadline.OwedCancellation
	parked *deadline.Parked
}

func (p *Projection) decodeLaneRow(item map[string]types.AttributeValue) (laneRow, error) {
	key, _ := item[schema.PendingReference].(*types.AttributeValueMemberS)
	switch {
	case key != nil && strings.HasPrefix(key.Value, ParkedKeyPrefix):
		r, err := decodeParked(item)
		return laneRow{parked: &r}, err
	case key != nil && strings.HasPrefix(key.Value, payment.StreamID("")):
		o, err := decodeOwed(item)
		return laneRow{owed: &o}, err
	}
	k, ms, err := stamped(item, "row", false)
	if err != nil {
		return laneRow{}, err
	}
	shard, _ := item[schema.PendingDueShard].(*types.AttributeValueMemberS)
	if shard == nil {
		return laneRow{}, fmt.Errorf("deadline: row %q has no %s", k, schema.PendingDueShard)
	}
	kind, subject, ok := p.kinds.OfLaneKey(shard.Value, k)
	if !ok {
		return laneRow{}, fmt.Errorf("deadline: row %q: not a key of any kind", k)
	}
	since := kind.SinceOf(ms)
	return laneRow{row: &deadline.Row{Kind: kind.Name, Subject: subject, Since: since, Due: kind.DueAt(since)}}, nil
}
