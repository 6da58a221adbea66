package deadline

import (
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

// Sweeper finds the overdue rows of every kind of deadline the sweep covers and
// sends each its kind's command (Kind.Work, Send). It only reads the index and
// sends commands: it holds no state and writes nothing, so two sweeps may run at
// once (each command is safe twice). The sweep's other parts (owed cancellations,
// parked records) run beside it (package sweep).
type Sweeper struct {
	// Index is where the sweep finds the overdue rows: the Deadlines table
	// (deadlinetable.Projection) in the service.
	Index Index
	// Kinds are the kinds of deadline the sweep covers, in the order it covers
	// them, with their commands (deadlinekinds.Declare).
	Kinds       Kinds
	Concurrency int // commands in flight at once
	Logger      *slog.Logger
}

// KindSummary is what one sweep did for the rows of one kind: how many it found
// overdue (opened before Cutoff), what their commands' receivers did (Acted,
// Declined, NothingToDo), how many commands failed, and how many rows it left
// unsent (out of time, or no command to send); OldestOverdue is how long past its
// due time the oldest was, in JSON whole milliseconds (oldestOverdueMs); ItemsRead
// is how many items the reads of the kind's lane read.
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
	ItemsRead     int           `json:"itemsRead"`
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

// Sweep finds the overdue rows of every kind the sweep covers (none worked off by
// hand): for each kind's lane, one query of each shard of the index with the
// sweep's now in the key condition (never a scan, never a filter in memory), and
// sends each row its kind's command, naming cause as what caused it, kind by kind
// in their order, each within its share of the time ctx leaves, with bounded
// concurrency. A row whose kind yields to a kind found overdue for the same
// subject by this sweep waits for the next one. A failed command is counted and
// logged, never retried here: the row stays, and the next sweep finds it again.
// Out of time (ctx done), the rest are left for the next run. It returns what it
// did for each kind, in their order; the error reports queries that failed.
func (s *Sweeper) Sweep(ctx context.Context, now time.Time, cause string) ([]KindSummary, error) {
	concurrency := s.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	now = now.UTC()
	kinds := s.Kinds.Swept().All()
	out := make([]KindSummary, len(kinds))
	for i, k := range kinds {
		out[i] = KindSummary{Kind: k.Name, Cutoff: now.Add(-k.After)}
	}
	rows, err := s.find(ctx, now, out, concurrency)
	s.actAll(ctx, kinds, rows, now, cause, concurrency, out)
	return out, err
}

// find queries each shard of each kind's lane for the rows due before now, at
// most concurrency queries at once, counting each lane's reads into its kind's
// summary: it reads only what is due. It returns the rows by kind.
func (s *Sweeper) find(ctx context.Context, now time.Time, sums []KindSummary, concurrency int) (map[string][]Row, error) {
	var (
		mu   sync.Mutex
		rows = map[string][]Row{}
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, concurrency)
	for i, k := range s.Kinds.Swept().All() {
		for shard := range s.Index.Shards() {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				var page []Row
				read, err := s.Index.LanePages(ctx, k.Lane(), shard, now, func(p []Row) bool {
					page = append(page, p...)
					return ctx.Err() == nil
				})
				mu.Lock()
				defer mu.Unlock()
				sums[i].ItemsRead += read
				for _, r := range page {
					r.Due = k.DueAt(r.Since) // by the sweep's own settings
					rows[k.Name] = append(rows[k.Name], r)
				}
				if err != nil && ctx.Err() == nil {
					errs = append(errs, err)
				}
			})
		}
	}
	wg.Wait()
	for _, r := range rows {
		SortRows(r)
	}
	return rows, errors.Join(errs...)
}

// actAll sends the rows their kinds' commands, kind by kind in their order; the
// kinds that have rows share the time left equally, what one leaves unused going to
// those after it. A row of a kind that yields to a kind with a row of the same
// subject among these is dropped: the next sweep finds it if it is still due.
func (s *Sweeper) actAll(ctx context.Context, kinds []Kind, byKind map[string][]Row, now time.Time, cause string, concurrency int, sums []KindSummary) {
	subjects := map[string]map[string]bool{}
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
	for i, k := range kinds {
		sums[i].Found = len(byKind[k.Name])
		if sums[i].Found > 0 {
			share, cancel := shareOf(ctx, busy)
			s.act(share, k, byKind[k.Name], now, cause, concurrency, &sums[i])
			cancel()
			busy--
		}
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

// act sends k's command for each of its overdue rows, concurrency at a time (one
// at a time if the command says so), and counts what the receivers did into ks.
// Out of time, or without a command to send, the rest are left for the next
// sweep.
func (s *Sweeper) act(ctx context.Context, k Kind, rows []Row, now time.Time, cause string, concurrency int, ks *KindSummary) {
	logger := s.logger()
	for _, r := range rows {
		ks.OldestOverdue = max(ks.OldestOverdue, now.Sub(r.Due))
	}
	cmd, ok := k.Command()
	if ok && cmd.OneAtATime() {
		concurrency = 1
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, r := range rows {
		attrs := []slog.Attr{slog.String("kind", k.Name), slog.String("rentalId", r.Subject), slog.Time("due", r.Due)}
		if !ok || ctx.Err() != nil {
			mu.Lock()
			ks.Left++
			mu.Unlock()
			if !ok {
				logger.LogAttrs(ctx, slog.LevelWarn, "sweep: overdue, no command to send", attrs...)
			}
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			outcome, detail, err := cmd.Send(ctx, r, cause)
			if detail != "" {
				attrs = append(attrs, slog.String("case", detail))
			}
			mu.Lock()
			defer mu.Unlock()
			ks.count(outcome, err)
			switch {
			case err != nil:
				logger.LogAttrs(ctx, slog.LevelError, "sweep: command failed", append(attrs, slog.String("error", err.Error()))...)
			case outcome == Acted:
				logger.LogAttrs(ctx, slog.LevelDebug, "sweep: acted", attrs...)
			case outcome == Declined:
				logger.LogAttrs(ctx, slog.LevelInfo, "sweep: declined", attrs...)
			}
		})
	}
	wg.Wait()
}

// count adds what one command's receiver did (or its failure) to the summary.
func (ks *KindSummary) count(o Outcome, err error) {
	switch {
	case err != nil:
		ks.Failed++
	case o == Acted:
		ks.Acted++
	case o == Declined:
		ks.Declined++
	default:
		ks.NothingToDo++
	}
}

func (s *Sweeper) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
