// Package projectorfn builds the projector function: the Deadlines table's
// projection and, with precise deadlines, the rows' one-time schedules, so that
// only the projector links the EventBridge Scheduler client.
package projectorfn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/schedules"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

// timerSettings are the settings of the rows' one-time schedules; precise is false
// in sweep mode.
type timerSettings struct {
	precise                      bool
	group, target, role, deadDLQ string
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
// group's name), DEADLINE_TARGET_ARN, DEADLINE_ROLE_ARN and DEADLINE_DLQ_ARN
// (ARNs); the four DEADLINE_* ones are required in precise mode.
func timers(getenv wiring.Getenv) (timerSettings, error) {
	mode, err := wiring.DeadlineMode(getenv)
	if err != nil {
		return timerSettings{}, err
	}
	set := timerSettings{precise: mode == wiring.ModePrecise}
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
				missing = wiring.MissingSetting(s.name, s.want+", needed with "+wiring.EnvDeadlineMode+"="+wiring.ModePrecise)
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
// projection's (wiring.CheckProjection), STREAM_CONCURRENCY (streamfn.Batch) and
// those of the one-time schedules (see Projection).
func Check(getenv wiring.Getenv) error {
	if err := wiring.CheckProjection(getenv); err != nil {
		return err
	}
	if _, err := streamfn.Batch(getenv, eventfilter.Projector, nil); err != nil {
		return err
	}
	_, err := timers(getenv)
	return err
}

// Projection returns what the projector applies each record to: the Deadlines
// table over the service's kinds (wiring.DeadlineProjection) and, when
// DEADLINE_MODE is "precise", the one-time schedules of its rows of
// wiring.PreciseKinds, configured by DEADLINE_SCHEDULE_GROUP,
// DEADLINE_TARGET_ARN, DEADLINE_ROLE_ARN and DEADLINE_DLQ_ARN. It checks every
// one of those variables in either mode, so that a deployment can switch modes by
// changing DEADLINE_MODE alone; they are required in precise mode. A Scheduler
// that still refuses after the SDK's retries is logged, never holds the projection
// back: the sweep is the safety net.
func Projection(cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger) (deadlines.Projection, *deadlinetable.Table, error) {
	set, err := timers(getenv)
	if err != nil {
		return nil, nil, err
	}
	table, err := wiring.DeadlineProjection(cfg, getenv)
	if err == nil && table == nil {
		err = wiring.ErrNoDeadlinesTable
	}
	if err != nil || !set.precise {
		return table, table, err
	}
	kinds, err := wiring.DeadlineKinds(getenv, deadlinekinds.Receivers{})
	if err != nil {
		return nil, nil, err
	}
	precise, err := schedules.New(table, schedules.Config{
		Client: scheduler.NewFromConfig(cfg), Group: set.group, TargetARN: set.target, RoleARN: set.role,
		DeadLetterARN: set.deadDLQ, Kinds: kinds, Precise: wiring.PreciseKinds, Logger: logger,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wiring: %w", err)
	}
	return precise, table, nil
}

// ProjectorFunction builds the projector's stream handler, once Check passed: a
// record that cannot be applied yet is parked in its parking stream of the Events
// table (package parked).
func ProjectorFunction(_ context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, _ io.Writer) (any, error) {
	if err := Check(getenv); err != nil {
		return nil, err
	}
	projection, table, err := Projection(cfg, getenv, logger)
	if err != nil {
		return nil, err
	}
	store, err := wiring.EventStore(cfg, getenv)
	if err != nil {
		return nil, err
	}
	batch, err := streamfn.Batch(getenv, eventfilter.Projector, logger)
	if err != nil {
		return nil, err
	}
	project := awslambda.Projector(projection, dynamo.StreamRecord, append(batch, awslambda.Park(streamfn.Park(store, eventfilter.Projector)))...)
	// Rows written with another shard count than the table's would land where the
	// sweep does not look: until the table's count is this projector's, every batch
	// fails, saying how to reshard, and is retried. The check is made once per
	// execution environment, on its first batch, not at init.
	var mu sync.Mutex
	checked := false
	return wiring.StreamHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		mu.Lock()
		if !checked {
			if err := table.CheckShards(ctx); err != nil {
				mu.Unlock()
				logger.LogAttrs(ctx, slog.LevelError, "projector refuses the batch", slog.String("error", err.Error()))
				return events.DynamoDBEventResponse{}, err
			}
			checked = true
		}
		mu.Unlock()
		return project(ctx, ev)
	}), nil
}
