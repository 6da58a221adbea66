// Package pendingtable is the PendingPayments table: the DynamoDB projection the
// sweep reads through deadline.Index. One row per outstanding payment, stamped with
// the time the payment was prepared, one per rental whose process is open,
// stamped with the time its bike was requested, and one per cancellation owed to
// the payment provider (owed.go), all in the ByPreparedAt index,
// spread over write shards; written only from events, by the projector, and
// conditional on what the row already reflects, so that replays change nothing.
package pendingtable

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// API is the part of the DynamoDB client the projection and the sweep use.
type API interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Defaults of the projection's settings.
const (
	DefaultShards    = 4
	MaxShards        = 256
	DefaultMarkerTTL = 72 * time.Hour
)

// Projection is the PendingPayments table: one row per outstanding payment, written
// only from payment events. It is safe for concurrent use.
type Projection struct {
	client    API
	table     string
	shards    int
	markerTTL time.Duration
}

// New returns the projection on the PendingPayments table named table,
// spreading index writes over shards partitions (1 to MaxShards) and keeping settled
// markers for markerTTL after the settling event.
func New(client API, table string, shards int, markerTTL time.Duration) (*Projection, error) {
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("deadline: %d shards: want 1 to %d", shards, MaxShards)
	}
	if markerTTL <= 0 {
		return nil, fmt.Errorf("deadline: settled marker TTL %s: want a positive duration", markerTTL)
	}
	return &Projection{client: client, table: table, shards: shards, markerTTL: markerTTL}, nil
}

// Shards returns how many index partitions the projection writes to.
func (p *Projection) Shards() int { return p.shards }

var _ deadline.Index = (*Projection)(nil)

// OverduePages implements deadline.Index: one Query of the shard's partition of the
// index, paginated, with the cutoff in the key condition.
func (p *Projection) OverduePages(ctx context.Context, shard int, cutoff time.Time, fn func([]deadline.Pending) bool) (int, error) {
	return p.query(ctx, strconv.Itoa(shard), cutoff, 0, fn)
}

func sortByPreparedAt(rows []deadline.Pending) {
	slices.SortStableFunc(rows, func(a, b deadline.Pending) int { return a.PreparedAt.Compare(b.PreparedAt) })
}

// ShardOf returns the index partition of a payment: a stable hash of its reference, so
// that rows spread evenly over the shards.
func (p *Projection) ShardOf(reference string) string {
	h := fnv.New32a()
	h.Write([]byte(reference))
	return strconv.Itoa(int(h.Sum32() % uint32(p.shards)))
}

// Apply projects one record of the Events table. PaymentPrepared adds the payment's
// row, stamped with the event's recorded time; PaymentConfirmed, PaymentRejected and
// PaymentCancelled settle it: the row leaves the index and becomes a small marker that
// DynamoDB's TTL deletes later. CancellationOwedAtProvider adds a row of the
// cancellation owed to the provider, which CancellationDoneAtProvider or
// PaymentSucceededAfterCancellation settle (owed.go). Writes are conditional on the event's version, so a
// late, duplicated or replayed event changes nothing, and a PaymentPrepared never
// brings a settled payment back. Other records, and payments that belong to no
// rental, are ignored. Safe to call any number of times for the same record.
func (p *Projection) Apply(ctx context.Context, r eventstore.Record) error {
	_, err := p.Project(ctx, r)
	return err
}

// Project is Apply, and says whether, after the record, the projection holds the
// payment as outstanding: true for a PaymentPrepared whose row is (or already was)
// outstanding, false for one that found a settled payment's marker, for a
// settlement, and for every other record. Precise deadlines arm a payment's
// schedule only when it is outstanding.
func (p *Projection) Project(ctx context.Context, r eventstore.Record) (outstanding bool, err error) {
	if pc, ok, err := deadline.ProcessChangeOf(r); err != nil || ok {
		switch {
		case err != nil:
			return false, err
		case pc.Completed:
			return false, p.completed(ctx, pc.RentalID, r)
		}
		return false, p.opened(ctx, pc.RentalID, r)
	}
	if cc, ok, err := deadline.CancellationChangeOf(r); err != nil || ok {
		switch {
		case err != nil:
			return false, err
		case cc.Settled:
			return false, p.cancellationSettled(ctx, cc.Reference, r)
		}
		return false, p.owed(ctx, cc.Reference, r)
	}
	if rc, ok, err := deadline.RefundChangeOf(r); err != nil || ok {
		switch {
		case err != nil:
			return false, err
		case rc.Refunded:
			return false, p.refunded(ctx, rc.Reference, r)
		}
		return false, p.refundOwed(ctx, rc.Reference, r)
	}
	c, ok, err := deadline.PaymentChangeOf(r)
	if err != nil || !ok {
		return false, err
	}
	if c.Settled == "" {
		return p.prepared(ctx, c.Reference, r)
	}
	return false, p.settled(ctx, c.Reference, c.Settled, r)
}

