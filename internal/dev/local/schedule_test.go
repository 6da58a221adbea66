package local_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestPausingTheScheduleStopsTheLocalSweep checks that the local scheduler honours the
// schedule's state in the emulator, as EventBridge Scheduler does, so that a rebuild
// that pauses it pauses the local sweep too.
func TestPausingTheScheduleStopsTheLocalSweep(t *testing.T) {
	client := scheduler.NewFromConfig(emulatortest.Config(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := local.CreateSweepSchedule(ctx, client); err != nil {
		t.Fatal(err)
	}
	if err := local.CreateSweepSchedule(ctx, client); err != nil {
		t.Fatalf("creating it again: %v", err)
	}
	setState := func(state types.ScheduleState) {
		out, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(local.SweepSchedule)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
			Name: out.Name, ScheduleExpression: out.ScheduleExpression, FlexibleTimeWindow: out.FlexibleTimeWindow,
			Target: out.Target, State: state,
		}); err != nil {
			t.Fatal(err)
		}
	}
	var runs atomic.Int32
	var lastScheduled atomic.Int64
	paused := func(ctx context.Context) bool { p, _ := local.Paused(ctx, client); return p }
	go local.Schedule(ctx, 20*time.Millisecond, paused, func(_ context.Context, at time.Time) (awslambda.Summary, error) {
		runs.Add(1)
		lastScheduled.Store(at.UnixNano())
		return awslambda.Summary{}, nil
	})
	waitFor(t, "a sweep", func() bool { return runs.Load() > 0 })
	if at := time.Unix(0, lastScheduled.Load()); time.Since(at) > time.Minute {
		t.Errorf("scheduled time %v is not the run's", at)
	}
	setState(types.ScheduleStateDisabled)
	time.Sleep(100 * time.Millisecond) // let a run that already read the state finish
	before := runs.Load()
	time.Sleep(200 * time.Millisecond) // ten intervals: none may run while paused
	if n := runs.Load(); n != before {
		t.Fatalf("%d sweeps ran while the schedule was paused", n-before)
	}
	setState(types.ScheduleStateEnabled)
	waitFor(t, "a sweep after resuming", func() bool { return runs.Load() > before })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
