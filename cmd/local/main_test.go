package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/local"
)

// TestABadSettingIsRefusedBeforeAnythingStarts: make run checks every setting, its
// own and the functions', before it claims its port or brings the stack up (the
// emulator first): the stack's start is never reached, and the error names the
// variable.
func TestABadSettingIsRefusedBeforeAnythingStarts(t *testing.T) {
	for _, tc := range []struct{ variable, value string }{
		{"PORT", "http"},
		{"PORT", "65536"},
		{"SWEEP_INTERVAL", "5"},
		{"SWEEP_INTERVAL", "-5s"},
		{"LOG_FORMAT", "xml"},
		{"RENTAL_CURRENCY", "euro"},
		{"RENTAL_PRICE_CENTS", "0"},
		{"RECORDING_MODE", "fax"},
		{"PENDING_SHARDS", "300"},
		{"PAYMENT_TIMEOUT", "15"},
		{"DEADLINE_MODE", "exact"},
		{"PAYMENT_PROVIDER", "paypal"},
		{"PAYMENT_WEBHOOK_SECRET", "short"},
		{"OPERATOR_SCOPE", "ops scope"},
		{"MAX_PENDING_PER_RENTER", "none"},
		{"PENDING_TABLE", "p"},
	} {
		t.Run(tc.variable+"="+tc.value, func(t *testing.T) {
			getenv := withDefaults(func(k string) string {
				if k == tc.variable {
					return tc.value
				}
				return ""
			})
			reached := false
			start := func(context.Context, local.Options) (*local.Up, error) {
				reached = true
				return nil, errors.New("this test starts nothing")
			}
			err := run(context.Background(), getenv, start)
			if err == nil || !strings.Contains(err.Error(), tc.variable) {
				t.Errorf("run = %v, want an error naming %s", err, tc.variable)
			}
			if reached {
				t.Errorf("run started the stack before refusing %s=%q", tc.variable, tc.value)
			}
		})
	}
	t.Run("control: good settings start the stack", func(t *testing.T) {
		getenv := withDefaults(func(k string) string {
			if k == "PORT" {
				return "0"
			}
			return ""
		})
		reached := false
		start := func(context.Context, local.Options) (*local.Up, error) {
			reached = true
			return nil, errors.New("this test starts nothing")
		}
		if err := run(context.Background(), getenv, start); err == nil || !reached {
			t.Errorf("run = %v, reached the start: %v", err, reached)
		}
	})
}
