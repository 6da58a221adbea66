package awslambda

import (
	"log/slog"
	"time"
)

// A StreamOption configures Stream and Projector.
type StreamOption interface{ stream(*streamSettings) }

// A SweepOption configures Sweep.
type SweepOption interface{ sweep(*sweepSettings) }

// An Option configures every handler of this package.
type Option interface {
	StreamOption
	SweepOption
}

type streamSettings struct {
	margin      time.Duration
	logger      *slog.Logger
	concurrency int
	types       []string
	park        Handler
}

type sweepSettings struct {
	margin time.Duration
	logger *slog.Logger
	clock  func() time.Time
	report func(Summary)
}

type streamOption func(*streamSettings)

func (f streamOption) stream(s *streamSettings) { f(s) }

type sweepOption func(*sweepSettings)

func (f sweepOption) sweep(s *sweepSettings) { f(s) }

type bothOption struct {
	streamOption
	sweepOption
}

// Margin is how long before the invocation's deadline a handler stops starting
// work: DefaultStreamMargin and DefaultSweepMargin if not given, or zero or less.
func Margin(d time.Duration) Option {
	return bothOption{
		func(s *streamSettings) { s.margin = d },
		func(s *sweepSettings) { s.margin = d },
	}
}

// Logger is where a handler logs (one line per failure and one summary per
// invocation, never a record's data); slog.Default() if not given, or nil.
func Logger(l *slog.Logger) Option {
	return bothOption{
		func(s *streamSettings) { s.logger = l },
		func(s *sweepSettings) { s.logger = l },
	}
}

// Concurrency is how many event streams' records a batch handles at once:
// DefaultConcurrency if not given, or zero or less; at most MaxConcurrency. One
// handles a batch's records one at a time.
func Concurrency(n int) StreamOption {
	return streamOption(func(s *streamSettings) { s.concurrency = n })
}

// Types is the consumer's event filter: the record types its handler is given.
// Records of other types are skipped, as records the decoder does not take are.
// Not given, or none: every record the decoder takes. Keep it equal to the event
// source mapping's filter, so that a record the filter lets through by mistake
// changes nothing.
func Types(types ...string) StreamOption {
	return streamOption(func(s *streamSettings) { s.types = append([]string(nil), types...) })
}

// Park keeps a record for delivery again later, durably, so that it need not hold
// up the records after it in its stream: a record whose handler still fails after
// brief retries in place is given to park, and so is every later record of its
// stream in the batch, in order. A record park kept counts as done in the batch's
// answer; one it could not keep (an error, or a panic) fails, as without Park, and
// holds back the rest of its stream. park must be safe for concurrent use and
// idempotent: a record may be given to it twice, when Lambda delivers it again. Without
// Park a failed record is not retried in place: Lambda's delivery again is its
// retry.
func Park(park Handler) StreamOption {
	return streamOption(func(s *streamSettings) { s.park = park })
}

// Clock is the sweep's clock: time.Now if not given, or nil. A trigger's
// scheduled time later than the clock is taken as the clock.
func Clock(now func() time.Time) SweepOption {
	return sweepOption(func(s *sweepSettings) { s.clock = now })
}

// Report is given the summary of every invocation that swept (one row's
// included; not one whose input was refused) once it is logged: a service writes
// its metrics from it.
func Report(fn func(Summary)) SweepOption {
	return sweepOption(func(s *sweepSettings) { s.report = fn })
}
