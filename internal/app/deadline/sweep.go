package deadline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
)

// Canceller sends CancelRentalPayment; *process.Process is one.
type Canceller interface {
	CancelRentalPayment(ctx context.Context, rentalID string, meta command.Meta) (process.Outcome, error)
}

// Defaults of the sweep's settings.
const (
	DefaultTimeout     = 15 * time.Minute
	DefaultConcurrency = 8
	// DefaultMargin is how long before its deadline a sweep stops starting work,
	// leaving the rest to the next run.
	DefaultMargin = 3 * time.Second
	// DefaultGrace is how long past the payment timeout a rental's process may stay
	// open before it counts as stuck: more than a sweep interval and the process's
	// reaction to the cancellation, with room to spare.
	DefaultGrace = 10 * time.Minute
)

// StuckRepairer mends a stuck rental where that is safe; *repair.Repairer is one.
type StuckRepairer interface {
	// RepairStuck repairs the rental if its case is one that needs no operator,
	// says whether it did, and why.
	RepairStuck(ctx context.Context, rentalID string) (repaired bool, reason string, err error)
}

// CancellationRetrier makes a cancellation owed to the provider, and says whether
// it is still owed; *command.Handler is one.
type CancellationRetrier interface {
	RetryCancellation(ctx context.Context, reference string, meta command.Meta) (owed bool, err error)
}

// Redeliverer delivers one stored record again to one stream consumer's handler;
// *repair.Repairer is one. It returns when the record was recorded.
type Redeliverer interface {
	Redeliver(ctx context.Context, consumer, streamID string, version int64) (recordedAt time.Time, err error)
}

// ParkedRows are the index's parked records, as the sweep settles them:
// pendingtable.Projection and Memory are.
type ParkedRows interface {
	// Unpark takes a redelivered record off the index. Safe to call twice.
	Unpark(ctx context.Context, p Parked) error
	// Postpone moves a parked record's due time to due and counts the attempt;
	// it does nothing to a record that is no longer parked.
	Postpone(ctx context.Context, p Parked, due time.Time) error
}

// Backoff of a parked record whose redelivery failed: it is due again after as long
// as it has been since it was recorded, at least ParkedBackoffMin and at most
// ParkedBackoffMax, so that the waits about double from one attempt to the next.
const (
	ParkedBackoffMin = 5 * time.Second
	ParkedBackoffMax = 5 * time.Minute
)

// ParkedBackoff returns when a parked record recorded at recordedAt whose
// redelivery failed at now is due again.
func ParkedBackoff(now, recordedAt time.Time) time.Time {
	return now.Add(min(max(now.Sub(recordedAt), ParkedBackoffMin), ParkedBackoffMax))
}

// Sweeper finds overdue payments and asks the process to give up on them. It only
// reads the projection and sends commands, and delivers parked stream records
// again: it holds no state and writes nothing but the parked records' rows, so two
// sweeps may run at once (each command, and each delivery, is safe twice).
type Sweeper struct {
	// Index is where the sweep finds overdue payments and stuck rentals: the
	// PendingPayments table (pendingtable.Projection) in the service.
	Index     Index
	Canceller Canceller
	// Kinds are the kinds of deadline the sweep covers, with their commands.
	Kinds Kinds
	// Policy says when a payment is overdue and when a rental is stuck.
	Policy      Policy
	Concurrency int           // commands in flight at once
	Margin      time.Duration // stop this long before ctx's deadline
	// Repairer mends the stuck rentals that need no operator; nil only reports them.
	Repairer StuckRepairer
	// Retrier makes the cancellations owed to the provider; nil only reports them.
	Retrier CancellationRetrier
	// Redeliverer delivers the parked stream records that are due to their
	// consumers again, and Parked settles their rows; with either nil the sweep
	// only counts them.
	Redeliverer Redeliverer
	Parked      ParkedRows
	Logger      *slog.Logger
	// Report, when set, receives every sweep's summary: the sweep function writes it
	// as CloudWatch metrics (sweepmetrics.Writer).
	Report func(Summary)
}

