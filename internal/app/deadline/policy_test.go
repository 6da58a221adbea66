package deadline_test

import (
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
)

// TestThePolicyIsTheOneRuleOfOverdue: a payment is overdue once it was prepared
// before now minus the timeout, not at its deadline exactly; a rental is stuck once
// its process has been open past the timeout and the grace; the zero policy is the
// defaults'.
func TestThePolicyIsTheOneRuleOfOverdue(t *testing.T) {
	p, err := deadline.NewPolicy(15*time.Minute, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	prepared := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	due := prepared.Add(15 * time.Minute)
	if got := p.Deadline(prepared); !got.Equal(due) {
		t.Errorf("deadline %v, want %v", got, due)
	}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{{due.Add(-time.Millisecond), false}, {due, false}, {due.Add(time.Millisecond), true}} {
		if got := p.Overdue(prepared, c.now); got != c.want {
			t.Errorf("overdue at %v: %v, want %v", c.now, got, c.want)
		}
		if got := prepared.Before(p.Cutoff(c.now)); got != c.want {
			t.Errorf("before the cutoff at %v: %v, want %v (Overdue and Cutoff must agree)", c.now, got, c.want)
		}
	}
	if got, want := p.StuckCutoff(due), prepared.Add(-10*time.Minute); !got.Equal(want) {
		t.Errorf("stuck cutoff %v, want %v", got, want)
	}
	var zero deadline.Policy
	if zero.PaymentTimeout() != deadline.DefaultTimeout || zero.StuckGrace() != deadline.DefaultGrace {
		t.Errorf("the zero policy: %s, %s; want the defaults", zero.PaymentTimeout(), zero.StuckGrace())
	}
	if _, err := deadline.NewPolicy(0, time.Minute); err == nil {
		t.Error("a zero timeout: no error")
	}
}
