package wiring_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/wiring"
)

// TestASettingIsRefusedInOneForm: a refused setting reads `bad setting NAME="value":
// want …`, a secret one never quotes its value, an unset one reads `missing setting
// NAME: want …`; each is ErrBadSetting or ErrMissingSetting (not both), and Refused
// finds it under any chain of wrapping.
func TestASettingIsRefusedInOneForm(t *testing.T) {
	for _, tc := range []struct {
		err      error
		text     string
		bad      bool
		leaksNot string
	}{
		{wiring.BadSetting("PORT", `80"80`, "a port number"), `bad setting PORT="80\"80": want a port number`, true, ""},
		{wiring.BadSecret("PAYMENT_WEBHOOK_SECRET", "at least 16 bytes"), `bad setting PAYMENT_WEBHOOK_SECRET (not shown): want at least 16 bytes`, true, ""},
		{wiring.MissingSetting("EVENTS_TABLE", "a table's name"), `missing setting EVENTS_TABLE: want a table's name`, false, ""},
	} {
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("Error() = %q, want %q", got, tc.text)
		}
		if errors.Is(tc.err, wiring.ErrBadSetting) != tc.bad || errors.Is(tc.err, wiring.ErrMissingSetting) == tc.bad {
			t.Errorf("%v: Is(ErrBadSetting) = %v, Is(ErrMissingSetting) = %v", tc.err, errors.Is(tc.err, wiring.ErrBadSetting), errors.Is(tc.err, wiring.ErrMissingSetting))
		}
		wrapped := fmt.Errorf("local: command function: %w", fmt.Errorf("build: %w", tc.err))
		if se, ok := wiring.Refused(wrapped); !ok || se.Error() != tc.text {
			t.Errorf("Refused(%v) = %v, %v", wrapped, se, ok)
		}
	}
	if _, ok := wiring.Refused(errors.New("the API's address is in use")); ok {
		t.Error("Refused found a setting in an error that holds none")
	}
	// A secret's value is not in its refusal, whatever it holds.
	_, err := wiring.Required(func(string) string { return "" }, "STRIPE_SECRET_KEY", "a key")
	if err == nil || strings.Contains(err.Error(), "sk_") {
		t.Errorf("Required = %v", err)
	}
}
