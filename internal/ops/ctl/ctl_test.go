package ctl_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/wiring"
)

// TestSettingsTheServiceRefusesAreSettingsErrors: what the service's wiring refuses
// comes back as a SettingsError, before anything is read, so that rentalctl can
// call it a bad command line; the refusal's text is kept as it is.
func TestSettingsTheServiceRefusesAreSettingsErrors(t *testing.T) {
	base := map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		// Nothing listens here: a command that got as far as reading would fail otherwise.
		"AWS_ENDPOINT_URL": "http://127.0.0.1:9",
		"EVENTS_TABLE":     "events", "DEADLINES_TABLE": "pending",
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, setting, value string
		run                  func(*ctl.Stack) error
	}{
		{"pending, bad timeout", wiring.EnvPaymentTimeout, "soon", func(s *ctl.Stack) error {
			_, err := s.Pending(ctx, ctl.PendingQuery{Limit: 1})
			return err
		}},
		{"history, bad events table", wiring.EnvEventsTable, "e", func(s *ctl.Stack) error {
			_, err := s.History(ctx, "bike_AAAAAAAAAAAAAAAAAAAAAA")
			return err
		}},
		{"cancel, bad recording mode", wiring.EnvRecordingMode, "sometimes", func(s *ctl.Stack) error {
			_, err := s.Cancel(ctx, "bike_AAAAAAAAAAAAAAAAAAAAAA")
			return err
		}},
		{"sweep, bad concurrency", wiring.EnvSweepConcurrency, "none", func(s *ctl.Stack) error {
			_, err := s.Sweep(ctx, time.Now())
			return err
		}},
		{"rebuild, bad marker TTL", wiring.EnvMarkerTTL, "forever", func(s *ctl.Stack) error {
			_, err := s.Rebuild(ctx, ctl.RebuildRequest{})
			return err
		}},
		{"rebuild, two triggers", "", "", func(s *ctl.Stack) error {
			_, err := s.Rebuild(ctx, ctl.RebuildRequest{Sweep: ctl.SweepTrigger{ScheduleName: "s", RuleName: "r"}})
			if !errors.Is(err, ctl.ErrTwoTriggers) {
				t.Errorf("two triggers: %v, want ErrTwoTriggers", err)
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			if c.setting != "" {
				env[c.setting] = c.value
			}
			stack, err := ctl.Open(ctx, func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			err = c.run(stack)
			var bad *ctl.SettingsError
			if !errors.As(err, &bad) || !ctl.IsSettings(err) || err.Error() != bad.Err.Error() {
				t.Fatalf("%v (%T), want a SettingsError", err, err)
			}
			if c.setting != "" && !errors.Is(err, wiring.ErrBadSetting) {
				t.Errorf("%v does not wrap wiring's refusal", err)
			}
		})
	}
}

// TestAFailureToReadIsNoSettingsError: with settings the service accepts, a
// command that fails to read fails as itself, not as a bad command line.
func TestAFailureToReadIsNoSettingsError(t *testing.T) {
	env := map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "DEADLINES_TABLE": "pending",
	}
	stack, err := ctl.Open(context.Background(), func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the read cannot happen
	_, err = stack.Pending(ctx, ctl.PendingQuery{Limit: 1})
	if err == nil || ctl.IsSettings(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("pending that could not read: %v, want the read's failure and no SettingsError", err)
	}
}