// Summary is what one sweep did.
type Summary struct {
	Now         time.Time `json:"now"`
	Cutoff      time.Time `json:"cutoff"`
	Found       int       `json:"found"`
	Cancelled   int       `json:"cancelled"`
	Declined    int       `json:"declined"`
	NothingToDo int       `json:"nothingToDo"`
	Failed      int       `json:"failed"`
	// ItemsRead is how many items DynamoDB read for the sweep's queries.
	ItemsRead int `json:"itemsRead"`
	// OldestOverdue is how long past its deadline the oldest overdue payment was; in
	// JSON, whole milliseconds.
	OldestOverdue time.Duration `json:"-"`
	// Incomplete reports a sweep that stopped early for its deadline.
	Incomplete bool `json:"incomplete"`
	// StuckCutoff is the time before which a rental's process that is still open is
	// stuck; Stuck is how many the sweep found, StuckRepaired how many of them it
	// repaired, and StuckLeft how many it left for an operator (or failed to repair;
	// the next sweep tries again).
	StuckCutoff   time.Time `json:"stuckCutoff"`
	Stuck         int       `json:"stuck"`
	StuckRepaired int       `json:"stuckRepaired"`
	StuckLeft     int       `json:"stuckLeft"`
	// StuckItemsRead is how many items DynamoDB read to find the stuck rentals
	// (ItemsRead counts the payments' queries only).
	StuckItemsRead int `json:"stuckItemsRead"`
	// CancellationsOwed is how many cancellations owed to the provider the sweep
	// found, CancellationsMade how many of them the provider has now confirmed (or
	// found succeeded, which is refunded), and CancellationsLeft how many are still
	// owed after it (the next sweep tries again). The reads that find the stuck
	// rentals find them too (StuckItemsRead counts them).
	CancellationsOwed int `json:"cancellationsOwed"`
	CancellationsMade int `json:"cancellationsMade"`
	CancellationsLeft int `json:"cancellationsLeft"`
	// Parked is how many parked stream records the sweep found, Redelivered how
	// many of the due ones it delivered to their consumer again (and took off the
	// index), and RedeliveriesLeft how many are still parked after it (not due yet,
	// failed again, or not reached). OldestParked is how long ago the oldest
	// record it tried to redeliver was recorded; in JSON, whole milliseconds. The
	// reads that find the stuck rentals find them too.
	Parked           int           `json:"parked"`
	Redelivered      int           `json:"redelivered"`
	RedeliveriesLeft int           `json:"redeliveriesLeft"`
	OldestParked     time.Duration `json:"-"`
	// RentalID names the one rental a payment's own deadline swept (SweepOne).
	RentalID string `json:"rentalId,omitempty"`
}

