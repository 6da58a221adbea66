package deadline_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/deadline"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/rental"
)

func newTimers(t *testing.T, now time.Time) (*deadline.Timers, *scheduler.Client) {
	t.Helper()
	client := scheduler.NewFromConfig(emulatortest.Config(t))
	group := emulatortest.TableName(t, "deadlines")
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	return &deadline.Timers{
		Client: client, Group: group, Timeout: 15 * time.Minute, Now: func() time.Time { return now },
		TargetARN:     "arn:aws:lambda:us-east-1:000000000000:function:sweep",
		RoleARN:       "arn:aws:iam::000000000000:role/scheduler",
		DeadLetterARN: "arn:aws:sqs:us-east-1:000000000000:deadline-dlq",
	}, client
}

func getSchedule(t *testing.T, tm *deadline.Timers, ref string) *scheduler.GetScheduleOutput {
	t.Helper()
	out, err := tm.Client.(*scheduler.Client).GetSchedule(ctx, &scheduler.GetScheduleInput{
		Name: aws.String(deadline.ScheduleName(ref)), GroupName: aws.String(tm.Group),
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
		var ref string
		switch e := settle.(type) {
		case payment.PaymentConfirmed:
			ref = e.Reference
		case payment.PaymentRejected:
			ref = e.Reference
		case payment.PaymentCancelled:
			ref = e.Reference
		}
		t.Run(settle.EventType(), func(t *testing.T) {
			prepared := paymentRecord(t, payment.PaymentPrepared{PaymentID: "p", Reference: ref, Amount: 1500, Currency: "EUR"}, 1, now.Add(-time.Minute+250*time.Millisecond))
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
				s.Target.RetryPolicy == nil || aws.ToInt32(s.Target.RetryPolicy.MaximumRetryAttempts) != deadline.TimerRetryAttempts {
				t.Errorf("target %+v: want the sweep, the role, the dead-letter queue and the retry policy", s.Target)
			}
			trigger, err := deadline.ParseTrigger([]byte(aws.ToString(s.Target.Input)))
			if err != nil || !trigger.OnePayment() || trigger.PaymentReference != ref {
				t.Errorf("input %s: %+v, %v", aws.ToString(s.Target.Input), trigger, err)
			}
			for range 2 { // the second delete finds it gone, which is fine
				if err := tm.Apply(ctx, paymentRecord(t, settle, 2, now)); err != nil {
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
	if err := tm.Apply(ctx, paymentRecord(t, payment.PaymentPrepared{PaymentID: "p", Reference: ref, Amount: 1, Currency: "EUR"}, 1, now.Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if getSchedule(t, tm, ref) != nil {
		t.Error("a payment already past its deadline got a schedule")
	}
	foreign := "invoice-42"
	if err := tm.Apply(ctx, paymentRecord(t, payment.PaymentPrepared{PaymentID: "p", Reference: foreign, Amount: 1, Currency: "EUR"}, 1, now)); err != nil {
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

func TestAtExpression(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 11, 30, 9, 14, 0, 0, time.UTC):                     "at(2026-11-30T09:14:00)",
		time.Date(2026, 11, 30, 9, 14, 0, 1, time.UTC):                     "at(2026-11-30T09:14:00)",
		time.Date(2026, 12, 31, 23, 59, 59, 999e6, time.UTC):               "at(2026-12-31T23:59:59)",
		time.Date(2026, 11, 30, 10, 14, 0, 0, time.FixedZone("CET", 3600)): "at(2026-11-30T09:14:00)",
	} {
		got := deadline.AtExpression(in)
		if got != want {
			t.Errorf("AtExpression(%v) = %s, want %s", in, got, want)
		}
		back, err := deadline.ParseAtExpression(got)
		if err != nil || back.After(in) || in.Sub(back) >= time.Second {
			t.Errorf("ParseAtExpression(%s) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "rate(1 minute)", "at()", "at(2026-11-30 09:14:00)", "at(2026-11-30T09:14:00"} {
		if _, err := deadline.ParseAtExpression(bad); err == nil {
			t.Errorf("ParseAtExpression(%q) accepted", bad)
		}
	}
	long := "rp_" + string(make([]byte, 70))
	if n := deadline.ScheduleName(long); len(n) > 64 || n == deadline.ScheduleName(long+"x") {
		t.Errorf("ScheduleName of a long reference: %q", n)
	}
}

func TestSweepOne(t *testing.T) {
	w := newWorld(t, deadline.DefaultShards)
	overdue := w.request("one-overdue")
	settled := w.request("one-settled")
	early := w.request("one-early")
	w.pumpUntil("the payments to be listed", func() bool { return w.listed(overdue) && w.listed(settled) && w.listed(early) })
	if _, err := w.commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(settled)}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	w.pumpUntil("the settled payment to leave the list", func() bool { return !w.listed(settled) })

	s := w.sweeper(nil)
	later := time.Now().Add(time.Hour)
	sum, err := s.SweepOne(ctx, overdue, payment.ReferenceFor(overdue), later)
	if err != nil || sum.Found != 1 || sum.Cancelled != 1 || sum.ItemsRead != 1 || sum.RentalID != overdue {
		t.Fatalf("overdue: %+v, %v; want it found and cancelled after reading one item", sum, err)
	}
	w.pumpUntil("the bike to be released", func() bool { return w.bikeStatus("one-overdue") == rental.StatusAvailable })
	for name, id := range map[string]string{"fired twice": overdue, "settled": settled} {
		sum, err := s.SweepOne(ctx, id, payment.ReferenceFor(id), later)
		if err != nil || sum.Found != 0 || sum.Cancelled != 0 {
			t.Errorf("%s: %+v, %v; want nothing found", name, sum, err)
		}
	}
	if _, err := s.SweepOne(ctx, overdue, payment.ReferenceFor(settled), later); err == nil {
		t.Error("a payment of another rental was accepted")
	}

	// Fired early, with less time left than the wait: refused, for Scheduler to retry.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.SweepOne(short, early, payment.ReferenceFor(early), time.Now()); !errors.Is(err, deadline.ErrNotYetDue) {
		t.Errorf("early, 15 minutes before its deadline: %v, want ErrNotYetDue", err)
	}
	// Fired early with time to wait: it waits for the deadline, then cancels.
	s.Timeout = 2 * time.Second
	start := time.Now()
	row, _, err := w.projection.Get(ctx, payment.ReferenceFor(early))
	if err != nil {
		t.Fatal(err)
	}
	sum, err = s.SweepOne(short, early, payment.ReferenceFor(early), row.PreparedAt.Add(time.Second))
	if err != nil || sum.Cancelled != 1 {
		t.Fatalf("early by a second: %+v, %v; want it cancelled after waiting", sum, err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("cancelled after %v, before the deadline", waited)
	}
}

func TestParseTrigger(t *testing.T) {
	for input, wantOne := range map[string]bool{
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`: true,
		`{"scheduledTime":"2026-11-29T12:00:00Z"}`:                                                   false,
		`null`: false,
	} {
		tr, err := deadline.ParseTrigger([]byte(input))
		if err != nil || tr.OnePayment() != wantOne {
			t.Errorf("ParseTrigger(%s) = %+v, %v; want one payment %v", input, tr, err, wantOne)
		}
	}
	for _, bad := range []string{
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b2_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1 x","paymentReference":"rp_b1 x"}`,
		`{"rentalId":42}`,
	} {
		if _, err := deadline.ParseTrigger([]byte(bad)); err == nil {
			t.Errorf("ParseTrigger(%s) accepted", bad)
		}
	}
}

func TestSummaryJSONHasOldestOverdueInMilliseconds(t *testing.T) {
	in := deadline.Summary{Now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Found: 2, OldestOverdue: 1500 * time.Millisecond, RentalID: "b_x"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || raw["oldestOverdueMs"] != 1500.0 || raw["found"] != 2.0 {
		t.Errorf("summary JSON %s: want oldestOverdueMs 1500 and found 2", b)
	}
	var out deadline.Summary
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Errorf("round trip: %+v, %v; want %+v", out, err, in)
	}
}
