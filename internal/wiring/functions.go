package wiring

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

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
