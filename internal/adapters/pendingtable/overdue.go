package pendingtable

import (
	"context"
	"errors"
	"fmt"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"strconv"
	"sync"
	"time"
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
