package commandfn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
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
	v, err := commandfn.WebhookVerifier(ctx, client, env(map[string]string{
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

	_, err = commandfn.WebhookVerifier(ctx, client, env(map[string]string{wiring.EnvWebhookSecretID: "missing-secret"}))
	if err == nil || !strings.Contains(err.Error(), "missing-secret") {
		t.Errorf("a missing secret: err = %v", err)
	}
}

func TestWebhookSecretFromTheEnvironment(t *testing.T) {
	ctx := context.Background()
	if _, err := commandfn.WebhookVerifier(ctx, nil, env(nil)); !errors.Is(err, wiring.ErrMissingSetting) {
		t.Errorf("no secret at all: err = %v, want ErrMissingSetting", err)
	}
	_, err := commandfn.WebhookVerifier(ctx, nil, env(map[string]string{wiring.EnvWebhookSecret: "short"}))
	if err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("a too-short secret: err = %v (must fail without quoting it)", err)
	}
	if _, err := commandfn.WebhookVerifier(ctx, nil, env(map[string]string{wiring.EnvWebhookSecret: "long-enough-secret-0123"})); err != nil {
		t.Errorf("a good secret: %v", err)
	}
}
