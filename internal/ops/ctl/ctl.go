// Package ctl is the work of rentalctl's commands: it opens what each command needs
// from the settings it is given, as the service's functions open them, runs the
// command, and returns what it found as a document for the command line to print.
// The command line (cmd/rentalctl) keeps the flags, the output and the exit codes.
package ctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/operatorenv"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// The defaults of the settings rentalctl's flags stand for, as the service's
// functions have them.
const (
	DefaultShards      = deadlinetable.DefaultShards
	DefaultTimeout     = deadlinekinds.DefaultTimeout
	DefaultGrace       = deadlinekinds.DefaultGrace
	DefaultConcurrency = deadlines.DefaultConcurrency
)

// SettingsError is a setting a command was given that the service refuses (a
// variable, or a flag that stands for one): the command line's mistake, found
// before anything was read or written. Its text is the refusal's.
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

// settings marks err, from internal/wiring (which only ever fails on settings) or
// from opening the payment provider, as a SettingsError; nil stays nil.
func settings(err error) error {
	if err == nil {
		return nil
	}
	return &SettingsError{Err: err}
}

// Stack is the service rentalctl works on, the local stack or AWS: the AWS
// configuration and the settings the service's functions read.
type Stack struct {
	cfg    aws.Config
	getenv func(string) string
	logger *slog.Logger
}

// Open loads the AWS configuration for the commands run on the stack. getenv is the
// environment, with the command's flags in place of the variables they stand for:
// every setting a command reads is read through it (and the AWS SDK's own, such
// as AWS_PROFILE, by the SDK), so that it can be listed. logger is what the
// service's parts log their warnings through.
//
// The region, endpoint and static credentials getenv gives override what the SDK
// found itself; with os.Getenv that changes nothing, and tests can point rentalctl
// elsewhere without touching the process's environment.
func Open(ctx context.Context, getenv func(string) string, logger *slog.Logger) (*Stack, error) {
	var opts []func(*config.LoadOptions) error
	if region := getenv(operatorenv.AWSRegion); region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if endpoint := getenv(operatorenv.AWSEndpoint); endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(endpoint))
	}
	if id, secret := getenv(operatorenv.AWSKeyID), getenv(operatorenv.AWSSecretKey); id != "" && secret != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, getenv(operatorenv.AWSSession))))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return &Stack{cfg: cfg, getenv: getenv, logger: logger}, nil
}

// eventsTable and deadlinesTable are the tables' names, as the settings give them.
func (s *Stack) eventsTable() string    { return s.getenv(wiring.EnvEventsTable) }
func (s *Stack) deadlinesTable() string { return s.getenv(wiring.EnvDeadlinesTable) }

// store is the event store on the Events table.
func (s *Stack) store() (*dynamo.Store, error) {
	store, err := wiring.EventStore(s.cfg, s.getenv)
	return store, settings(err)
}

// listing reads the Deadlines table's rows, each kind's through its own
// partitions of the index, in the shapes operators read them.
func (s *Stack) listing() (*deadlinekinds.Listing, error) {
	l, err := wiring.DeadlinesReader(s.cfg, s.getenv)
	if err == nil && l == nil {
		err = wiring.ErrNoDeadlinesTable
	}
	return l, settings(err)
}

// policy is when a payment is overdue and a rental stuck.
func (s *Stack) policy() (deadlinekinds.Policy, error) {
	p, err := wiring.DeadlinePolicy(s.getenv)
	return p, settings(err)
}

// provider is the command handler's option that reaches the payment provider
// PAYMENT_PROVIDER names, as the functions' commands do.
func (s *Stack) provider(ctx context.Context) (command.Option, error) {
	pay, err := paymentfn.Load(ctx, s.cfg, s.getenv)
	return pay.Option(), settings(err)
}

// process is the rental-payment process on store, its commands reaching the
// payment provider.
func (s *Stack) process(ctx context.Context, store *dynamo.Store) (*process.Process, error) {
	provider, err := s.provider(ctx)
	if err != nil {
		return nil, err
	}
	p, err := wiring.Process(store, command.New(store, provider), s.getenv, s.logger)
	return p, settings(err)
}

// IsSettings reports whether err is, or wraps, a SettingsError.
func IsSettings(err error) bool {
	var bad *SettingsError
	return errors.As(err, &bad)
}
