// Package pendingtable is the PendingPayments table: the DynamoDB projection the
// sweep reads through deadline.Index. One row per outstanding deadline of every
// declared kind (deadline.Kind: a payment due, a process stuck, ...), keyed by the
// kind's prefix and the row's subject and stamped in the ByPreparedAt index with its
// due time less its lane's offset, and one per cancellation owed to the payment
// provider (owed.go) and per parked stream record (parked.go), all spread over
// write shards; written only from events, by the projector, and conditional on what
// the row already reflects, so that replays change nothing. The rows of the
// payment-due and process-stuck kinds are exactly those written before kinds
// existed (docs/decisions/0020-deadline-kinds.md).
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
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
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

// Projection is the PendingPayments table: one row per outstanding deadline of its
// kinds, written only from events. It is safe for concurrent use.
type Projection struct {
	client    API
	table     string
	shards    int
	markerTTL time.Duration
	kinds     deadline.Kinds
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
	kinds := deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{})
	return &Projection{client: client, table: table, shards: shards, markerTTL: markerTTL, kinds: kinds}, nil
}

// WithKinds returns the projection over kinds instead of the service's kinds under
// the default policy: the projector's and the sweep's, from their settings.
func (p *Projection) WithKinds(kinds deadline.Kinds) *Projection {
	q := *p
	q.kinds = kinds
	return &q
}

// Kinds returns the kinds the projection projects.
func (p *Projection) Kinds() deadline.Kinds { return p.kinds }

// Shards returns how many index partitions the projection writes to.
func (p *Projection) Shards() int { return p.shards }

var _ deadline.Index = (*Projection)(nil)

// OverduePages calls fn with the outstanding payments of shard prepared before
// cutoff, oldest first, a page at a time: one Query of the shard's partition of the
// index, paginated, with the cutoff in the key condition.
func (p *Projection) OverduePages(ctx context.Context, shard int, cutoff time.Time, fn func([]deadline.Pending) bool) (int, error) {
	return p.query(ctx, strconv.Itoa(shard), cutoff, 0, fn)
}

// LanePages implements deadline.Index: one Query of the lane's shard's partition of
// the index, paginated, with the cutoff in the key condition.
func (p *Projection) LanePages(ctx context.Context, lane deadline.Lane, shard int, cutoff time.Time, fn func(deadline.LanePage) bool) (int, error) {
	return queryIndex(ctx, p, lane.Shard(shard), cutoff, 0, p.decodeLaneRow, func(rows []laneRow) bool {
		var page deadline.LanePage
		for _, r := range rows {
			switch {
			case r.owed != nil:
				page.Owed = append(page.Owed, *r.owed)
			case r.parked != nil:
				page.Parked = append(page.Parked, *r.parked)
			default:
				page.Rows = append(page.Rows, *r.row)
			}
		}
		return fn(page)
	})
}

func sortByPreparedAt(rows []deadline.Pending) {
	slices.SortStableFunc(rows, func(a, b deadline.Pending) int { return a.PreparedAt.Compare(b.PreparedAt) })
}

// ShardOf returns the index shard of a row: a stable hash of its subject (a payment's
// reference before kinds), so that rows spread evenly over the shards.
func (p *Projection) ShardOf(reference string) string {
	h := fnv.New32a()
	h.Write([]byte(reference))
	return strconv.Itoa(int(h.Sum32() % uint32(p.shards)))
}

// Apply projects one record of the Events table. A record that opens a row of a
// kind adds the row, stamped with the record's own time; one that settles it takes
// it out of the index, leaving a small marker that DynamoDB's TTL deletes later.
// CancellationOwedAtProvider adds a row of the cancellation owed to the provider,
// which CancellationDoneAtProvider or PaymentSucceededAfterCancellation settle and
// CancellationStillOwed puts off (owed.go). Writes are conditional, so a late, duplicated or replayed record
// changes nothing, and an opening never brings a settled row back. Other records
// are ignored. Safe to call any number of times for the same record.
func (p *Projection) Apply(ctx context.Context, r eventstore.Record) error {
	_, err := p.Project(ctx, r)
	return err
}

// Project is Apply, and says whether, after the record, the projection holds a row
// the record opens as outstanding: true for an opening whose row is (or already was)
// outstanding, false for one that found a settled row's marker, for a settlement,
// and for every other record. Precise deadlines arm a row's schedule only when it
// is outstanding.
func (p *Projection) Project(ctx context.Context, r eventstore.Record) (outstanding bool, err error) {
	if cc, ok, err := deadlinekinds.CancellationChangeOf(r); err != nil || ok {
		switch {
		case err != nil:
			return false, err
		case cc.Settled:
			return false, p.cancellationSettled(ctx, cc, r)
		case cc.Tries > 0:
			return false, p.owedPutOff(ctx, cc, r)
		}
		return false, p.owed(ctx, cc, r)
	}
	changes, err := p.kinds.Changes(r)
	if err != nil {
		return false, err
	}
	var marked []string // keys this record settled finally: kinds that share a key share its marker
	for _, c := range changes {
		var open bool
		switch {
		case !c.Settled:
			open, err = p.opened(ctx, c.Kind, c.Change, r)
		case c.Kind.Ordered:
			err = p.settled(ctx, c.Kind, c.Subject, c.How, r)
		case slices.Contains(marked, c.Kind.Key(c.Subject)):
		default:
			marked = append(marked, c.Kind.Key(c.Subject))
			err = p.finalMarker(ctx, c.Kind.Key(c.Subject), c.Subject, c.How, r, c.Kind.Name)
		}
		if err != nil {
			return false, err
		}
		outstanding = outstanding || open
	}
	return outstanding, nil
}

