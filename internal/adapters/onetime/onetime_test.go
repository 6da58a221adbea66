package onetime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/internal/adapters/onetime"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

func newTimers(t *testing.T, now time.Time) (*onetime.Timers, *scheduler.Client) {
	t.Helper()
	client := scheduler.NewFromConfig(emulatortest.Config(t))
	group := emulatortest.TableName(t, "deadlines")
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	return &onetime.Timers{
		Client: client, Group: group, Kinds: deadline.MustKinds(deadlinekinds.PaymentKind(deadline.Policy{Timeout: 15 * time.Minute}, nil)), Now: func() time.Time { return now },
		TargetARN:     "arn:aws:lambda:us-east-1:000000000000:function:sweep",
		RoleARN:       "arn:aws:iam::000000000000:role/scheduler",
		DeadLetterARN: "arn:aws:sqs:us-east-1:000000000000:deadline-dlq",
	}, client
}

func getSchedule(t *testing.T, tm *onetime.Timers, ref string) *scheduler.GetScheduleOutput {
	t.Helper()
	out, err := tm.Client.(*scheduler.Client).GetSchedule(ctx, &scheduler.GetScheduleInput{
		Name: aws.String(onetime.ScheduleName(ref)), GroupName: aws.String(tm.Group),
	})
	var gone *types.ResourceNotFoundException
	if errors.As(err, &gone) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTimersCreateOneScheduleAtTheDeadlineAndDeleteItOnSettlement(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tm, _ := newTimers(t, now)
	for _, settle := range []payment.Event{
		payment.PaymentConfirmed{Reference: "rp_bike-c_AAAAAAAAAAAAAAAAAAAAAA", PaymentID: "p"},
		payment.PaymentRejected{Reference: "rp_bike-r_AAAAAAAAAAAAAAAAAAAAAA", PaymentID: "p"},
		payment.PaymentCancelled{Reference: "rp_bike-x_AAAAAAAAAAAAAAAAAAAAAA"},
	} {
		ref := payment.ReferenceOf(settle)
		t.Run(settle.EventType(), func(t *testing.T) {
			prepared := paymenttest.Record(t, payment.PaymentPrepared{PaymentID: "p", Reference: ref, Amount: 1500, Currency: "EUR"}, 1, now.Add(-time.Minute+250*time.Millisecond))
			for range 2 { // redelivered: still one schedule, no error
				if err := tm.Apply(ctx, prepared); err != nil {
					t.Fatal(err)
				}
			}
			s := getSchedule(t, tm, ref)
			if s == nil {
				t.Fatal("no schedule after PaymentPrepared")
			}
			if got, want := aws.ToString(s.ScheduleExpression), "at(2026-11-30T09:14:00)"; got != want {
				t.Errorf("expression %s, want %s (prepared at 08:59:00.250 plus 15m, truncated)", got, want)
			}
			if aws.ToString(s.ScheduleExpressionTimezone) != "UTC" || s.ActionAfterCompletion != types.ActionAfterCompletionDelete ||
				s.FlexibleTimeWindow == nil || s.FlexibleTimeWindow.Mode != types.FlexibleTimeWindowModeOff {
				t.Errorf("schedule %+v: want UTC, no flexible window, deleted after completion", s)
			}
			if s.Target == nil || aws.ToString(s.Target.Arn) != tm.TargetARN || aws.ToString(s.Target.RoleArn) != tm.RoleARN ||
				s.Target.DeadLetterConfig == nil || aws.ToString(s.Target.DeadLetterConfig.Arn) != tm.DeadLetterARN ||
				s.Target.RetryPolicy == nil || aws.ToInt32(s.Target.RetryPolicy.MaximumRetryAttempts) != onetime.TimerRetryAttempts {
				t.Errorf("target %+v: want the sweep, the role, the dead-letter queue and the retry policy", s.Target)
			}
			trigger, err := deadline.ParseTrigger([]byte(aws.ToString(s.Target.Input)), tm.Kinds)
			if err != nil || !trigger.OneRow() || trigger.Kind != deadlinekinds.Payment || trigger.Key != ref {
				t.Errorf("input %s: %+v, %v", aws.ToString(s.Target.Input), trigger, err)
			}
			for range 2 { // the second delete finds it gone, which is fine
				if err := tm.Apply(ctx, paymenttest.Record(t, settle, 2, now)); err != nil {
					t.Fatal(err)
				}
			}
			if getSchedule(t, tm, ref) != nil {
				t.Error("the schedule outlived its payment's settlement")
			}
		})
	}
}

func TestTimersLeaveAlreadyDueAndForeignPaymentsToTheSweep(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tm, _ := newTimers(t, now)
	ref := "rp_bike-old_AAAAAAAAAAAAAAAAAAAAAA"
	if err := tm.Apply(ctx, paymenttest.Record(t, payment.PaymentPrepared{PaymentID: "p", Reference: ref, Amount: 1, Currency: "EUR"}, 1, now.Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if getSchedule(t, tm, ref) != nil {
		t.Error("a payment already past its deadline got a schedule")
	}
	foreign := "invoice-42"
	if err := tm.Apply(ctx, paymenttest.Record(t, payment.PaymentPrepared{PaymentID: "p", Reference: foreign, Amount: 1, Currency: "EUR"}, 1, now)); err != nil {
		t.Fatal(err)
	}
	if getSchedule(t, tm, foreign) != nil {
		t.Error("a payment of no rental got a schedule")
	}
	corrupt := eventstore.Record{StreamID: payment.StreamID(ref), Version: 2, Event: eventstore.Event{Type: "PaymentPrepared", Data: []byte(`{"reference":`), RecordedAt: now}}
	if err := tm.Apply(ctx, corrupt); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Errorf("corrupt record: %v, want ErrCorruptRecord", err)
	}
}
