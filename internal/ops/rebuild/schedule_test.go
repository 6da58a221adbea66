package rebuild_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
)

const (
	sweepARN = "arn:aws:lambda:us-east-1:000000000000:function:sweep"
	roleARN  = "arn:aws:iam::000000000000:role/sweep-scheduler"
	input    = `{"scheduledTime":"<aws.scheduler.scheduled-time>"}`
)

// countingScheduler counts the updates it passes on.
type countingScheduler struct {
	rebuild.Scheduler
	updates atomic.Int64
}

func (c *countingScheduler) UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, o ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
	c.updates.Add(1)
	return c.Scheduler.UpdateSchedule(ctx, in, o...)
}

func createSchedule(t *testing.T, client *scheduler.Client, group string, state types.ScheduleState) string {
	t.Helper()
	name := rebuildtest.Name("sweep")
	_, err := client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(name),
		GroupName:                  optional(group),
		ScheduleExpression:         aws.String("rate(1 minute)"),
		ScheduleExpressionTimezone: aws.String("Europe/Amsterdam"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		Target: &types.Target{
			Arn: aws.String(sweepARN), RoleArn: aws.String(roleARN), Input: aws.String(input),
			RetryPolicy: &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(0), MaximumEventAgeInSeconds: aws.Int32(60)},
		},
		Description:           aws.String("the sweep"),
		StartDate:             aws.Time(time.Now().Add(time.Hour).Truncate(time.Second)),
		EndDate:               aws.Time(time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)),
		ActionAfterCompletion: types.ActionAfterCompletionNone,
		State:                 state,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.DeleteSchedule(context.Background(), &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: optional(group)})
	})
	return name
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

func getSchedule(t *testing.T, client *scheduler.Client, group, name string) *scheduler.GetScheduleOutput {
	t.Helper()
	out, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: optional(group)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// settings is what a pause must leave as it was: everything but the state and the
// modification time.
func settings(s *scheduler.GetScheduleOutput) scheduler.GetScheduleOutput {
	c := *s
	c.State, c.LastModificationDate, c.ResultMetadata = "", nil, middleware.Metadata{}
	return c
}

func show(s scheduler.GetScheduleOutput) string {
	b, err := json.Marshal(s)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestScheduleIsDisabledAndEnabledWithNothingElseChanged(t *testing.T) {
	client := scheduler.NewFromConfig(emulatortest.Config(t))
	custom := rebuildtest.Name("rebuild")
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(custom)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.DeleteScheduleGroup(context.Background(), &scheduler.DeleteScheduleGroupInput{Name: aws.String(custom)})
	})
	for _, group := range []string{"", "default", custom} {
		t.Run("group "+group, func(t *testing.T) {
			name := createSchedule(t, client, group, types.ScheduleStateEnabled)
			original := getSchedule(t, client, group, name)

			sweep := rebuild.Schedule(client, group, name)
			if err := sweep.Disable(ctx); err != nil {
				t.Fatal(err)
			}
			if disabled, err := sweep.Disabled(ctx); err != nil || !disabled {
				t.Errorf("Disabled = %v, %v after Disable", disabled, err)
			}
			paused := getSchedule(t, client, group, name)
			if paused.State != types.ScheduleStateDisabled {
				t.Errorf("paused schedule is %s, want DISABLED", paused.State)
			}
			if got, want := settings(paused), settings(original); !reflect.DeepEqual(got, want) {
				t.Errorf("pausing changed more than the state:\n got %s\nwant %s", show(got), show(want))
			}

			if err := sweep.Enable(ctx); err != nil {
				t.Fatal(err)
			}
			resumed := getSchedule(t, client, group, name)
			if resumed.State != types.ScheduleStateEnabled {
				t.Errorf("resumed schedule is %s, want ENABLED", resumed.State)
			}
			if got, want := settings(resumed), settings(original); !reflect.DeepEqual(got, want) {
				t.Errorf("resuming changed more than the state:\n got %s\nwant %s", show(got), show(want))
			}
			if err := sweep.Enable(ctx); err != nil {
				t.Fatalf("second enable: %v", err)
			}
			if s := getSchedule(t, client, group, name); s.State != types.ScheduleStateEnabled {
				t.Errorf("after a second enable the schedule is %s, want ENABLED", s.State)
			}
		})
	}
}

