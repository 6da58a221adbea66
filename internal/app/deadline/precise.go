package deadline

import (
	"fmt"
)

// Deadline modes: how overdue rows are noticed.
const (
	// ModeSweep finds overdue rows with the periodic sweep alone.
	ModeSweep = "sweep"
	// ModePrecise also gives every outstanding row of the kinds that ask for it (the
	// service's payments and returns) an EventBridge Scheduler one-time schedule at
	// its due time, which invokes the sweep function for that one row. The periodic
	// sweep stays on as the safety net.
	ModePrecise = "precise"
)

// ParseMode reads a deadline mode; empty means ModeSweep.
func ParseMode(s string) (string, error) {
	switch s {
	case "", ModeSweep:
		return ModeSweep, nil
	case ModePrecise:
		return ModePrecise, nil
	}
	return "", fmt.Errorf("deadline: mode %q: want %q or %q", s, ModeSweep, ModePrecise)
}
