// Package deadlinetable is the Deadlines table, the to-do list: the DynamoDB
// projection the sweep reads through deadline.Index and operators through
// deadline.Lister. One row per outstanding deadline of every declared kind
// (deadline.Kind: a payment due, a process stuck, ...), keyed by the kind's prefix
// and the row's subject, one per cancellation owed to the payment provider
// (owed.go) and one per parked stream record (parked.go); each sort of row in a
// lane of its own of the DueByKind index, spread over write shards and stamped
// with its due time, so that a query for one sort never reads another's. Rows are
// written from events, by the projector, and conditional on what the row already
// reflects, so that replays change nothing
// (docs/decisions/0026-a-deadlines-table.md).
package deadlinetable

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
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
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

// Projection is the Deadlines table: one row per outstanding deadline of its kinds,
// written only from events. It is safe for concurrent use.
type Projection struct {
	client    API
	table     string
	shards    int
	markerTTL time.Duration
	kinds     deadline.Kinds
}

// New returns the projection on the Deadlines table named table,
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
// cutoff (now less the payment timeout), oldest first, a page at a time: one Query
// of the shard's partition of the payments' lane, paginated, with the cutoff in
// the key condition.
func (p *Projection) OverduePages(ctx context.Context, shard int, cutoff time.Time, fn func([]deadlinekinds.Pending) bool) (int, error) {
	k, err := p.paymentKind()
	if err != nil {
		return 0, err
	}
	due := time.Time{} // every one
	if !cutoff.IsZero() {
		due = k.DueAt(cutoff)
	}
	return p.query(ctx, k, shard, due, 0, fn)
}

// LanePages implements deadline.Index: one Query of the lane's shard's partition of
// the index, paginated, with the cutoff in the key condition. The lane holds one
// kind's rows, so every item it reads is one it passes on.
func (p *Projection) LanePages(ctx context.Context, lane deadline.Lane, shard int, cutoff time.Time, fn func([]deadline.Row) bool) (int, error) {
	k, ok := p.kindOfLane(lane)
	if !ok {
		return 0, fmt.Errorf("deadline: no kind of lane %q", lane.Prefix)
	}
	return queryIndex(ctx, p, lane.Shard(shard), cutoff, 0, p.decodeRow(k), fn)
}

// OwedPages implements owed.Rows: one Query of the owed lane's shard's partition,
// with no cutoff, limit items a page.
func (p *Projection) OwedPages(ctx context.Context, shard, limit int, fn func([]owed.Cancellation) bool) (int, error) {
	return queryIndex(ctx, p, deadline.OwedLane.Shard(shard), time.Time{}, pageOf(limit), decodeOwed, fn)
}

// ParkedPages implements parked.Rows: one Query of the parked lane's shard's
// partition, paginated, with the cutoff in the key condition.
func (p *Projection) ParkedPages(ctx context.Context, shard int, cutoff time.Time, fn func([]parked.Record) bool) (int, error) {
	return queryIndex(ctx, p, deadline.ParkedLane.Shard(shard), cutoff, 0, decodeParked, fn)
}

// kindOfLane returns the kind whose lane lane is.
func (p *Projection) kindOfLane(lane deadline.Lane) (deadline.Kind, bool) {
	for _, k := range p.kinds.All() {
		if k.Lane() == lane {
			return k, true
		}
	}
	return deadline.Kind{}, false
}

// paymentKind is the payment due, whose rows the payments' listings read.
func (p *Projection) paymentKind() (deadline.Kind, error) {
	k, ok := p.kinds.ByName(deadlinekinds.Payment)
	if !ok {
		return deadline.Kind{}, fmt.Errorf("deadline: %s declares no %s kind", p.table, deadlinekinds.Payment)
	}
	return k, nil
}

