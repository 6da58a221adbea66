// Package wiring builds the service's parts from environment variables, so that the
// Lambda functions and the local runner are configured the same way. The AWS SDK
// reads its own variables too: AWS_REGION, credentials, and AWS_ENDPOINT_URL, which
// points every client at a local emulator instead of AWS.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/api"
	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
	"github.com/bikerental/bikerental/internal/rentalpayment"
	"github.com/bikerental/bikerental/internal/webhook"
)

// Environment variables the service reads.
const (
	// EnvEventsTable names the Events table.
	EnvEventsTable = "EVENTS_TABLE"
	// EnvWebhookSecretID names a Secrets Manager secret (name or ARN) whose string
	// value is the payment provider's webhook secret. It is what AWS deployments set.
	EnvWebhookSecretID = "PAYMENT_WEBHOOK_SECRET_ID"
	// EnvWebhookSecret is the webhook secret itself, for local runs and tests.
	EnvWebhookSecret = "PAYMENT_WEBHOOK_SECRET"
	// EnvRecordingMode selects how the rental-payment process records its events:
	// "append" (the default) or "command".
	EnvRecordingMode = "RECORDING_MODE"
	// EnvRentalPrice is what a rental costs, in minor units (cents); 1500 by default.
	EnvRentalPrice = "RENTAL_PRICE_CENTS"
	// EnvRentalCurrency is the ISO 4217 currency of the price; EUR by default.
	EnvRentalCurrency = "RENTAL_CURRENCY"
)

// DefaultPrice is the price of a rental when none is configured.
var DefaultPrice = rentalpayment.Price{Amount: 1500, Currency: "EUR"}

// Getenv reads one environment variable; os.Getenv is one.
type Getenv func(string) string

// ErrMissingSetting reports a required environment variable that is not set.
var ErrMissingSetting = errors.New("wiring: required setting missing")

// AWSConfig loads the AWS SDK's default configuration.
func AWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("wiring: load AWS configuration: %w", err)
	}
	return cfg, nil
}

func required(getenv Getenv, name string) (string, error) {
	v := getenv(name)
	if v == "" {
		return "", fmt.Errorf("%w: %s", ErrMissingSetting, name)
	}
	return v, nil
}

// EventStore returns the DynamoDB event store on the table EVENTS_TABLE names.
func EventStore(cfg aws.Config, getenv Getenv) (*dynamo.Store, error) {
	table, err := required(getenv, EnvEventsTable)
	if err != nil {
		return nil, err
	}
	return dynamo.New(dynamodb.NewFromConfig(cfg), table), nil
}

// SecretReader is the part of the Secrets Manager client WebhookVerifier uses.
type SecretReader interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// WebhookVerifier returns the verifier of the payment provider's signatures. The
// secret comes from the Secrets Manager secret PAYMENT_WEBHOOK_SECRET_ID names, read
// once (at cold start), or else from PAYMENT_WEBHOOK_SECRET. Errors never include
// the secret.
func WebhookVerifier(ctx context.Context, secrets SecretReader, getenv Getenv) (*webhook.Verifier, error) {
	var secret string
	if id := getenv(EnvWebhookSecretID); id != "" {
		out, err := secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			return nil, fmt.Errorf("wiring: read webhook secret %s: %w", id, err)
		}
		secret = aws.ToString(out.SecretString)
	} else {
		var err error
		if secret, err = required(getenv, EnvWebhookSecret); err != nil {
			return nil, fmt.Errorf("%w (or %s)", err, EnvWebhookSecretID)
		}
	}
	v, err := webhook.NewVerifier([]byte(secret), webhook.DefaultTolerance)
	if err != nil {
		return nil, fmt.Errorf("wiring: webhook secret: %w", err)
	}
	return v, nil
}

// Process builds the rental-payment process on store, sending its commands through
// commands, configured by RECORDING_MODE, RENTAL_PRICE_CENTS and RENTAL_CURRENCY.
func Process(store eventstore.Store, commands *command.Handler, getenv Getenv, logger *slog.Logger) (*rentalpayment.Process, error) {
	mode, err := rentalpayment.ParseRecordingMode(getenv(EnvRecordingMode))
	if err != nil {
		return nil, fmt.Errorf("wiring: %s: %w", EnvRecordingMode, err)
	}
	price := DefaultPrice
	if v := getenv(EnvRentalPrice); v != "" {
		if price.Amount, err = strconv.ParseInt(v, 10, 64); err != nil || price.Amount <= 0 {
			return nil, fmt.Errorf("wiring: %s=%q: want a positive whole number of cents", EnvRentalPrice, v)
		}
	}
	if v := getenv(EnvRentalCurrency); v != "" {
		price.Currency = v
	}
	return rentalpayment.New(rentalpayment.Config{
		Store: store, Commands: commands, Mode: mode, Price: price, Logger: logger,
	})
}

// Service is the service's parts, wired together.
type Service struct {
	Store    *dynamo.Store
	Commands *command.Handler
	Process  *rentalpayment.Process
	API      *api.API
}

// Build wires every part from the environment.
func Build(ctx context.Context, cfg aws.Config, getenv Getenv, logger *slog.Logger) (*Service, error) {
	store, err := EventStore(cfg, getenv)
	if err != nil {
		return nil, err
	}
	verifier, err := WebhookVerifier(ctx, secretsmanager.NewFromConfig(cfg), getenv)
	if err != nil {
		return nil, err
	}
	commands := command.New(store)
	process, err := Process(store, commands, getenv, logger)
	if err != nil {
		return nil, err
	}
	return &Service{
		Store:    store,
		Commands: commands,
		Process:  process,
		API: api.New(api.Config{
			Commands:  commands,
			Webhook:   verifier,
			Canceller: process,
			Logger:    logger,
		}),
	}, nil
}
