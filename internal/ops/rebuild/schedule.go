package rebuild

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
)

// Scheduler is the part of the EventBridge Scheduler client a Schedule uses.
// *scheduler.Client is one.
type Scheduler interface {
	GetSchedule(ctx context.Context, in *scheduler.GetScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
}

var _ Scheduler = (*scheduler.Client)(nil)

func get(ctx context.Context, client Scheduler, group, name string) (*scheduler.GetScheduleOutput, error) {
	out, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: optional(group)})
	if err != nil {
		return nil, fmt.Errorf("rebuild: get schedule %s: %w", qualified(group, name), err)
	}
	return out, nil
}

// put writes s back with the given state and every other field as it was read.
func put(ctx context.Context, client Scheduler, group, name string, s *scheduler.GetScheduleOutput, state types.ScheduleState) error {
	groupName := s.GroupName
	if groupName == nil {
		groupName = optional(group)
	}
	_, err := client.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
		Name:                       aws.String(name),
		GroupName:                  groupName,
		ScheduleExpression:         s.ScheduleExpression,
		FlexibleTimeWindow:         s.FlexibleTimeWindow,
		Target:                     s.Target,
		ActionAfterCompletion:      s.ActionAfterCompletion,
		Description:                s.Description,
		EndDate:                    s.EndDate,
		KmsKeyArn:                  s.KmsKeyArn,
		ScheduleExpressionTimezone: s.ScheduleExpressionTimezone,
		StartDate:                  s.StartDate,
		State:                      state,
	})
	if err != nil {
		return fmt.Errorf("rebuild: set schedule %s %s: %w", qualified(group, name), state, err)
	}
	return nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

func qualified(group, name string) string {
	if group == "" {
		group = "default"
	}
	return group + "/" + name
}

// Disabled reports whether the schedule is disabled.
func Disabled(ctx context.Context, client Scheduler, group, name string) (bool, error) {
	s, err := get(ctx, client, group, name)
	if err != nil {
		return false, err
	}
	return s.State == types.ScheduleStateDisabled, nil
}

// Enable enables the schedule, keeping every other field as it is.
func Enable(ctx context.Context, client Scheduler, group, name string) error {
	s, err := get(ctx, client, group, name)
	if err != nil {
		return err
	}
	return put(ctx, client, group, name, s, types.ScheduleStateEnabled)
}

// Switch turns the sweep's trigger off and on: its schedule (Schedule) or its rule
// (Rule). A Lock pauses and resumes the sweep through it.
type Switch interface {
	// Disabled reports whether the trigger is disabled.
	Disabled(ctx context.Context) (bool, error)
	// Disable disables it, changing nothing else; one already disabled is left so.
	Disable(ctx context.Context) error
	// Enable enables it, changing nothing else.
	Enable(ctx context.Context) error
}

// Schedule is the Switch of the EventBridge schedule name in group (the default
// group when group is empty).
//
// UpdateSchedule replaces a schedule as a whole, resetting every field it is not
// given, so Disable and Enable read the schedule afresh and write it back with every
// field they read and only its state changed: a change made to it meanwhile (a
// deployment, say) is kept.
func Schedule(client Scheduler, group, name string) Switch {
	return schedule{client: client, group: group, name: name}
}

type schedule struct {
	client      Scheduler
	group, name string
}

func (s schedule) Disabled(ctx context.Context) (bool, error) {
	return Disabled(ctx, s.client, s.group, s.name)
}

func (s schedule) Disable(ctx context.Context) error {
	now, err := get(ctx, s.client, s.group, s.name)
	if err != nil || now.State == types.ScheduleStateDisabled {
		return err
	}
	return put(ctx, s.client, s.group, s.name, now, types.ScheduleStateDisabled)
}

func (s schedule) Enable(ctx context.Context) error { return Enable(ctx, s.client, s.group, s.name) }