// Sweep finds every payment prepared before now minus the timeout by querying each
// shard of the index (never scanning, never filtering in memory) and sends
// CancelRentalPayment for each, with bounded concurrency. Then it finds the stuck
// rentals, whose process has stayed open past the timeout plus the grace, the same
// way, and gives each to the Repairer. now is an argument so that
// callers and tests decide it. A failed command is counted and logged, never
// retried here: the row stays, and the next sweep finds it again. If ctx's deadline
// comes within the margin, the sweep stops starting work, reports Incomplete, and
// leaves the rest to the next run. The error reports queries that failed.
func (s *Sweeper) Sweep(ctx context.Context, now time.Time) (Summary, error) {
	concurrency, margin := s.Concurrency, s.Margin
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	if margin <= 0 {
		margin = DefaultMargin
	}
	logger := s.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sum := Summary{Now: now.UTC(), Cutoff: s.Policy.Cutoff(now).UTC()}

	work, stop := context.WithCancel(ctx)
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(work, deadline.Add(-margin))
		defer cancel()
	}

	var mu sync.Mutex
	rows := make(chan Pending)
	var queries sync.WaitGroup
	var queryErrs []error
	for shard := range s.Index.Shards() {
		queries.Add(1)
		go func() {
			defer queries.Done()
			read, err := s.Index.OverduePages(work, shard, sum.Cutoff, func(page []Pending) bool {
				for _, row := range page {
					select {
					case rows <- row:
					case <-work.Done():
						return false
					}
				}
				return true
			})
			mu.Lock()
			defer mu.Unlock()
			sum.ItemsRead += read
			if err != nil && work.Err() == nil {
				queryErrs = append(queryErrs, err)
			}
		}()
	}
	go func() { queries.Wait(); close(rows) }()

	meta := command.Meta{CausationID: "sweep:" + sum.Now.Format(time.RFC3339Nano)}
	found := map[string]bool{} // the rentals whose payment this sweep found overdue
	var workers sync.WaitGroup
	for range concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for row := range rows {
				mu.Lock()
				sum.Found++
				found[row.RentalID] = true
				if overdue := sum.Cutoff.Sub(row.PreparedAt); overdue > sum.OldestOverdue {
					sum.OldestOverdue = overdue
				}
				mu.Unlock()
				if work.Err() != nil {
					continue // out of time: the next sweep finds the row again
				}
				outcome, err := s.Canceller.CancelRentalPayment(work, row.RentalID, meta)
				mu.Lock()
				switch {
				case err != nil:
					sum.Failed++
					logger.LogAttrs(ctx, slog.LevelError, "sweep: cancel failed",
						slog.String("rentalId", row.RentalID), slog.String("error", err.Error()))
				case outcome == process.OutcomeCancelled:
					sum.Cancelled++
				case outcome == process.OutcomeDeclined:
					sum.Declined++
				default:
					sum.NothingToDo++
				}
				mu.Unlock()
			}
		}()
	}
	workers.Wait()
	if work.Err() == nil {
		owed, err := s.stuck(work, logger, &sum, found)
		if err != nil && work.Err() == nil {
			queryErrs = append(queryErrs, err)
		}
		if err == nil && work.Err() == nil {
			s.owed(work, logger, &sum, owed.Owed, meta, concurrency)
			s.redeliver(work, logger, &sum, owed.Parked, concurrency)
		}
	}
	sum.Incomplete = work.Err() != nil && ctx.Err() == nil
	err := errors.Join(queryErrs...)
	s.report(ctx, logger, sum, err)
	return sum, err
}

// owed finds the cancellations owed to the provider, through the index, and gives
// each to the Retrier, concurrency at a time: there are none on a healthy day, and
// while the provider is down each is tried once per sweep, until the provider
// confirms it. Out of time, the rest are left for the next sweep (and counted as
// left).
func (s *Sweeper) owed(ctx context.Context, logger *slog.Logger, sum *Summary, rows []OwedCancellation, meta command.Meta, concurrency int) {
	sum.CancellationsOwed = len(rows)
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, row := range rows {
		attrs := []slog.Attr{slog.String("paymentReference", row.Reference), slog.String("rentalId", row.RentalID), slog.Time("owedAt", row.OwedAt)}
		if s.Retrier == nil || ctx.Err() != nil {
			mu.Lock()
			sum.CancellationsLeft++
			mu.Unlock()
			logger.LogAttrs(ctx, slog.LevelWarn, "sweep: cancellation owed to the provider", attrs...)
			continue
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			owed, err := s.Retrier.RetryCancellation(ctx, row.Reference, meta)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil || owed:
				sum.CancellationsLeft++
				if err != nil {
					attrs = append(attrs, slog.String("error", err.Error()))
				}
				logger.LogAttrs(ctx, slog.LevelWarn, "sweep: cancellation still owed to the provider", attrs...)
			default:
				sum.CancellationsMade++
				logger.LogAttrs(ctx, slog.LevelInfo, "sweep: owed cancellation made at the provider", attrs...)
			}
		}()
	}
	wg.Wait()
}

