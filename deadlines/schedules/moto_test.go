package schedules_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/internal/moto"
	"github.com/bikerental/bikerental/deadlines/schedules"
)

func TestMain(m *testing.M) { moto.Main(m) }

// onScheduler returns a projection keeping its schedules in a group of its own on
// moto's Scheduler, through the real SDK, with the clock at now.
func onScheduler(t *testing.T, now time.Time) (*schedules.Projection, *scheduler.Client, string) {
	t.Helper()
	client := scheduler.NewFromConfig(moto.Config(t))
	group := moto.TableName(t, "g")
	if len(group) > 64 {
		group = group[len(group)-64:]
	}
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	cfg := config(client, slog.New(slog.DiscardHandler))
	cfg.Group, cfg.Now = group, func() time.Time { return now }
	p, err := schedules.New(newIndex(testKinds()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, client, group
}

// getSchedule returns the schedule of key in group, or nil when there is none.
func getSchedule(t *testing.T, client *scheduler.Client, group, key string) *scheduler.GetScheduleOutput {
	t.Helper()
	out, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(schedules.Name(key)), GroupName: aws.String(group)})
	var gone *types.ResourceNotFoundException
	if errors.As(err, &gone) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expression is the schedule's expression, or "none".
func expression(s *scheduler.GetScheduleOutput) string {
	if s == nil {
		return "none"
	}
	return aws.ToString(s.ScheduleExpression)
}

// TestSchedulesOnScheduler keeps a row's schedule on Scheduler through its life:
// made at the row's due time when it opens (and made again, harmlessly, when the
// opening is delivered again), moved when the ordered kind's newer opening puts
// the row off, kept when an older settlement comes late, and deleted (twice,
// harmlessly) when the row settles.
func TestSchedulesOnScheduler(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	p, client, group := onScheduler(t, now)
	key := "invoice-reminder#invoice-1"
	issued := event("invoice-1", 1, "InvoiceIssued", now)
	apply(t, p, issued, issued)
	s := getSchedule(t, client, group, key)
	if s == nil {
		t.Fatal("no schedule after the opening")
	}
	if got, want := aws.ToString(s.ScheduleExpression), schedules.AtExpression(now.Add(7*24*time.Hour)); got != want {
		t.Errorf("expression %s, want %s", got, want)
	}
	checkSchedule(t, &scheduler.CreateScheduleInput{
		ScheduleExpressionTimezone: s.ScheduleExpressionTimezone, ActionAfterCompletion: s.ActionAfterCompletion,
		FlexibleTimeWindow: s.FlexibleTimeWindow, State: s.State, Target: s.Target,
	}, "invoice-reminder", key)

	apply(t, p, event("invoice-1", 3, "InvoiceReminded", now.Add(time.Hour)))
	want := schedules.AtExpression(now.Add(7*24*time.Hour + time.Hour))
	if got := expression(getSchedule(t, client, group, key)); got != want {
		t.Fatalf("schedule %s after the reminder, want it moved to %s", got, want)
	}
	apply(t, p, event("invoice-1", 2, "InvoicePaid", now.Add(time.Minute)))
	if got := expression(getSchedule(t, client, group, key)); got != want {
		t.Fatalf("schedule %s after an older settlement, want it kept at %s", got, want)
	}
	paid := event("invoice-1", 4, "InvoicePaid", now.Add(2*time.Hour))
	apply(t, p, paid, paid)
	if got := expression(getSchedule(t, client, group, key)); got != "none" {
		t.Errorf("schedule %s outlived the row's settlement", got)
	}
}

// TestScheduleNamesOnScheduler makes the schedules of keys whose names are the key
// and of keys whose names are derived: Scheduler takes each, and each is found by
// its name.
func TestScheduleNamesOnScheduler(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	p, client, group := onScheduler(t, now)
	subjects := []string{"order-17", "order.18/a", "order-19-with-a-subject-long-enough-to-pass-the-limit-of-sixty-four"}
	for i, subject := range subjects {
		apply(t, p, deadlines.Record{Stream: subject, Position: 1, Type: "OrderPlaced", At: now.Add(time.Duration(i) * time.Second)})
		name := schedules.Name("order#" + subject)
		if s := getSchedule(t, client, group, "order#"+subject); s == nil || aws.ToString(s.Name) != name {
			t.Errorf("%s: no schedule named %s", subject, name)
		}
	}
}
