package eventstore

import "context"

// Backoff waits before attempt+1 of a command that met a concurrency conflict on
// attempt, as Execute does between its attempts, for callers that run their own
// load, decide and append over several streams. It returns ctx's error if ctx ends
// first.
func (p RetryPolicy) Backoff(ctx context.Context, attempt int) error {
	return sleep(ctx, backoff(p, attempt))
}
