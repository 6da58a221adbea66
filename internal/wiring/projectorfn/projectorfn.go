// Package projectorfn builds the projector function: the to-do table projection
// and, with precise deadlines, the payments' one-time schedules, so that only the
// projector links the EventBridge Scheduler client.
package projectorfn

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/adapters/onetime"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
	"github.com/bikerental/bikerental/internal/wiring"
)

// timerSettings are the settings of the rows' one-time schedules; precise is false
// in sweep mode.
type timerSettings struct {
	precise                      bool
	group, target, role, deadDLQ string
	kinds                        deadline.Kinds
}

// What the schedule group and the ARNs take.
const (
	groupWant = "a schedule group's name: 1 to 64 letters, digits, '_', '-' or '.' characters"
	arnWant   = "an ARN (arn:partition:service:region:account:resource)"
)

// groupName reports whether v is what EventBridge Scheduler takes as a schedule
// group's name: 1 to 64 of 0-9, A-Z, a-z, _, . and -.
func groupName(v string) bool { return wiring.Name(v, 1, 64, "_.-") }

// timers reads DEADLINE_MODE and, in either mode, DEADLINE_SCHEDULE_GROUP (a
// group's name), DEADLINE_TARGET_ARN, DEADLINE_ROLE_ARN, DEADLINE_DLQ_ARN (ARNs),
// PAYMENT_TIMEOUT, STUCK_GRACE and RENTAL_PERIOD; the four DEADLINE_* ones are
// required in precise mode.
func timers(getenv wiring.Getenv) (timerSettings, error) {
	mode, err := deadline.ParseMode(getenv(wiring.EnvDeadlineMode))
	if err != nil {
		return timerSettings{}, wiring.BadSetting(wiring.EnvDeadlineMode, getenv(wiring.EnvDeadlineMode), deadline.ModeSweep+" or "+deadline.ModePrecise)
	}
	kinds, err := wiring.PreciseKinds(getenv)
	if err != nil {
		return timerSettings{}, err
	}
	set := timerSettings{precise: mode == deadline.ModePrecise, kinds: kinds}
	var missing error
	for _, s := range []struct {
		name, want string
		into       *string
	}{
		{wiring.EnvDeadlineGroup, groupWant, &set.group}, {wiring.EnvDeadlineTarget, arnWant, &set.target},
		{wiring.EnvDeadlineRole, arnWant, &set.role}, {wiring.EnvDeadlineDLQ, arnWant, &set.deadDLQ},
	} {
		v := getenv(s.name)
		switch {
		case v == "":
			if missing == nil {
				missing = wiring.MissingSetting(s.name, s.want+", needed with "+wiring.EnvDeadlineMode+"="+deadline.ModePrecise)
			}
		case s.name == wiring.EnvDeadlineGroup && !groupName(v):
			return timerSettings{}, wiring.BadSetting(s.name, v, s.want)
		case s.name != wiring.EnvDeadlineGroup && !validARN(v):
			return timerSettings{}, wiring.BadSetting(s.name, v, s.want)
		}
		*s.into = v
	}
	if set.precise && missing != nil {
		return timerSettings{}, missing
	}
	return set, nil
}

// validARN reports whether s has an ARN's six parts, the first "arn".
func validARN(s string) bool {
	parts := strings.SplitN(s, ":", 6)
	return len(parts) == 6 && parts[0] == "arn" && parts[1] != "" && parts[2] != "" && parts[5] != "" && len(s) <= 2048
}

// Check validates, touching nothing, every setting ProjectorFunction reads: the
// projection's (wiring.CheckProjection), STREAM_CONCURRENCY (wiring.StreamBatch) and
// those of the one-time schedules (see Timers).
func Check(getenv wiring.Getenv) error {
	if err := wiring.CheckProjection(getenv); err != nil {
		return err
	}
	if _, err := wiring.StreamBatch(getenv, nil); err != nil {
		return err
	}
	_, err := timers(getenv)
	return err
}

// Timers returns the payments' one-time schedules when DEADLINE_MODE is "precise",
// configured by DEADLINE_SCHEDULE_GROUP, DEADLINE_TARGET_ARN, DEADLINE_ROLE_ARN,
// DEADLINE_DLQ_ARN and PAYMENT_TIMEOUT, or nil in sweep mode. It checks every one of
// those variables in either mode, so that a deployment can switch modes by changing
// DEADLINE_MODE alone; they are required in precise mode.
func Timers(cfg aws.Config, getenv wiring.Getenv) (*onetime.Timers, error) {
	set, err := timers(getenv)
	if err != nil || !set.precise {
		return nil, err
	}
	return &onetime.Timers{
		Client:        scheduler.NewFromConfig(cfg),
		Group:         set.group,
		TargetARN:     set.target,
		RoleARN:       set.role,
		DeadLetterARN: set.deadDLQ,
		Kinds:         set.kinds,
	}, nil
}

// ProjectorFunction builds the projector's stream handler, once Check passed.
func ProjectorFunction(_ context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, _ io.Writer) (any, error) {
	if err := Check(getenv); err != nil {
		return nil, err
	}
	projection, err := wiring.DeadlineProjection(cfg, getenv)
	if err == nil && projection == nil {
		err = wiring.ErrNoDeadlinesTable
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
	batch.Park = wiring.Park(projection, eventfilter.Projector)
	apply := projection.Apply
	if timers != nil {
		// The row first, and it alone decides whether the record is handled: the
		// schedule is an optimisation the sweep backs up, so a Scheduler that still
		// refuses after the SDK's retries must not hold the projection back.
		// A row gets a schedule only when the projection holds it as outstanding:
		// a PaymentPrepared that found a settled payment arms nothing.
		apply = func(ctx context.Context, r eventstore.Record) error {
			outstanding, err := projection.Project(ctx, r)
			if err != nil {
				return err
			}
			if changes, _ := timers.Kinds.Changes(r); !outstanding && slices.ContainsFunc(changes, func(c deadline.KindChange) bool { return !c.Settled }) {
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
