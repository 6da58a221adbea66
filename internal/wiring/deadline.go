package wiring

import (
	"fmt"

	"github.com/bikerental/bikerental/deadlines"
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
func DeadlineKinds(getenv Getenv, r deadlinekinds.Receivers) (deadlines.Kinds, error) {
	policy, err := DeadlinePolicy(getenv)
	if err != nil {
		return deadlines.Kinds{}, err
	}
	period, err := RentalPeriod(getenv)
	if err != nil {
		return deadlines.Kinds{}, err
	}
	return deadlinekinds.Declare(policy, r, deadlinekinds.WithRentalPeriod(period))
}

// PreciseKinds names the kinds whose rows get a one-time schedule in precise mode
// (schedules.Config.Precise): the payment due and the return due, whose commands
// are worth sending on time.
var PreciseKinds = []string{deadlinekinds.Payment, deadlinekinds.Return}

// Deadline modes: how overdue rows are noticed (DEADLINE_MODE).
const (
	// ModeSweep finds overdue rows with the periodic sweep alone.
	ModeSweep = "sweep"
	// ModePrecise also gives every outstanding row of PreciseKinds an EventBridge
	// Scheduler one-time schedule at its due time, which invokes the sweep function
	// for that one row. The periodic sweep stays on as the safety net.
	ModePrecise = "precise"
)

// DeadlineMode reads DEADLINE_MODE: ModeSweep (the default) or ModePrecise.
func DeadlineMode(getenv Getenv) (string, error) {
	switch v := getenv(EnvDeadlineMode); v {
	case "", ModeSweep:
		return ModeSweep, nil
	case ModePrecise:
		return ModePrecise, nil
	default:
		return "", bad(EnvDeadlineMode, v, fmt.Sprintf("%s or %s", ModeSweep, ModePrecise))
	}
}
