package parked

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// DefaultConcurrency is how many streams' records are delivered again at once when
// Redelivery sets none.
const DefaultConcurrency = 8

// Redelivery is the sweep's part that delivers the parked records that are due to
// their consumers again. There are none on a healthy day.
type Redelivery struct {
	Rows Rows
	// Redeliverer delivers the records again; nil only counts them.
	Redeliverer Redeliverer
	Concurrency int
	Logger      *slog.Logger
}

// Summary is what one sweep's redelivery did: Found is how many parked records
// were due, Redelivered how many of them it delivered to their consumer again (and
// took off the lane), and Left how many are still parked after it (failed again,
// waiting behind an earlier record of their stream, or not reached). OldestParked
// is how long ago the oldest record it tried to deliver was recorded; in JSON,
// whole milliseconds (oldestParkedMs). ItemsRead is how many items its reads read.
type Summary struct {
	// Swept says the part ran (as owed.Summary's).
	Swept        bool          `json:"swept"`
	Found        int           `json:"found"`
	Redelivered  int           `json:"redelivered"`
	Left         int           `json:"left"`
	OldestParked time.Duration `json:"-"`
	ItemsRead    int           `json:"itemsRead"`
}

// Run reads the parked records due at now (at their time exactly too) and delivers
// them again, concurrency streams at a time, each stream's in version order: a
// stream's parked records wait behind its earliest one, until that one is due and
// delivered, so that its order is kept among what is parked. A record delivered is
// taken off the lane; one that fails again is due again after Backoff, and the
// stream's later ones found with it too. Out of time, the rest are left for the
// next sweep. The error reports reads that failed.
func (r *Redelivery) Run(ctx context.Context, now time.Time) (Summary, error) {
	rows, sum, err := r.find(ctx, now)
	sum.Left = len(rows)
	if r.Redeliverer == nil || len(rows) == 0 {
		return sum, err
	}
	var streams [][]Record
	index := map[[2]string]int{}
	for _, p := range rows {
		k := [2]string{p.Consumer, p.StreamID}
		i, ok := index[k]
		if !ok {
			i = len(streams)
			index[k] = i
			streams = append(streams, nil)
		}
		streams[i] = append(streams[i], p)
	}
	concurrency := r.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, stream := range streams {
		slices.SortFunc(stream, func(a, b Record) int { return cmp.Compare(a.Version, b.Version) })
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r.stream(ctx, now, stream, &mu, &sum)
		})
	}
	wg.Wait()
	return sum, err
}

// stream delivers one stream's parked records again, in version order, stopping at
// the first that is not due or fails.
func (r *Redelivery) stream(ctx context.Context, now time.Time, rows []Record, mu *sync.Mutex, sum *Summary) {
	logger := r.logger()
	for i, p := range rows {
		if ctx.Err() != nil || p.Due.After(now) {
			return // the stream's later parked records wait behind this one
		}
		attrs := []slog.Attr{slog.String("consumer", p.Consumer), slog.String("streamId", p.StreamID), slog.Int64("version", p.Version)}
		recordedAt, err := r.Redeliverer.Redeliver(ctx, p.Consumer, p.StreamID, p.Version)
		mu.Lock()
		if !recordedAt.IsZero() {
			sum.OldestParked = max(sum.OldestParked, now.Sub(recordedAt))
		}
		mu.Unlock()
		if err == nil {
			if err = r.Rows.Unpark(ctx, p); err == nil {
				mu.Lock()
				sum.Redelivered++
				sum.Left--
				mu.Unlock()
				logger.LogAttrs(ctx, slog.LevelInfo, "sweep: parked stream record redelivered", attrs...)
				continue
			}
		}
		logger.LogAttrs(ctx, slog.LevelWarn, "sweep: parked stream record still fails", append(attrs, slog.String("error", err.Error()))...)
		if recordedAt.IsZero() {
			recordedAt = now
		}
		r.postpone(ctx, rows[i:], Backoff(now, recordedAt))
		return // the stream's later parked records wait behind this one
	}
}

// find queries each shard of the parked lane for the records due at now.
func (r *Redelivery) find(ctx context.Context, now time.Time) ([]Record, Summary, error) {
	var (
		rows []Record
		sum  = Summary{Swept: true}
		errs []error
	)
	cutoff := now.Add(time.Millisecond) // a delivery is due at its time
	for shard := range r.Rows.Shards() {
		read, err := r.Rows.ParkedPages(ctx, shard, cutoff, func(page []Record) bool {
			rows = append(rows, page...)
			return ctx.Err() == nil
		})
		sum.ItemsRead += read
		if err != nil && ctx.Err() == nil {
			errs = append(errs, err)
		}
	}
	Sort(rows)
	sum.Found = len(rows)
	return rows, sum, errors.Join(errs...)
}

// postpone puts a parked record whose redelivery failed off until due, and the
// stream's later parked records the sweep found with it too: the sweep reads only
// the records that are due, so a later one due before it would otherwise be
// delivered first.
func (r *Redelivery) postpone(ctx context.Context, rows []Record, due time.Time) {
	for _, p := range rows {
		if err := r.Rows.Postpone(ctx, p, due); err != nil {
			r.logger().LogAttrs(ctx, slog.LevelError, "sweep: parked stream record not postponed", slog.String("consumer", p.Consumer),
				slog.String("streamId", p.StreamID), slog.Int64("version", p.Version), slog.String("error", err.Error()))
		}
	}
}

func (r *Redelivery) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}
