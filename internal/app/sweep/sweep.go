// Package sweep is one run of the sweep: the to-do list's kinds' rows
// (deadline.Sweeper, which sends each overdue row its kind's command), and beside
// them the sweep's other parts, each over a lane of its own of the same Deadlines
// table: the retries of the cancellations owed to the provider (owed.Retries) and
// the redelivery of the parked stream records (parked.Redelivery). Sweep runs them
// in that order within the invocation's time, less a margin, and reports one
// Summary: a summary per kind and one per other part, as the sweep function's
// answer, one log line, and (Reporter) the sweep's CloudWatch metrics. The recipe
// that builds it is sweepfn.Sweep.
//
// A due payment goes from the sweep to its command by names one can follow:
// Sweep.Sweep calls deadline.Sweeper.Sweep, which sends each overdue row through
// deadline.Command.Send; the payment kind's command is deadlinekinds.CancelPayment,
// whose Send calls deadlinekinds.Canceller.CancelRentalPayment
// (process.Process.CancelRentalPayment).
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
)

// Sweep is the sweep's parts, run together. Deadlines is required; Owed and
// Parked, when nil, are not run (and their summaries are zero).
type Sweep struct {
	Deadlines *deadline.Sweeper
	Owed      *owed.Retries
	Parked    *parked.Redelivery
	// Margin is how long before ctx's deadline the sweep stops starting work
	// (deadline.DefaultMargin if zero).
	Margin time.Duration
	Logger *slog.Logger
	// Reporter, when set, receives every sweep's summary: the sweep function writes
	// it as CloudWatch metrics (sweepmetrics.Writer).
	Reporter Reporter
}

// Reporter receives the summary of every sweep, once it is done;
// *sweepmetrics.Writer is one.
type Reporter interface {
	Report(Summary)
}

// Summary is what one sweep did: its now, whether it stopped early for its
// deadline (Incomplete), what it did for each kind it covers, in their order
// (Kinds), for the cancellations owed to the provider (Owed) and for the parked
// stream records (Parked). RentalID names the subject of the one row a row's own
// deadline swept (SweepOne).
type Summary struct {
	Now        time.Time              `json:"now"`
	Incomplete bool                   `json:"incomplete"`
	RentalID   string                 `json:"rentalId,omitempty"`
	Kinds      []deadline.KindSummary `json:"kinds"`
	Owed       owed.Summary           `json:"owed"`
	Parked     parked.Summary         `json:"parked"`
}

// Kind returns the summary of the kind named name; ok is false when the sweep did
// not cover it.
func (s Summary) Kind(name string) (k deadline.KindSummary, ok bool) {
	for _, k := range s.Kinds {
		if k.Kind == name {
			return k, true
		}
	}
	return deadline.KindSummary{Kind: name}, false
}

// Of returns the summary of the kind named name, zero (but for its name) when the
// sweep did not cover it.
func (s Summary) Of(name string) deadline.KindSummary {
	k, _ := s.Kind(name)
	return k
}

// Found is how many overdue rows the sweep found, of every kind.
func (s Summary) Found() int {
	n := 0
	for _, k := range s.Kinds {
		n += k.Found
	}
	return n
}

// Sweep runs the sweep's parts at now: the kinds' overdue rows, then, if time is
// left, the owed cancellations and the parked records. now is an argument so that
// callers and tests decide it. If ctx's deadline comes within the margin, the
// sweep stops starting work, reports Incomplete, and leaves the rest to the next
// run. The error reports reads that failed; each part works off what it read
// regardless.
func (s *Sweep) Sweep(ctx context.Context, now time.Time) (Summary, error) {
	sum := Summary{Now: now.UTC()}
	work, cancel := s.work(ctx)
	defer cancel()
	cause := "sweep:" + sum.Now.Format(time.RFC3339Nano)
	var errs []error
	kinds, err := s.Deadlines.Sweep(work, now, cause)
	sum.Kinds, errs = kinds, append(errs, err)
	if s.Owed != nil && work.Err() == nil {
		sum.Owed, err = s.Owed.Run(work, now, cause)
		errs = append(errs, err)
	}
	if s.Parked != nil && work.Err() == nil {
		sum.Parked, err = s.Parked.Run(work, now)
		errs = append(errs, err)
	}
	sum.Incomplete = work.Err() != nil && ctx.Err() == nil
	err = errors.Join(errs...)
	s.report(ctx, sum, err)
	return sum, err
}

