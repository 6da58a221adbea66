package deadlinetable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
)

// overdueConcurrency bounds how many shards Overdue queries at once.
const overdueConcurrency = 8

// Overdue returns up to limit outstanding payments prepared before cutoff, oldest
// first: what a sweep whose cutoff is cutoff (its now minus the payment timeout)
// would act on, without acting. Like the sweep it queries each shard of the
// payments' lane with the cutoff in the key condition, never scanning or filtering
// in memory, and it reads at most limit rows from each shard. It only reads, so it
// is safe to call at any time. The error names the shards whose queries failed.
func (p *Projection) Overdue(ctx context.Context, cutoff time.Time, limit int) ([]deadlinekinds.Pending, error) {
	if limit < 1 {
		return nil, fmt.Errorf("deadline: overdue limit %d: want at least 1", limit)
	}
	if cutoff.IsZero() {
		return nil, errors.New("deadline: overdue cutoff is the zero time")
	}
	k, err := p.paymentKind()
	if err != nil {
		return nil, err
	}
	perShard := make([][]deadlinekinds.Pending, p.shards)
	errs := make([]error, p.shards)
	slots := make(chan struct{}, overdueConcurrency)
	var wg sync.WaitGroup
	for s := range p.shards {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			_, errs[s] = p.query(ctx, k, s, k.DueAt(cutoff), pageOf(limit), func(page []deadlinekinds.Pending) bool {
				perShard[s] = append(perShard[s], page...)
				return len(perShard[s]) < limit
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var all []deadlinekinds.Pending
	for _, rows := range perShard {
		all = append(all, rows...)
	}
	sortByPreparedAt(all)
	if len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// Deadlines implements deadline.Lister: for the lane of each kind listed as the
// kind asked for (every kind's, if none), one Query per shard, with the overdue
// cutoff in the key condition when q.Overdue is set, asking for q.Limit rows. A
// lane holds its kind's rows alone, so each Query reads at most q.Limit items,
// every one of which it may return. It only reads.
func (p *Projection) Deadlines(ctx context.Context, q deadline.Query) ([]deadline.Row, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("deadline: deadlines limit %d: want at least 1", q.Limit)
	}
	if q.Kind != "" && !p.kinds.Lists(q.Kind) {
		return nil, fmt.Errorf("deadline: no kind %q", q.Kind)
	}
	var all []deadline.Row
	for _, k := range p.kinds.All() {
		if q.Kind != "" && k.Listed() != q.Kind {
			continue
		}
		for s := range p.shards {
			rows, err := p.laneRows(ctx, k, s, q)
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

// laneRows reads up to q.Limit rows of one shard of k's lane, overdue or not at
// q.Now as q.Overdue asks, each named by the kind it lists as.
func (p *Projection) laneRows(ctx context.Context, k deadline.Kind, shard int, q deadline.Query) ([]deadline.Row, error) {
	cond := "#shard = :shard"
	names := map[string]string{"#shard": schema.DeadlineKindShard}
	values := map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: k.Lane().Shard(shard)}}
	if q.Overdue != nil {
		names["#at"] = schema.DeadlineDueAt
		values[":cutoff"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(q.Now.UnixMilli(), 10)}
		if *q.Overdue {
			cond += " AND #at < :cutoff"
		} else {
			cond += " AND #at >= :cutoff"
		}
	}
	pages := dynamodb.NewQueryPaginator(p.client, &dynamodb.QueryInput{
		TableName: aws.String(p.table), IndexName: aws.String(schema.DeadlinesByDue),
		KeyConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ScanIndexForward: aws.Bool(true), Limit: aws.Int32(pageOf(q.Limit)),
	})
	decode := p.decodeRow(k)
	var out []deadline.Row
	for pages.HasMorePages() && len(out) < q.Limit {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("deadline: query shard %s: %w", k.Lane().Shard(shard), err)
		}
		for _, item := range page.Items {
			r, err := decode(item)
			if err != nil {
				return nil, err
			}
			r.Kind = k.Listed()
			out = append(out, r)
		}
	}
	return out, nil
}

var _ deadline.Lister = (*Projection)(nil)
