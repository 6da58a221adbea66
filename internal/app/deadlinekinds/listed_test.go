package deadlinekinds_test

import (
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
)

// TestListedNamesWhatOperatorsSee: the to-do list's kinds are the declared kinds'
// listings, the overdue returns listed as returns.
func TestListedNamesWhatOperatorsSee(t *testing.T) {
	want := []string{deadlinekinds.Payment, deadlinekinds.Refund, deadlinekinds.Return, deadlinekinds.Stuck}
	if got := deadlinekinds.Listed(); !slices.Equal(got, want) {
		t.Errorf("Listed() = %v, want %v", got, want)
	}
}
