// Package onetime keeps one EventBridge Scheduler one-time schedule per outstanding
// payment, for precise deadlines: the projector creates a payment's schedule when the
// payment is prepared and deletes it when the payment settles; the schedule invokes
// the sweep function for that one payment at its deadline. It is its own package so
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
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweeptrigger"
)

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
// it. The schedule invokes TargetARN (the sweep function) with a sweeptrigger.Trigger naming
// the payment, as RoleARN, parking undeliverable invocations in DeadLetterARN, and deletes
// itself once it has fired. Names are deterministic per payment, so creating or
// deleting twice (stream redelivery) is harmless. Safe for concurrent use.
type Timers struct {
	Client                                   SchedulerAPI
	Group, TargetARN, RoleARN, DeadLetterARN string
	// Policy says when a payment falls due: the sweep's.
	Policy deadline.Policy
	// Now is the clock (time.Now if nil): a payment already past its deadline gets
	// no schedule, since the next sweep calls it off anyway.
	Now func() time.Time
}

// Apply creates or deletes the schedule of the payment a record of the Events table
// is about; other records, and payments that belong to no rental, are ignored.
func (t *Timers) Apply(ctx context.Context, r eventstore.Record) error {
	c, ok, err := deadline.PaymentChangeOf(r)
	if err != nil || !ok {
		return err
	}
	if c.Settled == "" {
		return t.arm(ctx, c.Reference, r.RecordedAt)
	}
	return t.disarm(ctx, c.Reference)
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
	due := t.Policy.Deadline(preparedAt)
	if !due.After(now()) {
		return nil // already due (a replay, or a projector far behind): the sweep has it
	}
	input, err := json.Marshal(sweeptrigger.Trigger{RentalID: rentalID, PaymentReference: reference})
	if err != nil {
		return fmt.Errorf("onetime: schedule for %s: %w", reference, err)
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
		return fmt.Errorf("onetime: create schedule for %s: %w", reference, err)
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
		return fmt.Errorf("onetime: delete schedule of %s: %w", reference, err)
	}
	return nil
}
