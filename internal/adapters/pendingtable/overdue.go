package pendingtable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
)

// overdueConcurrency bounds how many shards Overdue queries at once.
const overdueConcurrency = 8

// Overdue returns up to limit outstanding payments prepared before cutoff, oldest
// first: what a sweep whose cutoff is cutoff (its now minus the payment timeout)
// would act on, without acting. Like the sweep it queries each shard of the index with
// the cutoff in the key condition, never scanning or filtering in memory, and it reads
// at most limit rows from each shard. It only reads, so it is safe to call at any
// time. The error names the shards whose queries failed.
func (p *Projection) Overdue(ctx context.Context, cutoff time.Time, limit int) ([]deadline.Pending, error) {
	if limit < 1 {
		return nil, fmt.Errorf("deadline: overdue limit %d: want at least 1", limit)
	}
	if cutoff.IsZero() {
		return nil, errors.New("deadline: overdue cutoff is the zero time")
	}
	perShard := make([][]deadline.Pending, p.shards)
	errs := make([]error, p.shards)
	slots := make(chan struct{}, overdueConcurrency)
	var wg sync.WaitGroup
	for s := range p.shards {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			_, errs[s] = p.query(ctx, strconv.Itoa(s), cutoff, int32(min(limit, 1<<31-1)), func(page []deadline.Pending) bool {
				perShard[s] = append(perShard[s], page...)
				return len(perShard[s]) < limit
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var all []deadline.Pending
	for _, rows := range perShard {
		all = append(all, rows...)
	}
	sortByPreparedAt(all)
	if len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// Deadlines implements deadline.Lister: for each lane of the kinds listed as the
// kind asked for, one
// Query per shard of the index, paginated, with the overdue cutoff in the key
// condition when q.Overdue is set, reading rows until it has q.Limit of the kind
// asked for in that shard or none are left. It only reads.
func (p *Projection) Deadlines(ctx context.Context, q deadline.Query) ([]deadline.Row, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("deadline: deadlines limit %d: want at least 1", q.Limit)
	}
	if q.Kind != "" {
		if !p.kinds.Lists(q.Kind) {
			return nil, fmt.Errorf("deadline: no kind %q", q.Kind)
		}
	}
	var all []deadline.Row
	for _, lane := range p.kinds.Lanes() {
		if q.Kind != "" && !slices.ContainsFunc(p.kinds.InLane(lane), func(k deadline.Kind) bool { return k.Listed() == q.Kind }) {
			continue
		}
		for s := range p.shards {
			rows, err := p.laneRows(ctx, lane, s, q)
			if err != nil {
				return nil, err
			}
			all = append(all, rows...)
		}
	}
	deadline.OverdueFirst(all, q.Now)
	if len(all) > q.Limit {
		all = all[:q.Limit]
	}
	return all, nil
}

// laneRows reads up to q.Limit rows of q's kind (any kind if empty) from one shard
// of a lane, overdue or not at q.Now as q.Overdue asks.
func (p *Projection) laneRows(ctx context.Context, lane deadline.Lane, shard int, q deadline.Query) ([]deadline.Row, error) {
	cond := "#shard = :shard"
	names := map[string]string{"#shard": schema.PendingDueShard}
	values := map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: lane.Shard(shard)}}
	if q.Overdue != nil {
		names["#at"] = schema.PendingPreparedAt
		values[":cutoff"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(lane.Cutoff(q.Now).UnixMilli(), 10)}
		if *q.Overdue {
			cond += " AND #at < :cutoff"
		} else {
			cond += " AND #at >= :cutoff"
		}
	}
	pages := dynamodb.NewQueryPaginator(p.client, &dynamodb.QueryInput{
		TableName: aws.String(p.table), IndexName: aws.String(schema.PendingByPreparedAt),
		KeyConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ScanIndexForward: aws.Bool(true), Limit: aws.Int32(int32(min(q.Limit, 1000))),
	})
	var out []deadline.Row
	for pages.HasMorePages() && len(out) < q.Limit {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("deadline: query shard %s: %w", lane.Shard(shard), err)
		}
		for _, item := range page.Items {
			r, err := p.decodeLaneRow(item)
			if err != nil {
				return nil, err
			}
			if r.row == nil {
				continue
			}
			if k, ok := p.kinds.ByName(r.row.Kind); ok {
				r.row.Kind = k.Listed()
			}
			if q.Kind == "" || r.row.Kind == q.Kind {
				out = append(out, *r.row)
			}
		}
	}
	return out, nil
}

var _ deadline.Lister = (*Projection)(nil)
