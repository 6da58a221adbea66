package awslambda

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

var (
	// errNoStream is a decoded record that names no stream: its order cannot be kept.
	errNoStream = errors.New("awslambda: the decoder returned an event of no stream")
	// errOverran is the cause of a handler's context ending before the invocation's.
	errOverran = errors.New("awslambda: the record's handler ran into the invocation's deadline margin")
)

// startable reports why a record must not be started now, if it must not: ctx is
// done, or its deadline is less than margin away.
func startable(ctx context.Context, margin time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left < margin {
			return fmt.Errorf("%s left before the deadline, less than the %s margin", left.Round(time.Millisecond), margin)
		}
	}
	return nil
}

// call runs the batch's handler, turning a panic into an error so that one record
// cannot crash the invocation and take the rest of the batch's progress with it.
// The handler's context ends half the margin before ctx's deadline.
func (b *batch) call(ctx context.Context, r deadlines.Record) (err error) {
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline.Add(-b.margin/2), errOverran)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w\n%s", panicked("handler", p), debug.Stack())
		}
	}()
	return b.h(ctx, r)
}

// handle calls the handler for r, and, with Park set, again after each of
// retryDelays while it fails, the first try began less than retryWithin ago, and
// the record could still be started. It returns the last failure.
func (b *batch) handle(ctx context.Context, r deadlines.Record) error {
	began := time.Now()
	err := b.call(ctx, r)
	if b.park == nil {
		return err
	}
	for _, delay := range retryDelays {
		if err == nil || time.Since(began)+delay >= retryWithin || startable(ctx, b.margin) != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if startable(ctx, b.margin) != nil {
			return err
		}
		err = b.call(ctx, r)
	}
	return err
}

// keep gives r to Park, turning a panic into an error.
func (b *batch) keep(ctx context.Context, r deadlines.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicked("park", p)
		}
	}()
	return b.park(ctx, r)
}

func panicked(what string, p any) error {
	return fmt.Errorf("awslambda: %s panicked: %v", what, p)
}
