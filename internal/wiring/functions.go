package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
	"github.com/bikerental/bikerental/internal/wiring/awsenv"
)

// Builder builds one Lambda function's handler from the environment.
type Builder func(ctx context.Context, cfg aws.Config, getenv Getenv, logger *slog.Logger, stdout io.Writer) (any, error)

// Run is the whole of a function's main: it loads the AWS configuration, builds the
// handler with build from the process's environment and starts the Lambda runtime. It
// logs JSON, at LOG_LEVEL (info). A configuration error is logged and ends the
// process with status 1, at cold start, before any event is taken.
//
// The AWS configuration comes from the environment alone (awsenv.Load: region,
// credentials, endpoints and retry settings), not from config.LoadDefaultConfig,
// whose shared-config, SSO, STS and IMDS clients Lambda never needs but every cold
// start would initialise (see cmd/startupbench).
func Run(build Builder) {
	level, levelErr := LogLevel(os.Getenv)
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
	ctx := context.Background()
	cfg, err := awsenv.Load(os.Getenv)
	err = errors.Join(levelErr, err)
	var handler any
	if err == nil {
		handler, err = build(ctx, cfg, os.Getenv, logger, os.Stdout)
	}
	if err != nil {
		logger.Error("start-up failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(handler)
}

// ErrNoDeadlinesTable reports a function that needs the Deadlines table started
// without DEADLINES_TABLE; it is a SettingError, ErrMissingSetting.
var ErrNoDeadlinesTable = MissingSetting(EnvDeadlinesTable, "the Deadlines table's name or ARN")

// StreamHandler is the handler of a function on the Events table's stream.
type StreamHandler = func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// ProcessFunction builds the rental-payment process's stream handler, its commands
// configured by opts (Commands: the payment provider, in wiring/paymentfn, which the
// mains use; the generic provider when opts set none).
// It checks its settings (CheckProcess) before it creates any client.
func ProcessFunction(opts ...command.Option) Builder {
	return func(ctx context.Context, cfg aws.Config, getenv Getenv, logger *slog.Logger, stdout io.Writer) (any, error) {
		return processFunction(ctx, cfg, getenv, logger, stdout, opts)
	}
}

func processFunction(_ context.Context, cfg aws.Config, getenv Getenv, logger *slog.Logger, stdout io.Writer, opts []command.Option) (any, error) {
	if err := CheckProcess(getenv); err != nil {
		return nil, err
	}
	store, err := EventStore(cfg, getenv)
	if err != nil {
		return nil, err
	}
	batch, err := StreamBatch(getenv, logger)
	if err != nil {
		return nil, err
	}
	service, err := MetricsService(getenv)
	if err != nil {
		return nil, err
	}
	// Its metrics go to stdout in Embedded Metric Format.
	process, err := Process(store, Commands(store, opts...), getenv, logger, func(c *process.Config) {
		c.Metrics, c.MetricsService = emf.NewWriter(stdout), service
	})
	if err != nil {
		return nil, err
	}
	// A record that cannot be handled yet is parked in the Deadlines table,
	// when there is one, rather than holding up its shard's later records.
	projection, err := Projection(cfg, getenv)
	if err != nil {
		return nil, err
	}
	if projection != nil {
		batch.Park = Park(projection, eventfilter.Process)
	}
	return StreamHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return streambatch.HandleBatch(ctx, ev, process.Handle, batch), nil
	}), nil
}

// SweepHandler is the sweep function's handler: the invocation's input is the
// scheduler's (or an EventBridge rule's) event.
type SweepHandler = func(context.Context, json.RawMessage) (sweep.Summary, error)

// SweepFunction builds the sweep's handler, its commands configured by opts; its
// metrics go to stdout in Embedded Metric Format. It checks its settings
// (CheckSweep) before it creates any client.
func SweepFunction(opts ...command.Option) Builder {
	return func(ctx context.Context, cfg aws.Config, getenv Getenv, logger *slog.Logger, stdout io.Writer) (any, error) {
		return sweepFunction(ctx, cfg, getenv, logger, stdout, opts)
	}
}

func sweepFunction(_ context.Context, cfg aws.Config, getenv Getenv, logger *slog.Logger, stdout io.Writer, opts []command.Option) (any, error) {
	sweeper, err := Sweep(cfg, getenv, logger, emf.NewWriter(stdout), opts...)
	if err != nil {
		return nil, err
	}
	return SweepHandler(func(ctx context.Context, input json.RawMessage) (sweep.Summary, error) {
		trigger, err := deadline.ParseTrigger(input, sweeper.Deadlines.Kinds)
		if err != nil {
			return sweep.Summary{}, err
		}
		clock := time.Now()
		if trigger.OneRow() {
			return sweeper.SweepOne(ctx, trigger.Kind, trigger.Key, clock)
		}
		now, err := trigger.Now(clock)
		if err != nil {
			return sweep.Summary{}, err
		}
		return sweeper.Sweep(ctx, now)
	}), nil
}
