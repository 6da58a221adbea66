package deadline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ident"
	"github.com/bikerental/bikerental/internal/payment"
)

// Deadline modes: how overdue payments are noticed.
const (
	// ModeSweep finds overdue payments with the periodic sweep alone.
	ModeSweep = "sweep"
	// ModePrecise also gives every outstanding payment an EventBridge Scheduler
	// one-time schedule at its deadline, which invokes the sweep function for that one
	// payment. The periodic sweep stays on as the safety net.
	ModePrecise = "precise"
)

// ParseMode reads a deadline mode; empty means ModeSweep.
func ParseMode(s string) (string, error) {
	switch s {
	case "", ModeSweep:
		return ModeSweep, nil
	case ModePrecise:
		return ModePrecise, nil
	}
	return "", fmt.Errorf("deadline: mode %q: want %q or %q", s, ModeSweep, ModePrecise)
}

// SchedulerAPI is the part of the EventBridge Scheduler client Timers uses.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

var _ SchedulerAPI = (*scheduler.Client)(nil)

// Retry policy of a payment's one-time schedule: Scheduler retries a failed or
// throttled invocation of the sweep for up to an hour, then parks the event in the
// dead-letter queue. The periodic sweep catches the payment in any case.
const (
	TimerRetryAttempts = 10
	TimerMaxEventAge   = time.Hour
)

// Timers keeps one EventBridge Scheduler one-time schedule per outstanding payment
// (precise deadlines), from the same payment events as the projection: PaymentPrepared
// creates the payment's schedule, at its deadline, in Group; a settling event deletes
// it. The schedule invokes TargetARN (the sweep function) with a Trigger naming the
// payment, as RoleARN, parking undeliverable invocations in DeadLetterARN, and deletes
// itself once it has fired. Names are deterministic per payment, so creating or
// deleting twice (stream redelivery) is harmless. Safe for concurrent use.
type Timers struct {
	Client                                   SchedulerAPI
	Group, TargetARN, RoleARN, DeadLetterARN string
	// Timeout is how long a payment may stay outstanding, as the sweep's.
	Timeout time.Duration
	// Now is the clock (time.Now if nil): a payment already past its deadline gets
	// no schedule, since the next sweep calls it off anyway.
	Now func() time.Time
}

// ScheduleName returns the name of a payment's one-time schedule: its reference,
// which the service makes at most 62 characters of [A-Za-z0-9_-], or a name derived
// from it if it is longer than Scheduler's 64.
func ScheduleName(reference string) string {
	if len(reference) <= 64 {
		return reference
	}
	return "rp_" + ident.Derived(61, reference)
}

// AtExpression returns the Scheduler expression of a one-time schedule that fires at
// t, truncated to the whole second, in UTC: the schedule fires at most a second early,
// and SweepOne waits for the exact deadline.
func AtExpression(t time.Time) string {
	return "at(" + t.UTC().Format("2006-01-02T15:04:05") + ")"
}

// ParseAtExpression reverses AtExpression.
func ParseAtExpression(expr string) (time.Time, error) {
	var raw string
	if n := len(expr); n > 4 && expr[:3] == "at(" && expr[n-1] == ')' {
		raw = expr[3 : n-1]
	}
	t, err := time.Parse("2006-01-02T15:04:05", raw)
	if err != nil {
		return time.Time{}, fmt.Errorf("deadline: %q is not an at() expression", expr)
	}
	return t, nil
}

// Apply creates or deletes the schedule of the payment a record of the Events table
// is about; other records, and payments that belong to no rental, are ignored.
func (t *Timers) Apply(ctx context.Context, r eventstore.Record) error {
	switch r.Type {
	case "PaymentPrepared", "PaymentConfirmed", "PaymentRejected", "PaymentCancelled":
	default:
		return nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return fmt.Errorf("%w: %s version %d: %w", eventstore.ErrCorruptRecord, r.StreamID, r.Version, err)
	}
	switch e := e.(type) {
	case payment.PaymentPrepared:
		return t.arm(ctx, e.Reference, r.RecordedAt)
	case payment.PaymentConfirmed:
		return t.disarm(ctx, e.Reference)
	case payment.PaymentRejected:
		return t.disarm(ctx, e.Reference)
	case payment.PaymentCancelled:
		return t.disarm(ctx, e.Reference)
	}
	return nil
}

func (t *Timers) arm(ctx context.Context, reference string, preparedAt time.Time) error {
	rentalID, err := payment.RentalIDFor(reference)
	if err != nil {
		return nil // not a rental's payment: nothing will ever cancel it
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	due := preparedAt.Add(t.Timeout)
	if !due.After(now()) {
		return nil // already due (a replay, or a projector far behind): the sweep has it
	}
	input, err := json.Marshal(Trigger{RentalID: rentalID, PaymentReference: reference})
	if err != nil {
		return fmt.Errorf("deadline: schedule for %s: %w", reference, err)
	}
	_, err = t.Client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(ScheduleName(reference)),
		GroupName:                  aws.String(t.Group),
		ScheduleExpression:         aws.String(AtExpression(due)),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      types.ActionAfterCompletionDelete,
		State:                      types.ScheduleStateEnabled,
		Description:                aws.String("Deadline of payment " + reference),
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
		return fmt.Errorf("deadline: create schedule for %s: %w", reference, err)
	}
	return nil
}

func (t *Timers) disarm(ctx context.Context, reference string) error {
	if _, err := payment.RentalIDFor(reference); err != nil {
		return nil
	}
	_, err := t.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{
		Name: aws.String(ScheduleName(reference)), GroupName: aws.String(t.Group),
	})
	var gone *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("deadline: delete schedule of %s: %w", reference, err)
	}
	return nil
}