func sortByPreparedAt(rows []deadlinekinds.Pending) {
	slices.SortStableFunc(rows, func(a, b deadlinekinds.Pending) int { return a.PreparedAt.Compare(b.PreparedAt) })
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
	if cc, ok, err := owed.ChangeOf(r); err != nil || ok {
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
	return k.Lane().Prefix + p.ShardOf(subject)
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
		"#ref": schema.DeadlineKey, "#rental": schema.DeadlineSubject, "#at": schema.DeadlineDueAt, "#shard": schema.DeadlineKindShard,
	}
	values := map[string]types.AttributeValue{
		":rental": &types.AttributeValueMemberS{Value: subject},
		":at":     &types.AttributeValueMemberN{Value: strconv.FormatInt(k.Stamp(k.SinceFor(c, r.RecordedAt)), 10)},
		":shard":  &types.AttributeValueMemberS{Value: p.shardOf(k, subject)},
	}
	// Only the first event of a row creates it: anything already there is this very
	// row, or the marker of one that has settled; or, for a kind that takes over
	// another's row, that kind's outstanding row, which it moves; or, for an
	// ordered kind, the marker of a settlement older than this opening, which it
	// opens again.
	cond := "attribute_not_exists(#ref)"
	if k.Ordered {
		set += ", #v = :v REMOVE #settled, #exp"
		names["#v"], names["#settled"], names["#exp"] = schema.DeadlineVersion, schema.DeadlineSettled, schema.DeadlineExpiresAt
		values[":v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)}
		cond += " OR (attribute_exists(#settled) AND #v < :v)"
	}
	if taken, ok := p.kinds.ByName(k.Takes); ok {
		cond += " OR (" + p.inLane("#shard", taken.Lane().Prefix, ":taken", values) + ")"
	}
	_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String(set),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		// On a failed condition, what is there: still outstanding, or settled.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		_, outstanding := failed.Item[schema.DeadlineKindShard]
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
		Key:       map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		// An event older than what the row already reflects changes nothing.
		ConditionExpression: aws.String("attribute_not_exists(#v) OR #v < :v"),
		UpdateExpression:    aws.String("SET #rental = :rental, #settled = :settled, #v = :v, #exp = :exp REMOVE #shard"),
		ExpressionAttributeNames: map[string]string{
			"#rental": schema.DeadlineSubject, "#settled": schema.DeadlineSettled, "#v": schema.DeadlineVersion,
			"#exp": schema.DeadlineExpiresAt, "#shard": schema.DeadlineKindShard,
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

// query reads the outstanding payments of one shard of the payment kind k's lane,
// soonest due (oldest) first, due before the cutoff (all of them for a zero
// cutoff), asking for limit items a page (no limit for 0), calling fn for each
// page. It returns how many items DynamoDB read.
func (p *Projection) query(ctx context.Context, k deadline.Kind, shard int, before time.Time, limit int32, fn func([]deadlinekinds.Pending) bool) (int, error) {
	return queryIndex(ctx, p, k.Lane().Shard(shard), before, limit, p.decodeRow(k), func(rows []deadline.Row) bool {
		page := make([]deadlinekinds.Pending, len(rows))
		for i, r := range rows {
			page[i] = deadlinekinds.Pending{Reference: k.Key(r.Subject), RentalID: r.Subject, PreparedAt: r.Since}
		}
		return fn(page)
	})
}

// queryIndex reads the index partition shard, soonest due first, rows due before
// the cutoff (all of them for a zero cutoff), limit items a page (no limit for 0),
// decoding each row with decode and calling fn for each page until it returns
// false. It returns how many items DynamoDB read.
func queryIndex[T any](ctx context.Context, p *Projection, shard string, before time.Time, limit int32,
	decode func(map[string]types.AttributeValue) (T, error), fn func([]T) bool) (int, error) {
	cond := "#shard = :shard"
	values := map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: shard}}
	names := map[string]string{"#shard": schema.DeadlineKindShard}
	if !before.IsZero() {
		cond += " AND #at < :before"
		names["#at"] = schema.DeadlineDueAt
		values[":before"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(before.UnixMilli(), 10)}
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(p.table),
		IndexName:                 aws.String(schema.DeadlinesByDue),
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

// decodeRow returns the decoder of the items of k's lane.
func (p *Projection) decodeRow(k deadline.Kind) func(map[string]types.AttributeValue) (deadline.Row, error) {
	return func(item map[string]types.AttributeValue) (deadline.Row, error) {
		key, ms, err := stamped(item, k.Name+" row")
		if err != nil {
			return deadline.Row{}, err
		}
		subject, ok := k.SubjectOf(key)
		if !ok {
			return deadline.Row{}, fmt.Errorf("deadline: %s row %q: not a key of its kind", k.Name, key)
		}
		since := k.SinceOf(ms)
		return deadline.Row{Kind: k.Name, Subject: subject, Since: since, Due: k.DueAt(since)}, nil
	}
}

// List returns up to limit outstanding payments, oldest first: one Query of each
// shard of the payments' lane, reading at most limit rows from each.
func (p *Projection) List(ctx context.Context, limit int) ([]deadlinekinds.Pending, error) {
	if limit < 1 {
		return nil, fmt.Errorf("deadline: list limit %d: want at least 1", limit)
	}
	k, err := p.paymentKind()
	if err != nil {
		return nil, err
	}
	var all []deadlinekinds.Pending
	for s := range p.shards {
		var rows []deadlinekinds.Pending
		_, err := p.query(ctx, k, s, time.Time{}, pageOf(limit), func(page []deadlinekinds.Pending) bool {
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

// maxPage is the most items a listing asks DynamoDB for in one page.
const maxPage = 1000

// pageOf is the page a listing of limit rows asks for: its limit, at most maxPage.
// A lane holds one sort of row and nothing is filtered out of it in memory, so
// one page of limit items answers a limit up to maxPage.
func pageOf(limit int) int32 { return int32(min(max(limit, 1), maxPage)) }