// stuck finds the rentals whose process has stayed open past the timeout plus the
// grace, through the index, and repairs those that need no operator, one at a time:
// there are none on a healthy day. Each is logged with its case. A rental whose
// payment this very sweep found overdue (found) is not stuck: its cancellation is
// under way (that happens when sweeps did not run for longer than the grace).
// It returns the cancellations owed to the provider, which the same reads find.
func (s *Sweeper) stuck(ctx context.Context, logger *slog.Logger, sum *Summary, found map[string]bool) (Backlog, error) {
	sum.StuckCutoff = s.Policy.StuckCutoff(sum.Now)
	backlog, read, err := s.Index.Backlog(ctx, sum.StuckCutoff)
	sum.StuckItemsRead = read
	if err != nil {
		return Backlog{}, err
	}
	open := slices.DeleteFunc(backlog.Open, func(o Open) bool { return found[o.RentalID] })
	sum.Stuck = len(open)
	for _, o := range open {
		if ctx.Err() != nil {
			sum.StuckLeft += sum.Stuck - sum.StuckRepaired - sum.StuckLeft
			break
		}
		attrs := []slog.Attr{slog.String("rentalId", o.RentalID), slog.Time("requestedAt", o.RequestedAt)}
		if s.Repairer == nil {
			sum.StuckLeft++
			logger.LogAttrs(ctx, slog.LevelWarn, "sweep: stuck rental", attrs...)
			continue
		}
		repaired, reason, err := s.Repairer.RepairStuck(ctx, o.RentalID)
		attrs = append(attrs, slog.String("case", reason))
		switch {
		case err != nil:
			sum.StuckLeft++
			logger.LogAttrs(ctx, slog.LevelError, "sweep: stuck rental not repaired", append(attrs, slog.String("error", err.Error()))...)
		case repaired:
			sum.StuckRepaired++
			logger.LogAttrs(ctx, slog.LevelWarn, "sweep: stuck rental repaired", attrs...)
		default:
			sum.StuckLeft++
			logger.LogAttrs(ctx, slog.LevelError, "sweep: stuck rental left for an operator", attrs...)
		}
	}
	return backlog, nil
}

// redeliver delivers the parked records that are due to their consumers again,
// concurrency streams at a time, each stream's in version order: a stream's parked
// records wait behind its earliest one, until that one is due and delivered, so
// that its order is kept among what is parked. There are none on a healthy day. A
// record delivered is taken off the index; one that fails again is due again after
// ParkedBackoff. Out of time, the rest are left for the next sweep.
func (s *Sweeper) redeliver(ctx context.Context, logger *slog.Logger, sum *Summary, rows []Parked, concurrency int) {
	sum.Parked = len(rows)
	sum.RedeliveriesLeft = len(rows)
	if s.Redeliverer == nil || s.Parked == nil || len(rows) == 0 {
		return
	}
	type lane struct {
		rows []Parked
	}
	var lanes []*lane
	byStream := map[[2]string]*lane{}
	for _, p := range rows {
		k := [2]string{p.Consumer, p.StreamID}
		l, ok := byStream[k]
		if !ok {
			l = &lane{}
			byStream[k] = l
			lanes = append(lanes, l)
		}
		l.rows = append(l.rows, p)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, l := range lanes {
		slices.SortFunc(l.rows, func(a, b Parked) int { return cmp.Compare(a.Version, b.Version) })
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, p := range l.rows {
				if ctx.Err() != nil || p.Due.After(sum.Now) {
					return // the stream's later parked records wait behind this one
				}
				attrs := []slog.Attr{slog.String("consumer", p.Consumer), slog.String("streamId", p.StreamID), slog.Int64("version", p.Version)}
				recordedAt, err := s.Redeliverer.Redeliver(ctx, p.Consumer, p.StreamID, p.Version)
				mu.Lock()
				if !recordedAt.IsZero() {
					sum.OldestParked = max(sum.OldestParked, sum.Now.Sub(recordedAt))
				}
				mu.Unlock()
				if err == nil {
					err = s.Parked.Unpark(ctx, p)
					if err == nil {
						mu.Lock()
						sum.Redelivered++
						sum.RedeliveriesLeft--
						mu.Unlock()
						logger.LogAttrs(ctx, slog.LevelInfo, "sweep: parked stream record redelivered", attrs...)
						continue
					}
				}
				logger.LogAttrs(ctx, slog.LevelWarn, "sweep: parked stream record still fails", append(attrs, slog.String("error", err.Error()))...)
				if recordedAt.IsZero() {
					recordedAt = sum.Now
				}
				if err := s.Parked.Postpone(ctx, p, ParkedBackoff(sum.Now, recordedAt)); err != nil {
					logger.LogAttrs(ctx, slog.LevelError, "sweep: parked stream record not postponed", append(attrs, slog.String("error", err.Error()))...)
				}
				return // the stream's later parked records wait behind this one
			}
		})
	}
	wg.Wait()
}