// TestPauseSweepLeavesAScheduleThatWasAlreadyDisabledDisabled: whoever disabled
// the schedule decides when it runs again.
func TestPauseSweepLeavesAScheduleThatWasAlreadyDisabledDisabled(t *testing.T) {
	client := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, client, "", types.ScheduleStateDisabled)
	counting := &countingScheduler{Scheduler: client}
	db := emulatortest.DynamoDB(t)
	l, err := rebuild.Acquire(ctx, db, newTable(t, db), "rebuild-a", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	sweep := rebuild.Schedule(counting, "", name)
	if err := l.PauseSweep(ctx, sweep); err != nil {
		t.Fatal(err)
	}
	if err := l.ResumeSweep(ctx, sweep); err != nil {
		t.Fatal(err)
	}
	if s := getSchedule(t, client, "", name); s.State != types.ScheduleStateDisabled {
		t.Errorf("schedule is %s after pause and resume, want it left DISABLED", s.State)
	}
	if n := counting.updates.Load(); n != 0 {
		t.Errorf("%d updates of a schedule that was already disabled, want none", n)
	}
	if err := l.Release(ctx); err != nil {
		t.Error(err)
	}
}

func TestAMissingScheduleFails(t *testing.T) {
	client := scheduler.NewFromConfig(emulatortest.Config(t))
	sweep := rebuild.Schedule(client, "", rebuildtest.Name("missing"))
	var notFound *types.ResourceNotFoundException
	if err := sweep.Disable(ctx); !errors.As(err, &notFound) {
		t.Errorf("Disable = %v, want a ResourceNotFoundException", err)
	}
	if err := sweep.Enable(ctx); !errors.As(err, &notFound) {
		t.Errorf("Enable = %v, want a ResourceNotFoundException", err)
	}
}

// fakeScheduler serves one schedule from memory, the way EventBridge Scheduler
// does: an update replaces every field.
type fakeScheduler struct {
	schedule scheduler.GetScheduleOutput
	updates  []scheduler.UpdateScheduleInput
}

func (f *fakeScheduler) GetSchedule(_ context.Context, in *scheduler.GetScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error) {
	s := f.schedule
	return &s, nil
}

func (f *fakeScheduler) UpdateSchedule(_ context.Context, in *scheduler.UpdateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
	f.updates = append(f.updates, *in)
	f.schedule = scheduler.GetScheduleOutput{
		Arn: f.schedule.Arn, Name: in.Name, GroupName: in.GroupName,
		ActionAfterCompletion: in.ActionAfterCompletion, Description: in.Description, EndDate: in.EndDate,
		FlexibleTimeWindow: in.FlexibleTimeWindow, KmsKeyArn: in.KmsKeyArn, ScheduleExpression: in.ScheduleExpression,
		ScheduleExpressionTimezone: in.ScheduleExpressionTimezone, StartDate: in.StartDate, State: in.State, Target: in.Target,
	}
	return &scheduler.UpdateScheduleOutput{}, nil
}

// TestScheduleCopiesEveryField covers the fields the emulator does not keep on update
// (it ignores ActionAfterCompletion there), and a change made while paused.
func TestScheduleCopiesEveryField(t *testing.T) {
	start, end := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	original := scheduler.GetScheduleOutput{
		Arn: aws.String("arn:aws:scheduler:us-east-1:000000000000:schedule/ops/sweep"), Name: aws.String("sweep"),
		GroupName: aws.String("ops"), ActionAfterCompletion: types.ActionAfterCompletionNone,
		Description: aws.String("the sweep"), StartDate: &start, EndDate: &end,
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeFlexible, MaximumWindowInMinutes: aws.Int32(5)},
		KmsKeyArn:          aws.String("arn:aws:kms:us-east-1:000000000000:key/k"), ScheduleExpression: aws.String("rate(1 minute)"),
		ScheduleExpressionTimezone: aws.String("Europe/Amsterdam"), State: types.ScheduleStateEnabled,
		Target: &types.Target{Arn: aws.String(sweepARN), RoleArn: aws.String(roleARN), Input: aws.String(input)},
	}
	f := &fakeScheduler{schedule: original}
	sweep := rebuild.Schedule(f, "ops", "sweep")
	if err := sweep.Disable(ctx); err != nil {
		t.Fatal(err)
	}
	want := original
	want.State = types.ScheduleStateDisabled
	if !reflect.DeepEqual(f.schedule, want) {
		t.Errorf("paused:\n got %s\nwant %s", show(f.schedule), show(want))
	}

	f.schedule.Description = aws.String("changed by a deployment during the rebuild")
	want = f.schedule
	want.State = types.ScheduleStateEnabled
	if err := sweep.Enable(ctx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.schedule, want) {
		t.Errorf("resumed:\n got %s\nwant %s", show(f.schedule), show(want))
	}
	if len(f.updates) != 2 {
		t.Errorf("%d updates, want 2", len(f.updates))
	}
}
