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
)

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

// CancellationRetrier makes a cancellation owed to the provider, and says whether
// it is still owed; deadlinekinds.Retrier is one, over *command.Handler.
type CancellationRetrier interface {
	RetryCancellation(ctx context.Context, reference, cause string) (owed bool, err error)
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

// Sweeper finds the overdue rows of every kind of deadline and sends each its
// kind's command. It only reads the index and sends commands, and delivers parked
// stream records again: it holds no state and writes nothing but the parked
// records' rows, so two sweeps may run at once (each command, and each delivery, is
// safe twice).
type Sweeper struct {
	// Index is where the sweep finds the overdue rows: the Deadlines table
	// (pendingtable.Projection) in the service.
	Index Index
	// Kinds are the kinds of deadline the sweep covers, in the order it covers
	// them, with their commands (deadlinekinds.Declare).
	Kinds       Kinds
	Concurrency int           // commands in flight at once
	Margin      time.Duration // stop this long before ctx's deadline
	// Retrier makes the cancellations owed to the provider; nil only reports them.
	Retrier CancellationRetrier
	// Redeliverer delivers the parked stream records that are due to their
	// consumers again, and Parked settles their rows; with either nil the sweep
	// only counts them.
	Redeliverer Redeliverer
	Parked      ParkedRows
	Logger      *slog.Logger
	// Reporter, when set, receives every sweep's summary: the sweep function writes
	// it as CloudWatch metrics (sweepmetrics.Writer).
	Reporter Reporter
}

// Reporter receives the summary of every sweep, once it is done;
// *sweepmetrics.Writer is one.
type Reporter interface {
	Report(Summary)
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
	// RentalID names the subject of the one row a row's own deadline swept
	// (SweepOne).
	RentalID string `json:"rentalId,omitempty"`
	// Kinds is what the sweep did for each kind, in the kinds' order. The counts
	// above are those of the kinds that tally into them (Kind.Tally).
	Kinds []KindSummary `json:"kinds,omitempty"`
}

// KindSummary is what one sweep did for the rows of one kind: how many it found
// overdue (opened before Cutoff), what their commands' receivers did (Acted,
// Declined, NothingToDo), how many commands failed, and how many rows it left
// unsent (out of time, or no command to send); OldestOverdue is how long past its
// due time the oldest was, in JSON whole milliseconds.
type KindSummary struct {
	Kind          string        `json:"kind"`
	Cutoff        time.Time     `json:"cutoff"`
	Found         int           `json:"found"`
	Acted         int           `json:"acted"`
	Declined      int           `json:"declined"`
	NothingToDo   int           `json:"nothingToDo"`
	Failed        int           `json:"failed"`
	Left          int           `json:"left"`
	OldestOverdue time.Duration `json:"-"`
}

type kindSummaryJSON KindSummary

// MarshalJSON writes the summary with OldestOverdue as oldestOverdueMs.
func (k KindSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		kindSummaryJSON
		OldestOverdueMs int64 `json:"oldestOverdueMs"`
	}{kindSummaryJSON(k), k.OldestOverdue.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (k *KindSummary) UnmarshalJSON(b []byte) error {
	var v struct {
		kindSummaryJSON
		OldestOverdueMs int64 `json:"oldestOverdueMs"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*k = KindSummary(v.kindSummaryJSON)
	k.OldestOverdue = time.Duration(v.OldestOverdueMs) * time.Millisecond
	return nil
}

// Kind returns the summary of the kind named name, and whether the sweep covered it.
func (s Summary) Kind(name string) (KindSummary, bool) {
	for _, k := range s.Kinds {
		if k.Kind == name {
			return k, true
		}
	}
	return KindSummary{}, false
}

// Sweep finds the overdue rows of every kind: for each lane of the kinds, one query
// of each shard of the index with the lane's cutoff in the key condition (never a
// scan, never a filter in memory), and sends each row its kind's command, kind by
// kind in their order, each within its share of the time left, with bounded
// concurrency. A row whose kind yields to a kind found overdue for the same subject
// by this sweep waits for the next one. Then it retries the cancellations owed to
// the provider and redelivers the parked records that are due, which the same
// queries found. now is an argument so that callers and tests decide it. A failed
// command is counted and logged, never retried here: the row stays, and the next
// sweep finds it again. If ctx's deadline comes within the margin, the sweep stops
// starting work, reports Incomplete, and leaves the rest to the next run. The error
// reports queries that failed.
func (s *Sweeper) Sweep(ctx context.Context, now time.Time) (Summary, error) {
	concurrency := s.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	logger := s.logger()
	sum := s.newSummary(now)
	work, stop := context.WithCancel(ctx)
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(work, deadline.Add(-s.margin()))
		defer cancel()
	}
	f, err := s.find(work, &sum, concurrency)
	cause := "sweep:" + sum.Now.Format(time.RFC3339Nano)
	s.actAll(work, logger, &sum, f.rows, cause, concurrency)
	if work.Err() == nil {
		s.owed(work, logger, &sum, f.owed, cause, concurrency)
		s.redeliver(work, logger, &sum, f.parked, concurrency)
	}
	sum.Incomplete = work.Err() != nil && ctx.Err() == nil
	s.report(ctx, logger, sum, err)
	return sum, err
}

// newSummary starts the summary of a sweep at now, with the cutoffs of the kinds
// that tally into its top-level counts.
func (s *Sweeper) newSummary(now time.Time) Summary {
	sum := Summary{Now: now.UTC()}
	for _, k := range slices.Backward(s.Kinds.All()) {
		switch k.Tally {
		case TallyDue:
			sum.Cutoff = now.Add(-k.After).UTC()
		case TallyStuck:
			sum.StuckCutoff = now.Add(-k.After).UTC()
		}
	}
	return sum
}

// found is what a sweep's queries found overdue.
type found struct {
	rows   []Row
	owed   []OwedCancellation
	parked []Parked
}

// find queries each shard of each lane of the kinds the sweep covers (none worked
// off by hand), and of the owed cancellations' and the parked records' lanes, for
// the rows due before the sweep's now, at most concurrency queries at once: it
// reads only what is due. ItemsRead counts the first lane's reads, StuckItemsRead
// the others'.
func (s *Sweeper) find(ctx context.Context, sum *Summary, concurrency int) (found, error) {
	var (
		mu   sync.Mutex
		f    found
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, concurrency)
	for i, lane := range append(s.Kinds.Swept().Lanes(), OwedLane, ParkedLane) {
		cutoff := sum.Now // a deadline at its due time exactly is not overdue yet
		if lane == OwedLane || lane == ParkedLane {
			cutoff = sum.Now.Add(time.Millisecond) // a retry or a delivery is due at its time
		}
		for shard := range s.Index.Shards() {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				var page found
				read, err := s.Index.LanePages(ctx, lane, shard, cutoff, func(p LanePage) bool {
					page.rows, page.owed, page.parked = append(page.rows, p.Rows...), append(page.owed, p.Owed...), append(page.parked, p.Parked...)
					return ctx.Err() == nil
				})
				mu.Lock()
				defer mu.Unlock()
				if i == 0 {
					sum.ItemsRead += read
				} else {
					sum.StuckItemsRead += read
				}
				f.rows, f.owed, f.parked = append(f.rows, page.rows...), append(f.owed, page.owed...), append(f.parked, page.parked...)
				if err != nil && ctx.Err() == nil {
					errs = append(errs, err)
				}
			})
		}
	}
	wg.Wait()
	SortRows(f.rows)
	SortOwed(f.owed)
	SortParked(f.parked)
	return f, errors.Join(errs...)
}

// actAll sends the rows their kinds' commands, kind by kind in their order; the
// kinds that have rows share the time left equally, what one leaves unused going to
// those after it. A row of a kind that yields to a kind with a row of the same
// subject among these is dropped: the next sweep finds it if it is still due.
func (s *Sweeper) actAll(ctx context.Context, logger *slog.Logger, sum *Summary, rows []Row, cause string, concurrency int) {
	byKind := map[string][]Row{}
	for _, r := range rows {
		if k, ok := s.Kinds.ByName(r.Kind); ok {
			r.Due = k.DueAt(r.Since) // by the sweep's own settings
			byKind[r.Kind] = append(byKind[r.Kind], r)
		}
	}
	subjects := map[string]map[string]bool{}
	kinds := s.Kinds.Swept().All()
	for _, k := range kinds {
		byKind[k.Name] = slices.DeleteFunc(byKind[k.Name], func(r Row) bool {
			return slices.ContainsFunc(k.Yields, func(y string) bool { return subjects[y][r.Subject] })
		})
		subjects[k.Name] = map[string]bool{}
		for _, r := range byKind[k.Name] {
			subjects[k.Name][r.Subject] = true
		}
	}
	busy := 0
	for _, k := range kinds {
		if len(byKind[k.Name]) > 0 {
			busy++
		}
	}
	for _, k := range kinds {
		ks := KindSummary{Kind: k.Name, Cutoff: sum.Now.Add(-k.After).UTC(), Found: len(byKind[k.Name])}
		if ks.Found > 0 {
			share, cancel := shareOf(ctx, busy)
			s.act(share, logger, k, byKind[k.Name], sum.Now, cause, concurrency, &ks)
			cancel()
			busy--
		}
		sum.tally(k, ks)
	}
}

// shareOf returns ctx with a deadline of an n-th of the time it has left.
func shareOf(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok || n <= 1 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/time.Duration(n)))
}

// act sends k's command for each of its overdue rows, concurrency at a time, and
// counts what the receivers did into ks. Out of time, or without a command to
// send, the rest are left for the next sweep.
func (s *Sweeper) act(ctx context.Context, logger *slog.Logger, k Kind, rows []Row, now time.Time, cause string, concurrency int, ks *KindSummary) {
	for _, r := range rows {
		ks.OldestOverdue = max(ks.OldestOverdue, now.Sub(r.Due))
	}
	if k.OneAtATime {
		concurrency = 1
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, r := range rows {
		attrs := []slog.Attr{slog.String("kind", k.Name), slog.String("rentalId", r.Subject), slog.Time("due", r.Due)}
		if k.Act == nil || ctx.Err() != nil {
			mu.Lock()
			ks.Left++
			mu.Unlock()
			if k.Act == nil {
				logger.LogAttrs(ctx, slog.LevelWarn, "sweep: overdue, no command to send", attrs...)
			}
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			outcome, detail, err := k.Act(ctx, r, cause)
			if detail != "" {
				attrs = append(attrs, slog.String("case", detail))
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				ks.Failed++
				logger.LogAttrs(ctx, slog.LevelError, "sweep: command failed", append(attrs, slog.String("error", err.Error()))...)
			case outcome == Acted:
				ks.Acted++
				logger.LogAttrs(ctx, slog.LevelDebug, "sweep: acted", attrs...)
			case outcome == Declined:
				ks.Declined++
				logger.LogAttrs(ctx, slog.LevelInfo, "sweep: declined", attrs...)
			default:
				ks.NothingToDo++
			}
		})
	}
	wg.Wait()
}

// tally adds what the sweep did for kind k to the summary: to its kinds, and to the
// top-level counts k tallies into.
func (sum *Summary) tally(k Kind, ks KindSummary) {
	switch k.Tally {
	case TallyDue:
		sum.Found += ks.Found
		sum.Cancelled += ks.Acted
		sum.Declined += ks.Declined
		sum.NothingToDo += ks.NothingToDo
		sum.Failed += ks.Failed
		sum.OldestOverdue = max(sum.OldestOverdue, ks.OldestOverdue)
	case TallyStuck:
		sum.Stuck += ks.Found
		sum.StuckRepaired += ks.Acted
		sum.StuckLeft += ks.Found - ks.Acted
	}
	sum.Kinds = append(sum.Kinds, ks)
}

func (s *Sweeper) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// owed finds the cancellations owed to the provider, through the index, and gives
// each that is due to the Retrier, concurrency at a time: there are none on a
// healthy day, and while the provider is down each is tried at most once per sweep,
// less often with each retry it leaves unanswered (OwedBackoff, which the
// projection keeps as the row's due time), until the provider confirms it. Out of time, the rest are left for the next sweep (and counted as
// left).
func (s *Sweeper) owed(ctx context.Context, logger *slog.Logger, sum *Summary, rows []OwedCancellation, cause string, concurrency int) {
	sum.CancellationsOwed = len(rows)
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, row := range rows {
		attrs := []slog.Attr{slog.String("paymentReference", row.Reference), slog.String("rentalId", row.RentalID), slog.Time("owedAt", row.OwedAt)}
		if row.Due.After(sum.Now) { // its last retry went unanswered: put off
			mu.Lock()
			sum.CancellationsLeft++
			mu.Unlock()
			continue
		}
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
			owed, err := s.Retrier.RetryCancellation(ctx, row.Reference, cause)
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
			for i, p := range l.rows {
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
				s.postpone(ctx, logger, l.rows[i:], ParkedBackoff(sum.Now, recordedAt))
				return // the stream's later parked records wait behind this one
			}
		})
	}
	wg.Wait()
}

// postpone puts a parked record whose redelivery failed off until due, and the
// stream's later parked records the sweep found with it too: the sweep reads only
// the records that are due, so a later one due before it would otherwise be
// delivered first.
func (s *Sweeper) postpone(ctx context.Context, logger *slog.Logger, rows []Parked, due time.Time) {
	for _, p := range rows {
		if err := s.Parked.Postpone(ctx, p, due); err != nil {
			logger.LogAttrs(ctx, slog.LevelError, "sweep: parked stream record not postponed", slog.String("consumer", p.Consumer),
				slog.String("streamId", p.StreamID), slog.Int64("version", p.Version), slog.String("error", err.Error()))
		}
	}
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
	if s.Reporter != nil {
		s.Reporter.Report(sum)
	}
}