// shardOf returns the index partition of a row of kind k about subject.
func (p *Projection) shardOf(k deadline.Kind, subject string) string {
	return k.Lane.Prefix + p.ShardOf(subject)
}

// opened creates the row of kind k that c opens, stamped from the record's time (or
// the due time c names), unless a row or marker already stands at its key: the same row, or the marker of a
// settled one, which a late or replayed opening never reopens. A kind that takes
// over another's row moves that kind's outstanding row into its own lane,
// restamped, in the same write. It says whether the row is outstanding after it.
func (p *Projection) opened(ctx context.Context, k deadline.Kind, c deadline.Change, r eventstore.Record) (bool, error) {
	subject := c.Subject
	key := k.Key(subject)
	set := "SET #rental = :rental, #at = :at, #shard = :shard"
	names := map[string]string{
		"#ref": schema.PendingReference, "#rental": schema.PendingRentalID, "#at": schema.PendingPreparedAt, "#shard": schema.PendingDueShard,
	}
	values := map[string]types.AttributeValue{
		":rental": &types.AttributeValueMemberS{Value: subject},
		":at":     &types.AttributeValueMemberN{Value: strconv.FormatInt(k.Stamp(k.SinceFor(c, r.RecordedAt)), 10)},
		":shard":  &types.AttributeValueMemberS{Value: p.shardOf(k, subject)},
	}
	if k.Ordered {
		set += ", #v = :v"
		names["#v"] = schema.PendingVersion
		values[":v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)}
	}
	// Only the first event of a row creates it: anything already there is this very
	// row, or the marker of one that has settled; or, for a kind that takes over
	// another's row, that kind's outstanding row, which it moves.
	cond := "attribute_not_exists(#ref)"
	if taken, ok := p.kinds.ByName(k.Takes); ok {
		cond += " OR (" + p.inLane("#shard", taken.Lane.Prefix, ":taken", values) + ")"
	}
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String(set),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		// On a failed condition, what is there: still outstanding, or settled.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		_, outstanding := failed.Item[schema.PendingDueShard]
		return outstanding, nil
	}
	return err == nil, ignoreFailedCondition(err, key)
}

// settled settles the row of an ordered kind: it leaves the index and becomes a
// marker of how it settled, unless the row already reflects a later record.
func (p *Projection) settled(ctx context.Context, k deadline.Kind, subject, how string, r eventstore.Record) error {
	key := k.Key(subject)
	expires := r.RecordedAt.Add(p.markerTTL).Unix()
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.table),
		Key:       map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: key}},
		// An event older than what the row already reflects changes nothing.
		ConditionExpression: aws.String("attribute_not_exists(#v) OR #v < :v"),
		UpdateExpression:    aws.String("SET #rental = :rental, #settled = :settled, #v = :v, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#rental": schema.PendingRentalID, "#settled": schema.PendingSettled, "#v": schema.PendingVersion,
			"#exp": schema.PendingExpiresAt, "#shard": schema.PendingDueShard,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rental":  &types.AttributeValueMemberS{Value: subject},
			":settled": &types.AttributeValueMemberS{Value: how},
			":v":       &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)},
			":exp":     &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)},
		},
	})
	return ignoreFailedCondition(err, key)
}

// ignoreFailedCondition treats a failed condition as success: the row already holds
// what the event would have written, or something later.
func ignoreFailedCondition(err error, ref string) error {
	var failed *types.ConditionalCheckFailedException
	if err == nil || errors.As(err, &failed) {
		return nil
	}
	return fmt.Errorf("deadline: project row %s: %w", ref, err)
}

// query reads the outstanding rows of one shard through the index, oldest first,
// prepared before the cutoff (all of them for a zero cutoff), calling fn for each
// page. It returns how many items DynamoDB read.
func (p *Projection) query(ctx context.Context, shard string, before time.Time, limit int32, fn func([]deadline.Pending) bool) (int, error) {
	return queryIndex(ctx, p, shard, before, limit, decodePending, func(rows []deadline.Pending) bool {
		// The lane's rows of other kinds (the returns due) are not payments.
		return fn(slices.DeleteFunc(rows, func(r deadline.Pending) bool { return r.Reference == "" }))
	})
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
	k, rentalID, ok := paymentKinds.OfKey(ref.Value)
	if !ok || k.Name != deadlinekinds.Payment {
		if _, _, other := lanesKinds.OfLaneKey("0", ref.Value); other {
			return deadline.Pending{}, nil // a row of another kind in the payments' lane
		}
		return deadline.Pending{}, fmt.Errorf("deadline: pending row %s: not a rental's payment", ref.Value)
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

// paymentKinds tell a payment's row by its key, and lanesKinds the rows of the
// payments' lane.
var (
	paymentKinds = deadline.MustKinds(deadlinekinds.PaymentKind(deadline.Policy{}, nil))
	lanesKinds   = deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{})
)
