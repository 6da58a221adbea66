package deadline

import (
	"encoding/json"
	"fmt"
	"time"
)

// Trigger is what starts a sweep. EventBridge Scheduler passes the input the
// template configures, {"scheduledTime": "<aws.scheduler.scheduled-time>"}; an
// EventBridge rule's Scheduled Event carries the same time in "time".
type Trigger struct {
	ScheduledTime string `json:"scheduledTime,omitempty"`
	Time          string `json:"time,omitempty"`
}

// NowFrom returns the "now" a sweep should use for an invocation's input: the
// scheduled time it carries, or the clock if it carries none. A time later than the
// clock is replaced by the clock, so that no caller can make payments overdue early by
// pushing now into the future. Malformed input is an error.
func NowFrom(input []byte, clock time.Time) (time.Time, error) {
	var t Trigger
	if len(input) > 0 && string(input) != "null" {
		if err := json.Unmarshal(input, &t); err != nil {
			return time.Time{}, fmt.Errorf("deadline: sweep input is not a trigger: %w", err)
		}
	}
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
