// Package sweeptrigger reads what starts a sweep: the input EventBridge Scheduler (or
// a rule, or a payment's one-time schedule) invokes the sweep function with.
package sweeptrigger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// Trigger is what starts a sweep. EventBridge Scheduler passes the input the
// template configures, {"scheduledTime": "<aws.scheduler.scheduled-time>"}; an
// EventBridge rule's Scheduled Event carries the same time in "time". A payment's
// one-time schedule (precise deadlines) names its rental and payment instead: the
// sweep then gives up on that one rental only.
type Trigger struct {
	ScheduledTime string `json:"scheduledTime,omitempty"`
	Time          string `json:"time,omitempty"`
	// RentalID and PaymentReference name the one payment a one-time schedule is for.
	RentalID         string `json:"rentalId,omitempty"`
	PaymentReference string `json:"paymentReference,omitempty"`
}

// Parse reads an invocation's input: empty input and null are a trigger with
// nothing in it (sweep as of the clock). Malformed input, and a one-payment trigger
// whose rental and reference do not belong together, are errors.
func Parse(input []byte) (Trigger, error) {
	var t Trigger
	if len(input) > 0 && string(input) != "null" {
		if err := json.Unmarshal(input, &t); err != nil {
			return Trigger{}, fmt.Errorf("sweeptrigger: sweep input is not a trigger: %w", err)
		}
	}
	if t.RentalID != "" || t.PaymentReference != "" {
		if rentalID, err := payment.RentalIDFor(t.PaymentReference); err != nil || rentalID != t.RentalID {
			return Trigger{}, fmt.Errorf("sweeptrigger: one-payment trigger names rental %q and payment %q, which do not belong together", t.RentalID, t.PaymentReference)
		}
	}
	return t, nil
}

// OnePayment reports whether the trigger is a payment's own deadline.
func (t Trigger) OnePayment() bool { return t.RentalID != "" }

// Now returns the "now" the trigger asks for: the scheduled time it carries, or the
// clock if it carries none. A time later than the clock is replaced by the clock, so
// that no caller can make payments overdue early by pushing now into the future.
func (t Trigger) Now(clock time.Time) (time.Time, error) {
	raw := t.ScheduledTime
	if raw == "" {
		raw = t.Time
	}
	if raw == "" {
		return clock, nil
	}
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, fmt.Errorf("sweeptrigger: scheduled time %q: %w", raw, err)
	}
	if at.After(clock) {
		return clock, nil
	}
	return at, nil
}

// NowFrom returns the "now" a sweep should use for an invocation's input (see
// Trigger.Now). Malformed input is an error.
func NowFrom(input []byte, clock time.Time) (time.Time, error) {
	t, err := Parse(input)
	if err != nil {
		return time.Time{}, err
	}
	return t.Now(clock)
}
