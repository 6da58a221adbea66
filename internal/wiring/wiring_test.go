package wiring_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func env(vars map[string]string) wiring.Getenv { return func(k string) string { return vars[k] } }

func TestEventStoreNeedsItsTable(t *testing.T) {
	if _, err := wiring.EventStore(aws.Config{}, env(nil)); !errors.Is(err, wiring.ErrMissingSetting) {
		t.Errorf("err = %v, want ErrMissingSetting", err)
	}
}

func TestProcessSettings(t *testing.T) {
	store := eventstore.NewMemory()
	for _, tc := range []struct {
		name string
		vars map[string]string
		ok   bool
	}{
		{"defaults", nil, true},
		{"command mode", map[string]string{wiring.EnvRecordingMode: "command"}, true},
		{"unknown mode", map[string]string{wiring.EnvRecordingMode: "carrier-pigeon"}, false},
		{"price", map[string]string{wiring.EnvRentalPrice: "990", wiring.EnvRentalCurrency: "CHF"}, true},
		{"price not a number", map[string]string{wiring.EnvRentalPrice: "9.90"}, false},
		{"negative price", map[string]string{wiring.EnvRentalPrice: "-1"}, false},
		{"bad currency", map[string]string{wiring.EnvRentalCurrency: "euro"}, false},
	} {
		_, err := wiring.Process(store, command.New(store), env(tc.vars), nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
