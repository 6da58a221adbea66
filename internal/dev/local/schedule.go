package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines/awslambda"
)

// SweepSchedule is the name of the sweep's schedule in the local emulator, in the
// default group, as template.yaml names it for the stage "local".
const SweepSchedule = "bikerental-local-sweep"

// CreateSweepSchedule creates the sweep's EventBridge Scheduler schedule in the
// emulator as the template declares it (the emulator stores schedules but never fires
// them: Schedule does). An existing one is left as it is.
func CreateSweepSchedule(ctx context.Context, client *scheduler.Client) error {
	_, err := client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:               aws.String(SweepSchedule),
		ScheduleExpression: aws.String("rate(1 minute)"),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		State:              types.ScheduleStateEnabled,
		Target: &types.Target{
			Arn:         aws.String("arn:aws:lambda:us-east-1:000000000000:function:bikerental-local-sweep"),
			RoleArn:     aws.String("arn:aws:iam::000000000000:role/bikerental-local-sweep-scheduler"),
			Input:       aws.String(`{"scheduledTime": "<aws.scheduler.scheduled-time>"}`),
			RetryPolicy: &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(2), MaximumEventAgeInSeconds: aws.Int32(300)},
		},
	})
	var conflict *types.ConflictException
	if err != nil && !errors.As(err, &conflict) {
		return fmt.Errorf("local: create the sweep's schedule: %w", err)
	}
	return nil
}

// Paused reports whether the sweep's schedule is disabled (as rentalctl
// rebuild leaves it while it rebuilds).
func Paused(ctx context.Context, client *scheduler.Client) (bool, error) {
	out, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(SweepSchedule)})
	if err != nil {
		return false, err
	}
	return out.State == types.ScheduleStateDisabled, nil
}

// Schedule plays EventBridge Scheduler's rate schedule for the sweep: every interval
// it invokes sweep with the scheduled time of that run, as the real schedule's input
// carries it, until ctx ends, skipping runs while paused reports true. A sweep's error
// is its own to log; the next run goes on.
func Schedule(ctx context.Context, interval time.Duration, paused func(context.Context) bool, sweep func(context.Context, time.Time) (awslambda.Summary, error)) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case scheduled := <-ticker.C:
			if paused != nil && paused(ctx) {
				continue
			}
			run, cancel := context.WithTimeout(ctx, max(interval, 30*time.Second)) // as a Lambda timeout would
			sweep(run, scheduled)
			cancel()
		}
	}
}
