package owed

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
)

// Rows is the owed lane as Retries reads it: deadlinetable.Projection and
// memindex.Memory are.
type Rows interface {
	// Shards returns how many partitions the lane is read by.
	Shards() int
	// OwedPages calls fn with the owed cancellations of the lane's shard, due or
	// put off, soonest due first, at most limit a page, until fn returns false or
	// none are left, and returns how many items it read: every one it passes to fn.
	OwedPages(ctx context.Context, shard, limit int, fn func([]Cancellation) bool) (int, error)
}

// Retrier makes a cancellation owed to the provider, naming what caused the retry
// in meta, and says whether it is still owed; *command.Handler is one.
type Retrier interface {
	RetryCancellation(ctx context.Context, reference string, meta command.Meta) (owed bool, err error)
}

// Page is how many owed rows Retries asks for at a time from each shard: it reads
// a shard's pages while they hold rows that are due, so that it reads every due
// row and at most a page of put-off ones beyond them.
const Page = 100

// DefaultConcurrency is how many retries are in flight at once when Retries sets
// none.
const DefaultConcurrency = 8

// Retries is the sweep's part that works off the cancellations owed to the
// provider: there are none on a healthy day. Each sweep it reads the owed lane,
// gives each row that is due to the Retrier, concurrency at a time, and counts
// every row still owed after it, due or put off, so that the metric of what is
// still owed (OwedCancellationsLeft) stays up for as long as something is owed, put off
// or not (docs/decisions/0030-a-small-machinery.md).
type Retries struct {
	Rows Rows
	// Retrier makes the owed cancellations that are due; nil only counts them.
	Retrier     Retrier
	Concurrency int
	Logger      *slog.Logger
}

// Summary is what one sweep's retries did: Owed is how many owed cancellations it
// found (due and put off), Due how many of them were due, Made how many of those
// the provider has now confirmed (or found succeeded, which is refunded), and Left
// how many are still owed after it (put off, unanswered again, failed, or not
// reached). More reports a shard that held more put-off rows than the page read
// beyond its due ones: then Owed and Left count at least that many. ItemsRead is
// how many items the reads of the owed lane read.
type Summary struct {
	// Swept says the part ran: a sweep of one row's own deadline, or one out of
	// time before it got here, has no counts of the owed cancellations (zero is no
	// count), and writes none.
	Swept     bool `json:"swept"`
	Owed      int  `json:"owed"`
	Due       int  `json:"due"`
	Made      int  `json:"made"`
	Left      int  `json:"left"`
	More      bool `json:"more,omitempty"`
	ItemsRead int  `json:"itemsRead"`
}

// Run reads every owed cancellation (due ones at now, at its time exactly too, and
// up to a page a shard of put-off ones) and retries those due, naming cause as
// what caused each retry. A failed retry is counted as left and logged: the next
// sweep tries again. Out of time (ctx done), the rest are left. The error reports
// reads that failed; what was read is worked off regardless.
func (r *Retries) Run(ctx context.Context, now time.Time, cause string) (Summary, error) {
	rows, sum, err := r.find(ctx, now)
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	concurrency := r.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, row := range rows {
		attrs := []slog.Attr{slog.String("paymentReference", row.Reference), slog.String("rentalId", row.RentalID), slog.Time("owedAt", row.OwedAt)}
		mu.Lock()
		putOff := row.Due.After(now) // its last retry went unanswered
		if !putOff {
			sum.Due++
		}
		if putOff || r.Retrier == nil || ctx.Err() != nil {
			sum.Left++
		}
		mu.Unlock()
		if putOff {
			continue
		}
		if r.Retrier == nil || ctx.Err() != nil {
			logger.LogAttrs(ctx, slog.LevelWarn, "sweep: cancellation owed to the provider", attrs...)
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			owed, err := r.Retrier.RetryCancellation(ctx, row.Reference, command.Meta{CausationID: cause})
			mu.Lock()
			defer mu.Unlock()
			if err != nil || owed {
				sum.Left++
				if err != nil {
					attrs = append(attrs, slog.String("error", err.Error()))
				}
				logger.LogAttrs(ctx, slog.LevelWarn, "sweep: cancellation still owed to the provider", attrs...)
				return
			}
			sum.Made++
			logger.LogAttrs(ctx, slog.LevelInfo, "sweep: owed cancellation made at the provider", attrs...)
		})
	}
	wg.Wait()
	return sum, err
}

// find reads each shard of the owed lane, a page at a time, for as long as its
// pages end with a row that is due at now: every due row, and at most a page of
// put-off ones beyond them. The rows come back oldest first.
func (r *Retries) find(ctx context.Context, now time.Time) ([]Cancellation, Summary, error) {
	var (
		rows []Cancellation
		sum  = Summary{Swept: true}
		errs []error
	)
	for shard := range r.Rows.Shards() {
		read, err := r.Rows.OwedPages(ctx, shard, Page, func(page []Cancellation) bool {
			rows = append(rows, page...)
			if len(page) == 0 || page[len(page)-1].Due.After(now) {
				sum.More = sum.More || len(page) == Page
				return false // the rest of the shard is put off further still
			}
			return ctx.Err() == nil
		})
		sum.ItemsRead += read
		if err != nil && ctx.Err() == nil {
			errs = append(errs, err)
		}
	}
	Sort(rows)
	sum.Owed = len(rows)
	return rows, sum, errors.Join(errs...)
}
