package onetime

import (
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/domain/ident"
)

// ScheduleName returns the name of a row's one-time schedule: its key (a payment's
// is its reference, which the service makes at most 62 characters of
// [A-Za-z0-9_-]), or a name derived from it if it is longer than Scheduler's 64.
func ScheduleName(key string) string {
	if len(key) <= 64 {
		return key
	}
	return "rp_" + ident.Derived(61, key)
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
		return time.Time{}, fmt.Errorf("onetime: %q is not an at() expression", expr)
	}
	return t, nil
}
