package deadline

import (
	"encoding/json"
	"fmt"
	"time"
)

// Trigger is what starts a sweep. EventBridge Scheduler passes the input the
// template configures, {"scheduledTime": "<aws.scheduler.scheduled-time>"}; an
// EventBridge rule's Scheduled Event carries the same time in "time". A row's
// one-time schedule (precise deadlines) names the row instead, by its kind and its
// table key: the sweep then acts on that one row only (Sweeper.SweepOne).
type Trigger struct {
	ScheduledTime string `json:"scheduledTime,omitempty"`
	Time          string `json:"time,omitempty"`
	// Kind and Key name the one row a one-time schedule is for: the kind's name and
	// the row's table key (Kind.Key).
	Kind string `json:"kind,omitempty"`
	Key  string `json:"key,omitempty"`
	// RentalID and PaymentReference are how the schedules written before kinds
	// existed name their row: PaymentReference is its key, of the kind whose key it
	// is, and RentalID must be that key's subject. Read, never written.
	RentalID         string `json:"rentalId,omitempty"`
	PaymentReference string `json:"paymentReference,omitempty"`
}

// ParseTrigger reads an invocation's input: empty input and null are a trigger
// with nothing in it (sweep as of the clock). Malformed input, and a one-row
// trigger that does not name a row of one of kinds (or whose subject is not the one
// it names), are errors. A trigger of today's form that names a key of kind other
// than Kind is an error too.
func ParseTrigger(input []byte, kinds Kinds) (Trigger, error) {
	var t Trigger
	if len(input) > 0 && string(input) != "null" {
		if err := json.Unmarshal(input, &t); err != nil {
			return Trigger{}, fmt.Errorf("deadline: sweep input is not a trigger: %w", err)
		}
	}
	if t.RentalID != "" || t.PaymentReference != "" {
		k, subject, ok := kinds.OfKey(t.PaymentReference)
		if !ok || subject != t.RentalID || (t.Kind != "" && t.Kind != k.Name) || (t.Key != "" && t.Key != t.PaymentReference) {
			return Trigger{}, fmt.Errorf("deadline: one-row trigger names rental %q and payment %q, which do not belong together", t.RentalID, t.PaymentReference)
		}
		t.Kind, t.Key = k.Name, t.PaymentReference
	}
	if t.Kind != "" || t.Key != "" {
		k, ok := kinds.ByName(t.Kind)
		if _, valid := k.SubjectOf(t.Key); !ok || !valid {
			return Trigger{}, fmt.Errorf("deadline: one-row trigger names kind %q and key %q, which is no row of that kind", t.Kind, t.Key)
		}
	}
	return t, nil
}

// OneRow reports whether the trigger is one row's own deadline.
func (t Trigger) OneRow() bool { return t.Key != "" }

// Now returns the "now" the trigger asks for: the scheduled time it carries, or the
// clock if it carries none. A time later than the clock is replaced by the clock, so
// that no caller can make rows overdue early by pushing now into the future.
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
		return time.Time{}, fmt.Errorf("deadline: scheduled time %q: %w", raw, err)
	}
	if at.After(clock) {
		return clock, nil
	}
	return at, nil
}

// NowFrom returns the "now" a sweep should use for an invocation's input (see
// Trigger.Now). Malformed input is an error.
func NowFrom(input []byte, clock time.Time, kinds Kinds) (time.Time, error) {
	t, err := ParseTrigger(input, kinds)
	if err != nil {
		return time.Time{}, err
	}
	return t.Now(clock)
}
