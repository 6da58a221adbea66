package wiring_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/webhook"
	"github.com/bikerental/bikerental/internal/wiring"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func env(vars map[string]string) wiring.Getenv { return func(k string) string { return vars[k] } }

func TestWebhookSecretFromSecretsManager(t *testing.T) {
	client := secretsmanager.NewFromConfig(emulatortest.Config(t))
	ctx := context.Background()
	const value = "from-secrets-manager-0123456789"
	name := emulatortest.TableName(t, "webhook")
	if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}); err != nil {
		t.Fatal(err)
	}
	v, err := wiring.WebhookVerifier(ctx, client, env(map[string]string{
		wiring.EnvWebhookSecretID: name,
		wiring.EnvWebhookSecret:   "the-environment-loses-0123456789",
	}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := v.Verify(webhook.Sign([]byte(value), []byte("{}"), now), []byte("{}"), now); err != nil {
		t.Errorf("a signature made with the stored secret does not verify: %v", err)
	}
	if err := v.Verify(webhook.Sign([]byte("the-environment-loses-0123456789"), []byte("{}"), now), []byte("{}"), now); err == nil {
		t.Errorf("with a secret id set, the environment's secret must not be used")
	}

	_, err = wiring.WebhookVerifier(ctx, client, env(map[string]string{wiring.EnvWebhookSecretID: "missing-secret"}))
	if err == nil || !strings.Contains(err.Error(), "missing-secret") {
		t.Errorf("a missing secret: err = %v", err)
	}
}

func TestWebhookSecretFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	if _, err := wiring.WebhookVerifier(ctx, nil, env(nil)); !errors.Is(err, wiring.ErrMissingSetting) {
		t.Errorf("no secret at all: err = %v, want ErrMissingSetting", err)
	}
	_, err := wiring.WebhookVerifier(ctx, nil, env(map[string]string{wiring.EnvWebhookSecret: "short"}))
	if err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("a too-short secret: err = %v (must fail without quoting it)", err)
	}
	if _, err := wiring.WebhookVerifier(ctx, nil, env(map[string]string{wiring.EnvWebhookSecret: "long-enough-secret-0123"})); err != nil {
		t.Errorf("a good secret: %v", err)
	}
}

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