type summaryJSON Summary

// MarshalJSON writes the summary with OldestOverdue as oldestOverdueMs.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		summaryJSON
		OldestOverdueMs int64 `json:"oldestOverdueMs"`
		OldestParkedMs  int64 `json:"oldestParkedMs"`
	}{summaryJSON(s), s.OldestOverdue.Milliseconds(), s.OldestParked.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var v struct {
		summaryJSON
		OldestOverdueMs int64 `json:"oldestOverdueMs"`
		OldestParkedMs  int64 `json:"oldestParkedMs"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Summary(v.summaryJSON)
	s.OldestOverdue = time.Duration(v.OldestOverdueMs) * time.Millisecond
	s.OldestParked = time.Duration(v.OldestParkedMs) * time.Millisecond
	return nil
}

func (s *Sweeper) margin() time.Duration {
	if s.Margin > 0 {
		return s.Margin
	}
	return DefaultMargin
}

func (s *Sweeper) report(ctx context.Context, logger *slog.Logger, sum Summary, err error) {
	attrs := []slog.Attr{
		slog.Time("now", sum.Now), slog.Time("cutoff", sum.Cutoff),
		slog.Int("found", sum.Found), slog.Int("cancelled", sum.Cancelled), slog.Int("declined", sum.Declined),
		slog.Int("nothingToDo", sum.NothingToDo), slog.Int("failed", sum.Failed), slog.Int("itemsRead", sum.ItemsRead),
		slog.Int64("oldestOverdueMs", sum.OldestOverdue.Milliseconds()), slog.Bool("incomplete", sum.Incomplete),
		slog.Int("stuck", sum.Stuck), slog.Int("stuckRepaired", sum.StuckRepaired), slog.Int("stuckLeft", sum.StuckLeft),
		slog.Int("cancellationsOwed", sum.CancellationsOwed), slog.Int("cancellationsMade", sum.CancellationsMade),
		slog.Int("cancellationsLeft", sum.CancellationsLeft),
		slog.Int("parked", sum.Parked), slog.Int("redelivered", sum.Redelivered), slog.Int("redeliveriesLeft", sum.RedeliveriesLeft),
	}
	// A sweep that found nothing is the usual case, once an interval: its line is
	// for debugging (its metrics say it ran).
	level := slog.LevelInfo
	switch {
	case err != nil:
		attrs = append(attrs, slog.String("error", err.Error()))
		level = slog.LevelError
	case sum.Failed > 0 || sum.Incomplete || sum.Stuck > 0 || sum.CancellationsLeft > 0 || sum.RedeliveriesLeft > 0:
		level = slog.LevelWarn
	case sum.Found == 0 && sum.CancellationsOwed == 0 && sum.Parked == 0:
		level = slog.LevelDebug
	}
	logger.LogAttrs(ctx, level, "sweep", attrs...)
	if s.Report != nil {
		s.Report(sum)
	}
}
