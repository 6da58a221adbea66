package wiring

import (
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
)

// Environment variables of precise deadlines, read by the projector.
const (
	// EnvDeadlineMode is "sweep" (the default: the periodic sweep alone) or "precise"
	// (also one EventBridge Scheduler one-time schedule per outstanding payment).
	EnvDeadlineMode = "DEADLINE_MODE"
	// EnvDeadlineGroup names the schedule group the one-time schedules go in.
	EnvDeadlineGroup = "DEADLINE_SCHEDULE_GROUP"
	// EnvDeadlineTarget is the ARN of the function the schedules invoke (the sweep).
	EnvDeadlineTarget = "DEADLINE_TARGET_ARN"
	// EnvDeadlineRole is the ARN of the role Scheduler assumes to invoke it.
	EnvDeadlineRole = "DEADLINE_ROLE_ARN"
	// EnvDeadlineDLQ is the ARN of the SQS queue for invocations Scheduler gives up on.
	EnvDeadlineDLQ = "DEADLINE_DLQ_ARN"
)

// DeadlineKinds returns the service's kinds of deadline under DeadlinePolicy and
// RENTAL_PERIOD, their commands sent to r: the one declaration the projector, the
// sweep, the one-time schedules and the CLI share.
func DeadlineKinds(getenv Getenv, r deadlinekinds.Receivers) (deadline.Kinds, error) {
	policy, err := DeadlinePolicy(getenv)
	if err != nil {
		return deadline.Kinds{}, err
	}
	period, err := RentalPeriod(getenv)
	if err != nil {
		return deadline.Kinds{}, err
	}
	return deadlinekinds.Declare(policy, r, deadlinekinds.WithRentalPeriod(period))
}

// PreciseKinds are the kinds whose rows get a one-time schedule in precise mode:
// the payment due and the return due, whose commands are worth sending on time.
func PreciseKinds(getenv Getenv) (deadline.Kinds, error) {
	all, err := DeadlineKinds(getenv, deadlinekinds.Receivers{})
	if err != nil {
		return deadline.Kinds{}, err
	}
	payment, _ := all.ByName(deadlinekinds.Payment)
	ret, _ := all.ByName(deadlinekinds.Return)
	return deadline.NewKinds(payment, ret)
}
