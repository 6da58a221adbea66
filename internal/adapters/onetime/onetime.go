// Package onetime keeps one EventBridge Scheduler one-time schedule per outstanding
// row of a deadline kind, for precise deadlines: the projector creates a row's
// schedule when the row opens (a payment is prepared) and deletes it when the row
// settles; the schedule invokes the sweep function for that one row at its due
// time. It is its own package so
// that only the projector links the Scheduler client.
package onetime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// SchedulerAPI is the part of the EventBridge Scheduler client Timers uses.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

var _ SchedulerAPI = (*scheduler.Client)(nil)

// Retry policy of a row's one-time schedule: Scheduler retries a failed or
// throttled invocation of the sweep for up to an hour, then parks the event in the
// dead-letter queue. The periodic sweep catches the row in any case.
const (
	TimerRetryAttempts = 10
	TimerMaxEventAge   = time.Hour
)

// Timers keeps one EventBridge Scheduler one-time schedule per outstanding row of
// the kinds it is given (precise deadlines), from the same records as the
// projection: a record that opens a row creates the row's schedule, at its due
// time, in Group; a settling record deletes it. The schedule invokes TargetARN (the
// sweep function) with a deadline.Trigger naming the row, as RoleARN, parking
// undeliverable invocations in DeadLetterARN, and deletes itself once it has fired.
// Names are deterministic per row (its key), so creating or deleting twice (stream
// redelivery) is harmless. Safe for concurrent use.
type Timers struct {
	Client                                   SchedulerAPI
	Group, TargetARN, RoleARN, DeadLetterARN string
	// Kinds are the kinds whose rows get a schedule (but those worked off by hand),
	// and say when a row falls due: the sweep's.
	Kinds deadline.Kinds
	// Now is the clock (time.Now if nil): a row already past its due time gets no
	// schedule, since the next sweep finds it anyway.
	Now func() time.Time
}

// Apply creates or deletes the schedule of the rows a record of the Events table
// opens or settles; other records are ignored.
func (t *Timers) Apply(ctx context.Context, r eventstore.Record) error {
	changes, err := t.Kinds.Changes(r)
	if err != nil {
		return err
	}
	for _, c := range changes {
		switch {
		case !c.Kind.Swept():
			continue // no command to send on time
		case c.Settled:
			err = t.disarm(ctx, c.Kind.Key(c.Subject))
		default:
			err = t.arm(ctx, c.Kind, c.Subject, r.RecordedAt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *Timers) arm(ctx context.Context, k deadline.Kind, subject string, since time.Time) error {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	due, key := k.DueAt(since), k.Key(subject)
	if !due.After(now()) {
		return nil // already due (a replay, or a projector far behind): the sweep has it
	}
	input, err := json.Marshal(deadline.Trigger{Kind: k.Name, Key: key})
	if err != nil {
		return fmt.Errorf("onetime: schedule for %s: %w", key, err)
	}
	_, err = t.Client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(ScheduleName(key)),
		GroupName:                  aws.String(t.Group),
		ScheduleExpression:         aws.String(AtExpression(due)),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      types.ActionAfterCompletionDelete,
		State:                      types.ScheduleStateEnabled,
		Description:                aws.String("Deadline of " + k.Name + " " + key),
		Target: &types.Target{
			Arn:     aws.String(t.TargetARN),
			RoleArn: aws.String(t.RoleARN),
			Input:   aws.String(string(input)),
			RetryPolicy: &types.RetryPolicy{
				MaximumRetryAttempts:     aws.Int32(TimerRetryAttempts),
				MaximumEventAgeInSeconds: aws.Int32(int32(TimerMaxEventAge / time.Second)),
			},
			DeadLetterConfig: &types.DeadLetterConfig{Arn: aws.String(t.DeadLetterARN)},
		},
	})
	var exists *types.ConflictException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("onetime: create schedule for %s: %w", key, err)
	}
	return nil
}

func (t *Timers) disarm(ctx context.Context, key string) error {
	_, err := t.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{
		Name: aws.String(ScheduleName(key)), GroupName: aws.String(t.Group),
	})
	var gone *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("onetime: delete schedule of %s: %w", key, err)
	}
	return nil
}