// SweepOne acts on one row whose own deadline has come (deadline.Sweeper.SweepOne),
// and reports it as a sweep of that row's kind alone.
func (s *Sweep) SweepOne(ctx context.Context, kind, key string, now time.Time) (Summary, error) {
	one, err := s.Deadlines.SweepOne(ctx, kind, key, now, s.margin())
	sum := Summary{Now: one.Now, RentalID: one.Subject}
	if one.Kind.Kind != "" {
		sum.Kinds = []deadline.KindSummary{one.Kind}
	}
	s.report(ctx, sum, err)
	return sum, err
}

// work returns ctx with a deadline the margin before its own, if it has one.
func (s *Sweep) work(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, dl.Add(-s.margin()))
	}
	return context.WithCancel(ctx)
}

func (s *Sweep) margin() time.Duration {
	if s.Margin > 0 {
		return s.Margin
	}
	return deadline.DefaultMargin
}

// report logs the summary as one line, "sweep", and gives it to the Reporter. A
// sweep that found nothing is the usual case, once an interval: its line is for
// debugging (its metrics say it ran).
func (s *Sweep) report(ctx context.Context, sum Summary, err error) {
	logger := s.Logger
	if logger == nil {
		logger = slog.Default()
	}
	attrs := []slog.Attr{slog.Time("now", sum.Now), slog.Bool("incomplete", sum.Incomplete)}
	if sum.RentalID != "" {
		attrs = append(attrs, slog.String("rentalId", sum.RentalID))
	}
	failed, left := 0, sum.Owed.Left+sum.Parked.Left
	for _, k := range sum.Kinds {
		attrs = append(attrs, slog.Group(k.Kind, "found", k.Found, "acted", k.Acted, "declined", k.Declined, "nothingToDo", k.NothingToDo,
			"failed", k.Failed, "left", k.Left, "oldestOverdueMs", k.OldestOverdue.Milliseconds(), "itemsRead", k.ItemsRead))
		failed += k.Failed
		left += k.Left
	}
	attrs = append(attrs,
		slog.Group("owed", "owed", sum.Owed.Owed, "due", sum.Owed.Due, "made", sum.Owed.Made, "left", sum.Owed.Left, "itemsRead", sum.Owed.ItemsRead),
		slog.Group("parked", "found", sum.Parked.Found, "redelivered", sum.Parked.Redelivered, "left", sum.Parked.Left,
			"oldestParkedMs", sum.Parked.OldestParked.Milliseconds(), "itemsRead", sum.Parked.ItemsRead))
	level := slog.LevelInfo
	switch {
	case err != nil:
		attrs = append(attrs, slog.String("error", err.Error()))
		level = slog.LevelError
	case failed > 0 || sum.Incomplete || left > 0:
		level = slog.LevelWarn
	case sum.Found() == 0 && sum.Owed.Owed == 0 && sum.Parked.Found == 0:
		level = slog.LevelDebug
	}
	logger.LogAttrs(ctx, level, "sweep", attrs...)
	if s.Reporter != nil {
		s.Reporter.Report(sum)
	}
}

// MarshalJSON writes the summary, the parked records' OldestParked as
// oldestParkedMs.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	return json.Marshal(struct {
		plain
		Parked parkedJSON `json:"parked"`
	}{plain(s), parkedJSON{s.Parked, s.Parked.OldestParked.Milliseconds()}})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	var v struct {
		plain
		Parked parkedJSON `json:"parked"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Summary(v.plain)
	s.Parked = v.Parked.Summary
	s.Parked.OldestParked = time.Duration(v.Parked.OldestParkedMs) * time.Millisecond
	return nil
}

type parkedJSON struct {
	parked.Summary
	OldestParkedMs int64 `json:"oldestParkedMs"`
}
