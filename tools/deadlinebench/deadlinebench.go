// Package deadlinebench measures how promptly the service gives up on payments that
// never arrive, on the local stack: how late after its deadline each payment is
// cancelled, and how long one sweep takes to call off many payments that fall due
// together, against what the emulator can serve at all.
package deadlinebench

import (
	"strconv"
	"time"

	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Env returns the environment a benchmark gives the stack: overrides first, then
// passthrough (the process's environment, usually; nil for none), then defaults, for
// the names that are empty in each.
func Env(overrides map[string]string, passthrough wiring.Getenv, defaults map[string]string) wiring.Getenv {
	return func(name string) string {
		if v := overrides[name]; v != "" {
			return v
		}
		if passthrough != nil {
			if v := passthrough(name); v != "" {
				return v
			}
		}
		return defaults[name]
	}
}

// runID names one run's tables and bikes apart from any other's on a shared emulator.
func runID() string {
	return strconv.FormatInt(time.Now().Unix()%1e6, 36) + ident.Random(3)
}
