// Package wiring reads the service's settings from environment variables and builds
// the parts every function shares (the event store, the Deadlines table, the kinds of
// deadline, stream batches), so that the Lambda functions and the local runner are
// configured the same way. Each function's own recipe is a package beside it
// (commandfn, processfn, projectorfn, sweepfn); this one imports nothing of the HTTP
// API, the payment providers, the schedules or the sweep, which only some functions
// run. The AWS SDK
// reads its own variables too: AWS_REGION, credentials, and AWS_ENDPOINT_URL, which
// points every client at a local emulator instead of AWS.
package wiring

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/eventstore"
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
	// EnvDeadlinesTable names the Deadlines table. Optional for the command
	// function (GET /payments/pending answers 501 without it).
	EnvDeadlinesTable = "DEADLINES_TABLE"
	// EnvDeadlinesShards is the number of write shards of the Deadlines table's index (4).
	EnvDeadlinesShards = "DEADLINES_SHARDS"
	// EnvMarkerTTL is how long a settled payment's marker is kept (72h).
	EnvMarkerTTL = "SETTLED_MARKER_TTL"
	// EnvPaymentTimeout is how long a payment may stay outstanding (15m).
	EnvPaymentTimeout = "PAYMENT_TIMEOUT"
	// EnvSweepConcurrency is how many cancellations a sweep sends at once (8).
	EnvSweepConcurrency = "SWEEP_CONCURRENCY"
	// EnvSweepRate is the schedule expression the sweep runs at (rate(1 minute)):
	// the sweep backs off its sends by it (SweepInterval).
	EnvSweepRate = "SWEEP_RATE"
	// EnvStuckGrace is how long past PAYMENT_TIMEOUT a rental's process may stay
	// open before the sweep reports it stuck (10m).
	EnvStuckGrace = "STUCK_GRACE"
	// EnvStuckRepair is "auto" (the default: the sweep repairs the stuck rentals
	// that need no operator) or "off" (it only reports them).
	EnvStuckRepair = "STUCK_REPAIR"
	// EnvMetricsService is the Service dimension of the service's metrics (the
	// sweep's and RefundsOwed), which tells deployments apart ("bikerental"; the
	// template sets bikerental-<stage>, the local stack bikerental-local).
	EnvMetricsService = "METRICS_SERVICE"
	// EnvMaxPendingPerRenter is how many outstanding requests one renter may have at
	// once (1); the command function reads it.
	EnvMaxPendingPerRenter = "MAX_PENDING_PER_RENTER"
	// EnvOperatorScope is the token scope that opens operator routes
	// (bikerental/operator); the command function reads it.
	EnvOperatorScope = "OPERATOR_SCOPE"
	// EnvStreamConcurrency is how many event streams' records the process and the
	// projector handle at once within one stream batch (awslambda.DefaultConcurrency,
	// at most awslambda.MaxConcurrency); 1 handles a batch one record at a time.
	EnvStreamConcurrency = "STREAM_CONCURRENCY"
)

// DefaultPrice is the price of a rental when none is configured.
var DefaultPrice = process.Price{Amount: 1500, Currency: "EUR"}

// Getenv reads one environment variable; os.Getenv is one.
type Getenv func(string) string

// ErrMissingSetting reports a required environment variable that is not set.
// Every such error is a *SettingError.
var ErrMissingSetting = errors.New("missing setting")

func required(getenv Getenv, name, want string) (string, error) {
	v := getenv(name)
	if v == "" {
		return "", MissingSetting(name, want)
	}
	return v, nil
}

// EventStore returns the DynamoDB event store on the table EVENTS_TABLE names.
func EventStore(cfg aws.Config, getenv Getenv) (*dynamo.Store, error) {
	name, err := table(getenv, EnvEventsTable, true)
	if err != nil {
		return nil, err
	}
	return dynamo.New(dynamodb.NewFromConfig(cfg), name), nil
}

// Process builds the rental-payment process on store, sending its commands through
// commands, configured by RECORDING_MODE and RentalPrice.
func Process(store eventstore.Store, commands *command.Handler, getenv Getenv, logger *slog.Logger, opts ...func(*process.Config)) (*process.Process, error) {
	mode, err := RecordingMode(getenv)
	if err != nil {
		return nil, err
	}
	price, err := RentalPrice(getenv)
	if err != nil {
		return nil, err
	}
	cfg := process.Config{Store: store, Commands: commands, Mode: mode, Price: price, Logger: logger}
	for _, o := range opts {
		o(&cfg)
	}
	return process.New(cfg)
}

