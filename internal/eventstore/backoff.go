package eventstore

import "context"

// Backoff waits before attempt+1 of something that failed on attempt and may pass
// if tried again, with the jittered exponential backoff Execute uses between its
// attempts. It returns ctx's error if ctx ends first.
func (p RetryPolicy) Backoff(ctx context.Context, attempt int) error {
	return sleep(ctx, backoff(p, attempt))
}
