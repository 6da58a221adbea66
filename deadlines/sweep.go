package deadlines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"
)

// Defaults of a sweeper.
const (
	// DefaultConcurrency is how many commands a sweep has in flight at once.
	DefaultConcurrency = 8
)

// SweeperConfig configures a Sweeper.
type SweeperConfig struct {
	// Index is where the sweep finds the overdue rows.
	Index Index
	// Kinds are the kinds of deadline, with their commands; the sweep covers the
	// swept ones (Send), in their order.
	Kinds Kinds
	// Every is how often the sweep runs: the interval its schedule fires at. A kind
	// whose sends back off (Send.Retry) needs it; zero is refused then.
	Every time.Duration
	// Concurrency is how many commands are in flight at once; zero:
	// DefaultConcurrency.
	Concurrency int
	// Logger logs each failed, declined and unsent row; nil: slog.Default().
	Logger *slog.Logger
}

// Sweeper finds the overdue rows of every swept kind and sends each its kind's
// command. It only reads the index and sends commands: it holds no state and
// writes nothing, so two sweeps may run at once (each command is safe twice), and
// a row changes only by the records its receiver writes.
type Sweeper struct {
	cfg SweeperConfig
}

// NewSweeper returns the sweeper cfg describes, or what is wrong with it.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	var errs []error
	if noIndex(cfg.Index) {
		errs = append(errs, errors.New("deadlines: sweeper: no Index"))
	} else if cfg.Index.Shards() < 1 {
		errs = append(errs, fmt.Errorf("deadlines: sweeper: an index of %d shards", cfg.Index.Shards()))
	}
	if cfg.Kinds.Len() == 0 {
		errs = append(errs, errors.New("deadlines: sweeper: no Kinds (NewKinds)"))
	}
	if cfg.Every < 0 || cfg.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("deadlines: sweeper: Every %s and Concurrency %d: want neither negative", cfg.Every, cfg.Concurrency))
	}
	for _, k := range cfg.Kinds.Swept() {
		if s := k.Work.(Send); !s.Retry.IsZero() && cfg.Every == 0 {
			errs = append(errs, fmt.Errorf("deadlines: sweeper: kind %q backs off its sends: want Every, the sweep's interval", k.Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Sweeper{cfg: cfg}, nil
}

// Kinds returns the sweeper's kinds.
func (s *Sweeper) Kinds() Kinds { return s.cfg.Kinds }

// KindSummary is what one sweep did for the rows of one kind: how many it found
// overdue (due before Now), how many of those it held back for their backoff
// (Waiting), what the receivers of the commands it sent did (Acted, Declined,
// NothingToDo), how many commands failed, and how many rows it left unsent (out of
// time, or no command to send); OldestOverdue is how long past its due time the
// oldest was (in JSON whole milliseconds, oldestOverdueMs); ItemsRead is how many
// items the reads of the kind's rows read.
type KindSummary struct {
	Kind          string        `json:"kind"`
	Found         int           `json:"found"`
	Waiting       int           `json:"waiting"`
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

// Sweep finds the overdue rows of every swept kind (one query of each shard of
// each kind's rows, with now as the bound: never a scan, never a filter in memory)
// and sends each its kind's command, naming cause as what caused it, kind by kind
// in their order, each within its share of the time ctx leaves, with bounded
// concurrency. A row of a kind that backs off is sent only when one of its send
// times falls in the interval before now (Backoff.Sends). A row whose kind yields
// to a kind found overdue for the same subject by this sweep waits for the next
// one. A failed command is counted and logged, never retried here: the row
// stays, and a later sweep sends it again. Out of time (ctx done), the rest are
// left for the next run. It returns what it did for each kind, in their order; the
// error reports reads that failed.
func (s *Sweeper) Sweep(ctx context.Context, now time.Time, cause string) ([]KindSummary, error) {
	now = now.UTC()
	kinds := s.cfg.Kinds.Swept()
	out := make([]KindSummary, len(kinds))
	for i, k := range kinds {
		out[i] = KindSummary{Kind: k.Name}
	}
	rows, err := s.find(ctx, kinds, now, out)
	s.actAll(ctx, kinds, rows, now, cause, out)
	return out, err
}

// find queries each shard of each kind's rows for those due before now, at most
// the sweeper's concurrency at once, counting each kind's reads into its summary.
// It returns the rows by kind, soonest due first.
func (s *Sweeper) find(ctx context.Context, kinds []Kind, now time.Time, sums []KindSummary) (map[string][]Row, error) {
	var (
		mu   sync.Mutex
		rows = map[string][]Row{}
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, s.cfg.Concurrency)
	for i, k := range kinds {
		for shard := range s.cfg.Index.Shards() {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				var got []Row
				read, err := s.cfg.Index.Rows(ctx, Span{Kind: k, Shard: shard, Before: now}, func(p []Row) bool {
					got = append(got, p...)
					return ctx.Err() == nil
				})
				mu.Lock()
				defer mu.Unlock()
				sums[i].ItemsRead += read
				rows[k.Name] = append(rows[k.Name], got...)
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
func (s *Sweeper) actAll(ctx context.Context, kinds []Kind, byKind map[string][]Row, now time.Time, cause string, sums []KindSummary) {
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
			s.act(share, k, byKind[k.Name], now, cause, &sums[i])
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

// act sends k's command for each of its overdue rows whose backoff lets it, with
// the sweeper's concurrency (one at a time if the kind says so), and counts what
// the receivers did into ks. Out of time, or without a command to send, the rest
// are left for the next sweep.
func (s *Sweeper) act(ctx context.Context, k Kind, rows []Row, now time.Time, cause string, ks *KindSummary) {
	logger := s.cfg.Logger
	send := k.Work.(Send)
	concurrency := s.cfg.Concurrency
	if send.OneAtATime {
		concurrency = 1
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for _, r := range rows {
		ks.OldestOverdue = max(ks.OldestOverdue, now.Sub(r.Due))
		if !send.Retry.Sends(r.Due, now, s.cfg.Every) {
			ks.Waiting++
			continue
		}
		attrs := []slog.Attr{slog.String("kind", k.Name), slog.String("subject", r.Subject), slog.Time("due", r.Due)}
		if send.Command == nil || ctx.Err() != nil {
			mu.Lock()
			ks.Left++
			mu.Unlock()
			if send.Command == nil {
				logger.LogAttrs(ctx, slog.LevelWarn, "sweep: overdue, no command to send", attrs...)
			}
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			outcome, err := sendOne(ctx, send.Command, r, cause)
			mu.Lock()
			defer mu.Unlock()
			ks.count(outcome, err)
			switch {
			case err != nil:
				logger.LogAttrs(ctx, slog.LevelError, "sweep: command failed", append(attrs, slog.String("error", err.Error()))...)
			case outcome == Declined:
				logger.LogAttrs(ctx, slog.LevelInfo, "sweep: declined", attrs...)
			}
		})
	}
	wg.Wait()
}

// sendOne sends c for r; a command that panics fails, and the sweep goes on.
func sendOne(ctx context.Context, c Command, r Row, cause string) (o Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("deadlines: command for %s %s panicked: %v", r.Kind, r.Subject, p)
		}
	}()
	o, err = c.Send(ctx, r, cause)
	if err == nil && o != Acted && o != Declined && o != NothingToDo {
		err = fmt.Errorf("deadlines: command for %s %s answered %q: want Acted, Declined or NothingToDo", r.Kind, r.Subject, o)
	}
	return o, err
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

// noIndex reports whether idx is nil, or a nil pointer (or map, or func) in an
// Index: what a constructor that failed returns beside its error.
func noIndex(idx Index) bool {
	if idx == nil {
		return true
	}
	switch v := reflect.ValueOf(idx); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}
