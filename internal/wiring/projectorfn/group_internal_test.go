package projectorfn

import (
	"strings"
	"testing"
)

// TestGroupName holds the check of a schedule group's name to what EventBridge
// Scheduler takes, at its edges.
func TestGroupName(t *testing.T) {
	for v, want := range map[string]bool{
		"default": true, "bikerental-dev_deadlines.v2": true, "a": true, strings.Repeat("g", 64): true,
		"": false, strings.Repeat("g", 65): false, "bike deadlines": false, "bikes/deadlines": false, "échéances": false,
	} {
		if got := groupName(v); got != want {
			t.Errorf("groupName(%q) = %v, want %v", v, got, want)
		}
	}
}
