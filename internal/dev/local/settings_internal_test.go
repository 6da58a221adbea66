package local

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
)

// noChildren replaces the starts of moto and stripe-mock, the two child processes
// StartWith may start, with ones that record that they were reached, and unsets
// AWS_ENDPOINT_URL, so that StartWith would start moto.
func noChildren(t *testing.T) *[]string {
	started := &[]string{}
	oldMoto, oldStripe := startEmulator, startStripeMock
	startEmulator = func(context.Context, ...emulator.Option) (*emulator.Server, error) {
		*started = append(*started, "moto_server")
		return nil, errors.New("this test starts no emulator")
	}
	startStripeMock = func(context.Context) (*stripemock.Server, error) {
		*started = append(*started, "stripe-mock")
		return nil, errors.New("this test starts no stripe-mock")
	}
	t.Cleanup(func() { startEmulator, startStripeMock = oldMoto, oldStripe })
	t.Setenv("AWS_ENDPOINT_URL", "") // restored when the test ends
	os.Unsetenv("AWS_ENDPOINT_URL")
	return started
}

// TestABadSettingStartsNothing: StartWith refuses a bad setting, naming it, before
// it starts moto or stripe-mock; with good settings it does go on to start them
// (the control that shows the hooks are where the children start).
func TestABadSettingStartsNothing(t *testing.T) {
	good := map[string]string{
		"EVENTS_TABLE": "bikerental-events", "DEADLINES_TABLE": "bikerental-pending",
		"PAYMENT_WEBHOOK_SECRET": DefaultWebhookSecret, "PAYMENT_PROVIDER": "stripe",
	}
	for _, tc := range []struct {
		name, variable, value string
	}{
		{"currency", "RENTAL_CURRENCY", "euro"},
		{"price", "RENTAL_PRICE_CENTS", "15.00"},
		{"recording mode", "RECORDING_MODE", "fax"},
		{"shards", "DEADLINES_SHARDS", "0"},
		{"payment timeout", "PAYMENT_TIMEOUT", "soon"},
		{"stuck grace", "STUCK_GRACE", "-1m"},
		{"rental period", "RENTAL_PERIOD", "0"},
		{"sweep concurrency", "SWEEP_CONCURRENCY", "many"},
		{"stuck repair", "STUCK_REPAIR", "sometimes"},
		{"deadline mode", "DEADLINE_MODE", "exact"},
		{"deadline target", "DEADLINE_TARGET_ARN", "the-sweep"},
		{"provider", "PAYMENT_PROVIDER", "paypal"},
		{"Stripe API URL", "STRIPE_API_URL", "::"},
		{"operator scope", "OPERATOR_SCOPE", "bike rental"},
		{"webhook secret", "PAYMENT_WEBHOOK_SECRET", "short"},
		{"max pending", "MAX_PENDING_PER_RENTER", "-1"},
		{"metrics service", "METRICS_SERVICE", " "},
		{"events table", "EVENTS_TABLE", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := noChildren(t)
			getenv := func(k string) string {
				if k == tc.variable {
					return tc.value
				}
				return good[k]
			}
			up, err := StartWith(context.Background(), Options{Getenv: getenv})
			if err == nil {
				up.Stop()
				t.Fatal("StartWith accepted the setting")
			}
			if !strings.Contains(err.Error(), tc.variable) {
				t.Errorf("StartWith = %v, want an error naming %s", err, tc.variable)
			}
			if len(*started) > 0 {
				t.Errorf("StartWith started %v before refusing %s=%q", *started, tc.variable, tc.value)
			}
			if err := CheckSettings(getenv); err == nil || !strings.Contains(err.Error(), tc.variable) {
				t.Errorf("CheckSettings = %v, want an error naming %s", err, tc.variable)
			}
		})
	}
	t.Run("control: good settings start the children", func(t *testing.T) {
		started := noChildren(t)
		getenv := func(k string) string { return good[k] }
		if err := CheckSettings(getenv); err != nil {
			t.Fatalf("CheckSettings = %v", err)
		}
		if _, err := StartWith(context.Background(), Options{Getenv: getenv}); err == nil {
			t.Fatal("StartWith succeeded without its children")
		}
		if len(*started) == 0 {
			t.Error("StartWith reached no child's start")
		}
	})
}
