package local

import (
	"context"
	"time"

	"github.com/bikerental/bikerental/internal/deadline"
)

// Schedule plays EventBridge Scheduler's rate schedule for the sweep: every interval
// it invokes sweep with the scheduled time of that run, as the real schedule's input
// carries it, until ctx ends. A sweep's error is its own to log; the next run goes on.
func Schedule(ctx context.Context, interval time.Duration, sweep func(context.Context, time.Time) (deadline.Summary, error)) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case scheduled := <-ticker.C:
			run, cancel := context.WithTimeout(ctx, max(interval, 30*time.Second)) // as a Lambda timeout would
			sweep(run, scheduled)
			cancel()
		}
	}
}
