// Package projectorfn builds the projector function: the PendingPayments projection
// and, with precise deadlines, the payments' one-time schedules, so that only the
// projector links the EventBridge Scheduler client.
package projectorfn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/deadline"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/onetime"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/streambatch"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Timers returns the payments' one-time schedules when DEADLINE_MODE is "precise",
// configured by DEADLINE_SCHEDULE_GROUP, DEADLINE_TARGET_ARN, DEADLINE_ROLE_ARN,
// DEADLINE_DLQ_ARN and PAYMENT_TIMEOUT, or nil in sweep mode. It reads every one of
// those variables in either mode, so that a deployment can switch modes by changing
// DEADLINE_MODE alone.
func Timers(cfg aws.Config, getenv wiring.Getenv) (*onetime.Timers, error) {
	mode, err := deadline.ParseMode(getenv(wiring.EnvDeadlineMode))
	if err != nil {
		return nil, fmt.Errorf("wiring: %s: %w", wiring.EnvDeadlineMode, err)
	}
	policy, err := wiring.DeadlinePolicy(getenv)
	if err != nil {
		return nil, err
	}
	settings := map[string]string{}
	var missing error
	for _, name := range []string{wiring.EnvDeadlineGroup, wiring.EnvDeadlineTarget, wiring.EnvDeadlineRole, wiring.EnvDeadlineDLQ} {
		v, err := wiring.Required(getenv, name)
		if err != nil && missing == nil {
			missing = fmt.Errorf("%w (needed with %s=%s)", err, wiring.EnvDeadlineMode, deadline.ModePrecise)
		}
		settings[name] = v
	}
	if mode != deadline.ModePrecise {
		return nil, nil
	}
	if missing != nil {
		return nil, missing
	}
	return &onetime.Timers{
		Client:        scheduler.NewFromConfig(cfg),
		Group:         settings[wiring.EnvDeadlineGroup],
		TargetARN:     settings[wiring.EnvDeadlineTarget],
		RoleARN:       settings[wiring.EnvDeadlineRole],
		DeadLetterARN: settings[wiring.EnvDeadlineDLQ],
		Policy:        policy,
	}, nil
}

// ProjectorFunction builds the projector's stream handler.
func ProjectorFunction(_ context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, _ io.Writer) (any, error) {
	projection, err := wiring.Projection(cfg, getenv)
	if err == nil && projection == nil {
		err = wiring.ErrNoPendingTable
	}
	if err != nil {
		return nil, err
	}
	timers, err := Timers(cfg, getenv)
	if err != nil {
		return nil, err
	}
	batch, err := wiring.StreamBatch(getenv, logger)
	if err != nil {
		return nil, err
	}
	apply := projection.Apply
	if timers != nil {
		// The row first, and it alone decides whether the record is handled: the
		// schedule is an optimisation the sweep backs up, so a Scheduler that still
		// refuses after the SDK's retries must not hold the projection back.
		// A payment gets a schedule only when the projection holds it as
		// outstanding: a PaymentPrepared that found a settled payment arms nothing.
		apply = func(ctx context.Context, r eventstore.Record) error {
			outstanding, err := projection.Project(ctx, r)
			if err != nil {
				return err
			}
			if r.Type == (payment.PaymentPrepared{}).EventType() && !outstanding {
				return nil
			}
			if err := timers.Apply(ctx, r); err != nil {
				logger.LogAttrs(ctx, slog.LevelError, "precise deadline not scheduled; the sweep will call the payment off",
					slog.String("streamId", r.StreamID), slog.Int64("version", r.Version), slog.String("error", err.Error()))
			}
			return nil
		}
	}
	// Rows written with another shard count than the table's would land where the
	// sweep does not look: until the table's count is this projector's, every batch
	// fails, saying how to reshard, and is retried. The check is made once per
	// execution environment, on its first batch, not at init.
	var mu sync.Mutex
	checked := false
	return wiring.StreamHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		if !checked {
			if err := projection.CheckShards(ctx); err != nil {
				mu.Unlock()
				logger.LogAttrs(ctx, slog.LevelError, "projector refuses the batch", slog.String("error", err.Error()))
				return events.DynamoDBEventResponse{}, err
			}
			checked = true
		}
		mu.Unlock()
		return streambatch.HandleBatch(ctx, ev, apply, batch), nil
	}), nil
}