func (p *Projection) prepared(ctx context.Context, ref string, r eventstore.Record) (bool, error) {
	rentalID, err := payment.RentalIDFor(ref)
	if err != nil {
		return false, nil // not a rental's payment: nothing will ever sweep it
	}
	_, err = p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.table),
		Key:       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: ref}},
		// Only the first event of a payment creates its row: anything already there is
		// this very row, or the marker of a payment that has settled.
		ConditionExpression: aws.String("attribute_not_exists(#ref)"),
		UpdateExpression:    aws.String("SET #rental = :rental, #at = :at, #shard = :shard, #v = :v"),
		ExpressionAttributeNames: map[string]string{
			"#ref": schema.PendingReference, "#rental": schema.PendingRentalID, "#at": schema.PendingPreparedAt,
			"#shard": schema.PendingDueShard, "#v": schema.PendingVersion,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental": &types.AttributeValueMemberS{Value: rentalID},
			":at":     &types.AttributeValueMemberN{Value: strconv.FormatInt(r.RecordedAt.UnixMilli(), 10)},
			":shard":  &types.AttributeValueMemberS{Value: p.ShardOf(ref)},
			":v":      &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)},
		},
		// On a failed condition, what is there: still outstanding, or settled.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		_, outstanding := failed.Item[schema.PendingDueShard]
		return outstanding, nil
	}
	return err == nil, ignoreFailedCondition(err, ref)
}

func (p *Projection) settled(ctx context.Context, ref, how string, r eventstore.Record) error {
	rentalID, err := payment.RentalIDFor(ref)
	if err != nil {
		return nil
	}
	expires := r.RecordedAt.Add(p.markerTTL).Unix()
	_, err = p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.table),
		Key:       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: ref}},
		// An event older than what the row already reflects changes nothing.
		ConditionExpression: aws.String("attribute_not_exists(#v) OR #v < :v"),
		UpdateExpression:    aws.String("SET #rental = :rental, #settled = :settled, #v = :v, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#rental": schema.PendingRentalID, "#settled": schema.PendingSettled, "#v": schema.PendingVersion,
			"#exp": schema.PendingExpiresAt, "#shard": schema.PendingDueShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental":  &types.AttributeValueMemberS{Value: rentalID},
			":settled": &types.AttributeValueMemberS{Value: how},
			":v":       &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)},
			":exp":     &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)},
		},
	})
	return ignoreFailedCondition(err, ref)
}

// ignoreFailedCondition treats a failed condition as success: the row already holds
// what the event would have written, or something later.
func ignoreFailedCondition(err error, ref string) error {
	var failed *types.ConditionalCheckFailedException
	if err == nil || errors.As(err, &failed) {
		return nil
	}
	return fmt.Errorf("deadline: project payment %s: %w", ref, err)
}

// query reads the outstanding rows of one shard through the index, oldest first,
// prepared before the cutoff (all of them for a zero cutoff), calling fn for each
// page. It returns how many items DynamoDB read.
func (p *Projection) query(ctx context.Context, shard string, before time.Time, limit int32, fn func([]deadline.Pending) bool) (int, error) {
	return queryIndex(ctx, p, shard, before, limit, decodePending, fn)
}

// queryIndex reads the index partition shard, oldest first, rows stamped before the
// cutoff (all of them for a zero cutoff), decoding each row with decode and calling
// fn for each page until it returns false. It returns how many items DynamoDB read.
func queryIndex[T any](ctx context.Context, p *Projection, shard string, before time.Time, limit int32,
	decode func(map[string]types.AttributeValue) (T, error), fn func([]T) bool) (int, error) {
	cond := "#shard = :shard"
	values := map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: shard}}
	names := map[string]string{"#shard": schema.PendingDueShard}
	if !before.IsZero() {
		cond += " AND #at < :before"
		names["#at"] = schema.PendingPreparedAt
		values[":before"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(before.UnixMilli(), 10)}
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(p.table),
		IndexName:                 aws.String(schema.PendingByPreparedAt),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(true),
	}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	read := 0
	pages := dynamodb.NewQueryPaginator(p.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return read, fmt.Errorf("deadline: query shard %s: %w", shard, err)
		}
		read += int(page.ScannedCount)
		rows := make([]T, 0, len(page.Items))
		for _, item := range page.Items {
			row, err := decode(item)
			if err != nil {
				return read, err
			}
			rows = append(rows, row)
		}
		if !fn(rows) {
			break
		}
	}
	return read, nil
}

func decodePending(item map[string]types.AttributeValue) (deadline.Pending, error) {
	ref, ok1 := item[schema.PendingReference].(*types.AttributeValueMemberS)
	at, ok2 := item[schema.PendingPreparedAt].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return deadline.Pending{}, fmt.Errorf("deadline: pending row lacks %s or %s", schema.PendingReference, schema.PendingPreparedAt)
	}
	ms, err := strconv.ParseInt(at.Value, 10, 64)
	if err != nil {
		return deadline.Pending{}, fmt.Errorf("deadline: pending row %s: %s %q", ref.Value, schema.PendingPreparedAt, at.Value)
	}
	rentalID, err := payment.RentalIDFor(ref.Value)
	if err != nil {
		return deadline.Pending{}, fmt.Errorf("deadline: pending row %s: %w", ref.Value, err)
	}
	return deadline.Pending{Reference: ref.Value, RentalID: rentalID, PreparedAt: time.UnixMilli(ms).UTC()}, nil
}

// List returns up to limit outstanding payments, oldest first, reading at most limit
// rows from each shard.
func (p *Projection) List(ctx context.Context, limit int) ([]deadline.Pending, error) {
	if limit < 1 {
		return nil, fmt.Errorf("deadline: list limit %d: want at least 1", limit)
	}
	var all []deadline.Pending
	for s := range p.shards {
		var rows []deadline.Pending
		_, err := p.query(ctx, strconv.Itoa(s), time.Time{}, int32(limit), func(page []deadline.Pending) bool {
			rows = append(rows, page...)
			return len(rows) < limit
		})
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	sortByPreparedAt(all)
	if len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}
