// Package commandfn builds the command function: the HTTP API, the operator console's
// settings, and the webhooks' secret, which it alone reads; the only function that
// links the HTTP API.
package commandfn

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/adapters/secrets"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// WebhookVerifier returns the verifier of the payment provider's signatures. The
// secret comes from the Secrets Manager secret PAYMENT_WEBHOOK_SECRET_ID names, read
// once (at cold start), or else from PAYMENT_WEBHOOK_SECRET. Errors never include
// the secret.
func WebhookVerifier(ctx context.Context, reader secrets.Source, getenv wiring.Getenv) (*webhook.Verifier, error) {
	id, err := wiring.SecretID(getenv, wiring.EnvWebhookSecretID)
	if err != nil {
		return nil, err
	}
	var secret string
	if id != "" {
		out, err := reader.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			return nil, fmt.Errorf("wiring: read webhook secret %s: %w", id, err)
		}
		secret = aws.ToString(out.SecretString)
	} else {
		if secret, err = wiring.Required(getenv, wiring.EnvWebhookSecret, secretWant+", or "+wiring.EnvWebhookSecretID+" naming it in Secrets Manager"); err != nil {
			return nil, err
		}
	}
	v, err := webhook.NewVerifier([]byte(secret), webhook.DefaultTolerance)
	if err != nil {
		if id != "" {
			return nil, wiring.BadSecret(wiring.EnvWebhookSecretID, fmt.Sprintf("a secret whose value is %s (the secret %s is %d bytes)", secretWant, id, len(secret)))
		}
		return nil, wiring.BadSecret(wiring.EnvWebhookSecret, fmt.Sprintf("%s (it is %d bytes)", secretWant, len(secret)))
	}
	return v, nil
}

// secretWant is what the webhook secret takes.
var secretWant = fmt.Sprintf("a webhook secret of at least %d bytes", webhook.MinSecretLen)

// Check validates, touching nothing, every setting Build reads: MAX_PENDING_PER_RENTER,
// the payment provider's (paymentfn.Check), Core's (wiring.CheckCore),
// OPERATOR_SCOPE, PAYMENT_TIMEOUT, STUCK_GRACE and RENTAL_PERIOD (the kinds of
// deadline GET /deadlines lists), the console's (CONSOLE_SIGN_IN and its
// companions, OPERATOR_GROUP), and PAYMENT_WEBHOOK_SECRET_ID or else PAYMENT_WEBHOOK_SECRET (at
// least webhook.MinSecretLen bytes). A secret read from Secrets Manager can only be
// checked once read, by WebhookVerifier.
func Check(getenv wiring.Getenv) error {
	if _, err := wiring.Int(getenv, wiring.EnvMaxPendingPerRenter, renter.DefaultMaxPending); err != nil {
		return err
	}
	if err := paymentfn.Check(getenv); err != nil {
		return err
	}
	if err := wiring.CheckCore(getenv); err != nil {
		return err
	}
	if _, err := wiring.Token(getenv, wiring.EnvOperatorScope); err != nil {
		return err
	}
	if _, err := wiring.DeadlineKinds(getenv, deadlinekinds.Receivers{}); err != nil {
		return err // GET /deadlines says when rows fall due by them
	}
	if err := checkConsole(getenv); err != nil {
		return err
	}
	id, err := wiring.SecretID(getenv, wiring.EnvWebhookSecretID)
	if err != nil || id != "" {
		return err
	}
	_, err = WebhookVerifier(context.Background(), nil, getenv)
	return err
}

// Service is the command function's parts: those it shares with the sweep, and the
// HTTP API on them.
type Service struct {
	*paymentfn.Service
	API *httpapi.API
}

// Build wires every part, the HTTP API included, which needs the webhook secret,
// once Check passed: a bad setting is refused before any AWS client is made.
func Build(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger) (*Service, error) {
	if err := Check(getenv); err != nil {
		return nil, err
	}
	maxPending, err := wiring.Int(getenv, wiring.EnvMaxPendingPerRenter, renter.DefaultMaxPending)
	if err != nil {
		return nil, err
	}
	reader := secrets.New(cfg)
	pay, err := paymentfn.Provider(ctx, func() secrets.Source { return reader }, getenv)
	if err != nil {
		return nil, err
	}
	core, err := paymentfn.Core(cfg, getenv, logger, command.WithMaxPending(maxPending), pay.Option())
	if err != nil {
		return nil, err
	}
	s := &Service{Service: core}
	verifier, err := WebhookVerifier(ctx, reader, getenv)
	if err != nil {
		return nil, err
	}
	scope, err := wiring.Token(getenv, wiring.EnvOperatorScope)
	if err != nil {
		return nil, err
	}
	apiCfg := httpapi.Config{Commands: s.Commands, Webhook: verifier, Canceller: s.Process, Deadlines: s.Deadlines, Logger: logger, OperatorScope: scope}
	if pay.Stripe != nil {
		apiCfg.Stripe = pay.Stripe
	}
	if apiCfg.Console, err = ConsoleSignIn(getenv); err != nil {
		return nil, err
	}
	if apiCfg.OperatorGroup, err = OperatorGroup(getenv); err != nil {
		return nil, err
	}
	apiCfg.ConsoleClientID = apiCfg.Console.ClientID
	s.API = httpapi.New(apiCfg)
	return s, nil
}

// checkConsole validates the console's settings.
func checkConsole(getenv wiring.Getenv) error {
	if _, err := ConsoleSignIn(getenv); err != nil {
		return err
	}
	_, err := OperatorGroup(getenv)
	return err
}

// CommandFunction builds the HTTP API handler.
func CommandFunction(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, _ io.Writer) (any, error) {
	s, err := Build(ctx, cfg, getenv, logger)
	if err != nil {
		return nil, err
	}
	return s.API.Handle, nil
}
