package deadlines

import (
	"bytes"
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
}

// ParseTrigger reads an invocation's input: empty input and null are a trigger
// with nothing in it (sweep as of the clock). Malformed input, a member the
// trigger does not have (other than in a Scheduled Event's envelope), and a one-row
// trigger that does not name a row of one of kinds are errors: an input the sweep
// cannot read is refused rather than taken for a sweep of every row.
func ParseTrigger(input []byte, kinds Kinds) (Trigger, error) {
	var t Trigger
	if len(input) > 0 && string(input) != "null" {
		if err := decodeTrigger(input, &t); err != nil {
			return Trigger{}, fmt.Errorf("deadlines: sweep input is not a trigger: %w", err)
		}
	}
	if t.Kind != "" || t.Key != "" {
		k, ok := kinds.ByName(t.Kind)
		if _, valid := k.SubjectOf(t.Key); !ok || !valid || !k.Swept() {
			return Trigger{}, fmt.Errorf("deadlines: one-row trigger names kind %q and key %q, which is no row of that kind, or of no swept kind", t.Kind, t.Key)
		}
	}
	return t, nil
}

// decodeTrigger decodes input, one JSON object, into t. A member t does not have
// is refused, unless input is an EventBridge rule's Scheduled Event: AWS defines
// its envelope, whose other members the sweep does not read.
func decodeTrigger(input []byte, t *Trigger) error {
	var members map[string]any
	if err := json.Unmarshal(input, &members); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	if members["source"] != "aws.events" || members["detail-type"] != "Scheduled Event" {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(t)
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
		return time.Time{}, fmt.Errorf("deadlines: scheduled time %q: %w", raw, err)
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