// DeadlineTable returns the Deadlines table DEADLINES_TABLE names, projecting
// kinds, its rows spread over DEADLINES_SHARDS and its settled markers kept for
// SETTLED_MARKER_TTL; nil when DEADLINES_TABLE is not set.
func DeadlineTable(cfg aws.Config, getenv Getenv, kinds deadlines.Kinds) (*deadlinetable.Table, error) {
	return deadlineTable(cfg, getenv, kinds, true)
}

// deadlineTable is DeadlineTable, reading SETTLED_MARKER_TTL only for a writer.
func deadlineTable(cfg aws.Config, getenv Getenv, kinds deadlines.Kinds, writes bool) (*deadlinetable.Table, error) {
	set, err := deadlineTableSettings(getenv, false, writes)
	if err != nil || set.table == "" {
		return nil, err
	}
	t, err := deadlinetable.New(dynamodb.NewFromConfig(cfg), set.table, kinds, deadlinetable.WithShards(set.shards), deadlinetable.WithMarkerTTL(set.ttl))
	if err != nil {
		return nil, fmt.Errorf("wiring: %w", err)
	}
	return t, nil
}

// DeadlineProjection is DeadlineTable over the kinds of deadline as DeadlineKinds
// declares them, from PAYMENT_TIMEOUT, STUCK_GRACE and RENTAL_PERIOD: for every
// writer of rows (the projector, a rebuild, a repair), whose stamps depend on them.
func DeadlineProjection(cfg aws.Config, getenv Getenv) (*deadlinetable.Table, error) {
	kinds, err := DeadlineKinds(getenv, deadlinekinds.Receivers{})
	if err != nil {
		return nil, err
	}
	return DeadlineTable(cfg, getenv, kinds)
}

// DeadlinesReader returns the to-do list's listings for the functions that only
// read it (the API, the CLI), or nil if DEADLINES_TABLE is not set.
func DeadlinesReader(cfg aws.Config, getenv Getenv) (*deadlinekinds.Listing, error) {
	kinds, err := DeadlineKinds(getenv, deadlinekinds.Receivers{})
	if err != nil {
		return nil, err
	}
	t, err := deadlineTable(cfg, getenv, kinds, false)
	if err != nil || t == nil {
		return nil, err
	}
	return &deadlinekinds.Listing{Index: t, Kinds: kinds}, nil
}

// DeadlinePolicy returns the rule of when a payment is overdue and a rental stuck,
// from PAYMENT_TIMEOUT (15m) and STUCK_GRACE (10m): the one place they are read, for
// the sweep, the payments' one-time schedules and the CLI.
func DeadlinePolicy(getenv Getenv) (deadlinekinds.Policy, error) {
	timeout, err := durationSetting(getenv, EnvPaymentTimeout, deadlinekinds.DefaultTimeout)
	if err != nil {
		return deadlinekinds.Policy{}, err
	}
	grace, err := durationSetting(getenv, EnvStuckGrace, deadlinekinds.DefaultGrace)
	if err != nil {
		return deadlinekinds.Policy{}, err
	}
	policy, err := deadlinekinds.NewPolicy(timeout, grace)
	if err != nil {
		return deadlinekinds.Policy{}, bad(EnvPaymentTimeout, getenv(EnvPaymentTimeout), fmt.Sprintf("a positive duration, with %s one too (%v)", EnvStuckGrace, err))
	}
	return policy, nil
}

// DefaultMetricsService is the Service dimension of the metrics when
// METRICS_SERVICE is not set.
const DefaultMetricsService = "bikerental"

// Int reads a whole-number setting, def when unset; it must be at least 1. The
// error wraps ErrBadSetting and names the variable.
func Int(getenv Getenv, name string, def int) (int, error) { return intSetting(getenv, name, def) }

// Required reads a setting that must be set; an empty one is a SettingError
// (ErrMissingSetting) saying it wants want.
func Required(getenv Getenv, name, want string) (string, error) { return required(getenv, name, want) }

// Duration reads a duration setting such as 15m, def when unset; it must be
// positive. The error wraps ErrBadSetting and names the variable.
func Duration(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	return durationSetting(getenv, name, def)
}
