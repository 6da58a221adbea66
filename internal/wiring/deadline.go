package wiring

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/deadline"
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

// Timers returns the payments' one-time schedules when DEADLINE_MODE is "precise",
// configured by DEADLINE_SCHEDULE_GROUP, DEADLINE_TARGET_ARN, DEADLINE_ROLE_ARN,
// DEADLINE_DLQ_ARN and PAYMENT_TIMEOUT, or nil in sweep mode. It reads every one of
// those variables in either mode, so that a deployment can switch modes by changing
// DEADLINE_MODE alone.
func Timers(cfg aws.Config, getenv Getenv) (*deadline.Timers, error) {
	mode, err := deadline.ParseMode(getenv(EnvDeadlineMode))
	if err != nil {
		return nil, fmt.Errorf("wiring: %s: %w", EnvDeadlineMode, err)
	}
	timeout, err := durationSetting(getenv, EnvPaymentTimeout, deadline.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	settings := map[string]string{}
	var missing error
	for _, name := range []string{EnvDeadlineGroup, EnvDeadlineTarget, EnvDeadlineRole, EnvDeadlineDLQ} {
		v, err := required(getenv, name)
		if err != nil && missing == nil {
			missing = fmt.Errorf("%w (needed with %s=%s)", err, EnvDeadlineMode, deadline.ModePrecise)
		}
		settings[name] = v
	}
	if mode != deadline.ModePrecise {
		return nil, nil
	}
	if missing != nil {
		return nil, missing
	}
	return &deadline.Timers{
		Client:        scheduler.NewFromConfig(cfg),
		Group:         settings[EnvDeadlineGroup],
		TargetARN:     settings[EnvDeadlineTarget],
		RoleARN:       settings[EnvDeadlineRole],
		DeadLetterARN: settings[EnvDeadlineDLQ],
		Timeout:       timeout,
	}, nil
}
