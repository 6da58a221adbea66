package eventstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Decider decides what to append to a stream given everything it holds so far. It
// must be a pure function of history: on a concurrency conflict Execute calls it again
// with a longer history. Returning no events means there is nothing to do.
type Decider func(history []Record) ([]Event, error)

// RetryPolicy bounds how Execute retries after concurrency conflicts.
type RetryPolicy struct {
	// MaxAttempts is how many times to load, decide and append before giving up.
	MaxAttempts int
	// BaseDelay and MaxDelay bound the jittered exponential backoff between attempts.
	BaseDelay, MaxDelay time.Duration
}

// DefaultRetryPolicy suits a command handled inside an API request: a few quick
// retries, well under a second in all.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 6, BaseDelay: 5 * time.Millisecond, MaxDelay: 160 * time.Millisecond}

// ErrRetriesExhausted reports that Execute met a concurrency conflict on every attempt
// and gave up. Errors matching it also match ErrConcurrency.
var ErrRetriesExhausted = errors.New("eventstore: gave up after repeated concurrency conflicts")

// Execute runs one command against streamID as load, decide, append. When the append
// meets a concurrency conflict it reads what was appended meanwhile and decides again,
// up to policy.MaxAttempts times with jittered exponential backoff, then returns an
// error matching both ErrRetriesExhausted and ErrConcurrency. An error from decide is
// returned as it is and nothing is appended. Execute returns the full history as read
// before the successful append and the records it appended (none if decide returned
// no events).
func Execute(ctx context.Context, store Store, streamID string, decide Decider, policy RetryPolicy) (history, appended []Record, err error) {
	history, err = store.Read(ctx, streamID, 0)
	if err != nil {
		return nil, nil, err
	}
	return ExecuteFrom(ctx, store, streamID, history, decide, policy)
}

// ExecuteFrom is Execute for a caller that has just read the stream's whole history
// itself: it decides on that history first instead of reading it again, and after a
// conflict reads what was appended since, as Execute does.
func ExecuteFrom(ctx context.Context, store Store, streamID string, history []Record, decide Decider, policy RetryPolicy) (_, appended []Record, err error) {
	if policy.MaxAttempts < 1 {
		policy.MaxAttempts = 1
	}
	for attempt := 1; ; attempt++ {
		events, err := decide(history)
		if err != nil {
			return history, nil, err
		}
		if len(events) == 0 {
			return history, nil, nil
		}
		version := int64(0)
		if n := len(history); n > 0 {
			version = history[n-1].Version
		}
		appended, err = store.Append(ctx, streamID, version, events...)
		if err == nil {
			return history, appended, nil
		}
		if !errors.Is(err, ErrConcurrency) {
			return history, nil, err
		}
		if attempt >= policy.MaxAttempts {
			return history, nil, fmt.Errorf("%w (%d attempts on stream %q): %w", ErrRetriesExhausted, attempt, streamID, err)
		}
		if err := sleep(ctx, backoff(policy, attempt)); err != nil {
			return history, nil, err
		}
		more, err := store.Read(ctx, streamID, version+1)
		if err != nil {
			return history, nil, err
		}
		history = append(history, more...)
	}
}

// StreamsDecider decides one attempt of a command over several streams: it reads
// what it decides on afresh, and returns what to append to each stream, at the
// version it read there. Returning no appends means there is nothing to append.
// ExecuteStreams calls it again after a conflict, so anything it does besides
// reading must be safe to do again, or done once by the decider itself.
type StreamsDecider func(ctx context.Context) ([]StreamAppend, error)

// ExecuteStreams is Execute for a command whose decision spans several streams:
// read, decide, and append every stream's part in one AppendStreams, all or
// nothing. When the append meets a concurrency conflict it calls decide again,
// which reads again, up to policy.MaxAttempts times with the same backoff as
// Execute, then returns an error matching both ErrRetriesExhausted and
// ErrConcurrency. An error from decide is returned as it is and nothing is
// appended. It returns the records appended (none if decide returned no appends).
func ExecuteStreams(ctx context.Context, store MultiStreamStore, decide StreamsDecider, policy RetryPolicy) ([]Record, error) {
	if policy.MaxAttempts < 1 {
		policy.MaxAttempts = 1
	}
	for attempt := 1; ; attempt++ {
		parts, err := decide(ctx)
		if err != nil || len(parts) == 0 {
			return nil, err
		}
		appended, err := store.AppendStreams(ctx, parts...)
		if err == nil {
			return appended, nil
		}
		if !errors.Is(err, ErrConcurrency) {
			return nil, err
		}
		if attempt >= policy.MaxAttempts {
			streams := make([]string, len(parts))
			for i, p := range parts {
				streams[i] = p.StreamID
			}
			return nil, fmt.Errorf("%w (%d attempts on streams %q): %w", ErrRetriesExhausted, attempt, streams, err)
		}
		if err := sleep(ctx, backoff(policy, attempt)); err != nil {
			return nil, err
		}
	}
}

// backoff returns a delay drawn uniformly from [0, min(MaxDelay, BaseDelay*2^(attempt-1))]
// ("full jitter"), which spreads out writers that collided on the same version.
func backoff(p RetryPolicy, attempt int) time.Duration {
	ceiling := p.BaseDelay << min(attempt-1, 20)
	if p.MaxDelay > 0 && (ceiling > p.MaxDelay || ceiling <= 0) {
		ceiling = p.MaxDelay
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
