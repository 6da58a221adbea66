package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines"
)

// maxDescription is the longest description Scheduler takes.
const maxDescription = 512

// arm makes the schedule of row, of kind k, at its due time, or moves the one
// there to it, unless the row is due by then: the sweep finds it.
func (p *Projection) arm(ctx context.Context, k deadlines.Kind, row deadlines.Row) error {
	key := k.Key(row.Subject)
	if !row.Due.Truncate(time.Second).After(p.cfg.Now()) {
		return nil
	}
	input, err := json.Marshal(deadlines.Trigger{Kind: k.Name, Key: key})
	if err != nil {
		return fmt.Errorf("schedules: schedule of %s: %w", key, err)
	}
	s := schedule{
		name: aws.String(Name(key)), group: aws.String(p.cfg.Group), expression: aws.String(AtExpression(row.Due)),
		description: aws.String(describe(k.Name, key)), target: p.target(string(input)),
	}
	// Made, or found and moved, or found and gone (it fired and deleted itself)
	// and made again: a schedule that fired meanwhile was for an earlier due time.
	for range 2 {
		_, err = p.cfg.Client.CreateSchedule(ctx, s.create())
		var exists *types.ConflictException
		if !errors.As(err, &exists) {
			break
		}
		_, err = p.cfg.Client.UpdateSchedule(ctx, s.update())
		var gone *types.ResourceNotFoundException
		if !errors.As(err, &gone) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("schedules: schedule of %s at %s: %w", key, row.Due.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// disarm deletes the schedule of the row at key; one already gone is fine.
func (p *Projection) disarm(ctx context.Context, key string) error {
	_, err := p.cfg.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{
		Name: aws.String(Name(key)), GroupName: aws.String(p.cfg.Group),
	})
	var gone *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("schedules: deleting the schedule of %s: %w", key, err)
	}
	return nil
}

// target is the sweep function, invoked with input.
func (p *Projection) target(input string) *types.Target {
	t := &types.Target{
		Arn:     aws.String(p.cfg.TargetARN),
		RoleArn: aws.String(p.cfg.RoleARN),
		Input:   aws.String(input),
		RetryPolicy: &types.RetryPolicy{
			MaximumRetryAttempts:     aws.Int32(RetryAttempts),
			MaximumEventAgeInSeconds: aws.Int32(int32(MaxEventAge / time.Second)),
		},
	}
	if p.cfg.DeadLetterARN != "" {
		t.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(p.cfg.DeadLetterARN)}
	}
	return t
}

func describe(kind, key string) string {
	d := "Deadline of " + kind + " " + key
	if len(d) > maxDescription {
		d = d[:maxDescription]
	}
	return d
}

// schedule is a one-time schedule, made or moved alike: in UTC, with no flexible
// window, deleted once it has fired.
type schedule struct {
	name, group, expression, description *string
	target                               *types.Target
}

func (s schedule) create() *scheduler.CreateScheduleInput {
	return &scheduler.CreateScheduleInput{
		Name: s.name, GroupName: s.group, ScheduleExpression: s.expression, Description: s.description, Target: s.target,
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      types.ActionAfterCompletionDelete,
		State:                      types.ScheduleStateEnabled,
	}
}

func (s schedule) update() *scheduler.UpdateScheduleInput {
	c := s.create()
	return &scheduler.UpdateScheduleInput{
		Name: c.Name, GroupName: c.GroupName, ScheduleExpression: c.ScheduleExpression, Description: c.Description, Target: c.Target,
		ScheduleExpressionTimezone: c.ScheduleExpressionTimezone, FlexibleTimeWindow: c.FlexibleTimeWindow,
		ActionAfterCompletion: c.ActionAfterCompletion, State: c.State,
	}
}
