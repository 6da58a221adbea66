package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Functions are the four Lambda functions, however they are invoked.
type Functions struct {
	Command, Process, Projector, Sweep Invoker
}

// InProcessFunctions builds the four functions in this process from the environment,
// with the builders their mains run (lambdas.All).
func InProcessFunctions(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger) (Functions, error) {
	return buildFunctions(ctx, cfg, getenv, Options{Logger: logger})
}

// Stack is the local stand-in for AWS around the functions.
type Stack struct {
	// AWS reaches DynamoDB and DynamoDB Streams (the emulator, usually).
	AWS aws.Config
	// EventsTable and DeadlinesTable are the tables' names.
	EventsTable, DeadlinesTable string
	// Addr is where the HTTP API listens, e.g. "127.0.0.1:3000".
	Addr string
	// SweepInterval is how often the sweep runs.
	SweepInterval time.Duration
	Functions     Functions
	Logger        *slog.Logger
	// MaxRetryAttempts, when positive, is each stream mapping's limit on the retries
	// of a failing record before it goes to the dead-letter destination. Zero sets
	// none, as the template's MaximumRetryAttempts -1: the record's age bounds the
	// retries (MaxRecordAge).
	MaxRetryAttempts int
	// MaxRecordAge is each stream mapping's maximum record age, as the template's
	// MaximumRecordAgeInSeconds: a record still failing when older than this goes to
	// the dead-letter destination (DefaultMaxRecordAge if zero).
	MaxRecordAge time.Duration
	// Parallelization is each stream mapping's ParallelizationFactor: how many
	// batches of a shard are delivered at once, split by partition key
	// (DefaultParallelization if zero).
	Parallelization int

	// DeadlineGroup, when set, is the schedule group of the payments' one-time
	// schedules (precise deadlines), which the stack fires as Scheduler would.
	DeadlineGroup string
	// DeadlinePoll is how often due one-time schedules are looked for
	// (DefaultDeadlinePoll if zero).
	DeadlinePoll time.Duration

	// OperatorScope is the token scope of operator routes (api.DefaultOperatorScope
	// if empty); the command function must be configured with the same.
	OperatorScope string

	// Throttling, when set, is the stage's throttling the gateway plays (see
	// TemplateThrottling); nil throttles nothing.
	Throttling *Throttling
	// Edge, when set, is the web ACL the gateway plays in front of the throttling
	// (see TemplateEdge); nil plays none.
	Edge *Edge

	mu          sync.Mutex
	deadLetters []DeadLetter
}

// DefaultMaxRecordAge is the local stream mappings' maximum record age: the
// template's MaximumRecordAgeInSeconds.
const DefaultMaxRecordAge = time.Hour

// DefaultParallelization is the local stream mappings' ParallelizationFactor: the
// template's StreamParallelization default.
const DefaultParallelization = 2

// DeadLetter is a stream record a consumer gave up on, as the on-failure destination
// (an SQS queue on AWS) would receive it.
type DeadLetter struct {
	Function string
	streampoll.FailedRecord
	// Schedule, Input and Err describe a one-time schedule's invocation that the
	// scheduler gave up on, as its dead-letter queue would receive it.
	Schedule, Input, Err string
}

// DeadLetters returns the records the stream consumers gave up on so far.
func (s *Stack) DeadLetters() []DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]DeadLetter(nil), s.deadLetters...)
}

// CreateTables creates the Events and Deadlines tables if they do not exist.
func CreateTables(ctx context.Context, cfg aws.Config, events, pending string) error {
	db := dynamodb.NewFromConfig(cfg)
	if err := schema.Create(ctx, db, schema.Events(events)); err != nil {
		return err
	}
	return schema.CreateDeadlines(ctx, db, pending)
}

// ErrAddrInUse reports that the API's address is taken.
var ErrAddrInUse = errors.New("the API's address is in use")

// Listen claims the API's address, so that a taken port is reported before anything
// else starts.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (%v); set PORT to another port", ErrAddrInUse, addr, err)
	}
	return l, nil
}

// Run plays API Gateway on l, the two event source mappings on the Events table's
// stream (one poller each, with its own position, retrying reported failures as
// Lambda does) and EventBridge Scheduler for the sweep, until ctx ends or one of them
// fails.
func (s *Stack) Run(ctx context.Context, l net.Listener) error {
	desc, err := dynamodb.NewFromConfig(s.AWS).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.EventsTable)})
	if err != nil {
		return fmt.Errorf("local: describe %s: %w", s.EventsTable, err)
	}
	streams := dynamodbstreams.NewFromConfig(s.AWS)
	maxAge := s.MaxRecordAge
	if maxAge <= 0 {
		maxAge = DefaultMaxRecordAge
	}
	parallelization := s.Parallelization
	if parallelization <= 0 {
		parallelization = DefaultParallelization
	}
	consumer := func(name string, fn Invoker) *streampoll.Poller {
		return &streampoll.Poller{
			Client: streams, StreamARN: aws.ToString(desc.Table.LatestStreamArn), Logger: s.Logger.With("function", name),
			MaxRetryAttempts: s.MaxRetryAttempts, MaxRecordAge: maxAge, Parallelization: parallelization,
			Types: eventfilter.Types(name), // the template's FilterCriteria
			OnFailure: func(_ context.Context, f streampoll.FailedRecord) {
				s.mu.Lock()
				s.deadLetters = append(s.deadLetters, DeadLetter{Function: name, FailedRecord: f})
				s.mu.Unlock()
			},
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
				err = Call(ctx, fn, ev, &resp)
				return resp, err
			},
		}
	}
	front, err := s.front(l)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tasks := []func() error{
		func() error { return consumer("process", s.Functions.Process).Run(ctx, 0) },
		func() error { return consumer("projector", s.Functions.Projector).Run(ctx, 0) },
		func() error { return Schedule(ctx, s.SweepInterval, s.paused, s.sweep) },
		func() error { return serve(ctx, l, front, s.Logger.With("function", "gateway")) },
	}
	if s.DeadlineGroup != "" {
		firer := &DeadlineFirer{
			Client: scheduler.NewFromConfig(s.AWS), Group: s.DeadlineGroup, Poll: s.DeadlinePoll,
			Logger: s.Logger.With("function", "sweep"),
			Invoke: func(ctx context.Context, input string) error {
				var sum awslambda.Summary
				return Call(ctx, s.Functions.Sweep, json.RawMessage(input), &sum)
			},
			OnDeadLetter: func(name, input string, err error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.deadLetters = append(s.deadLetters, DeadLetter{Function: "sweep", Schedule: name, Input: input, Err: err.Error()})
			},
		}
		tasks = append(tasks, func() error { return firer.Run(ctx) })
	}
	errs := make(chan error, len(tasks))
	for _, task := range tasks {
		go func() { errs <- task() }()
	}
	err = <-errs
	cancel()
	for range len(tasks) - 1 {
		if e := <-errs; err == nil {
			err = e
		}
	}
	return err
}

// LocalAudience is the audience of the local stack's tokens.
const LocalAudience = "bikerental-local"

// front is what listens on the API's address: the local token issuer (its OpenID
// configuration, its JWKS and POST /local/tokens) and, for everything else, API
// Gateway with its JWT authorizer, which fetches the issuer's keys over HTTP from
// this same address, as the deployed authorizer fetches its issuer's.
func (s *Stack) front(l net.Listener) (http.Handler, error) {
	issuerURL := "http://" + l.Addr().String()
	issuer, err := auth.NewIssuer(issuerURL, LocalAudience)
	if err != nil {
		return nil, err
	}
	authorizer, err := auth.NewAuthorizer(auth.AuthorizerConfig{Issuer: issuerURL, Audiences: []string{LocalAudience}})
	if err != nil {
		return nil, err
	}
	scope := s.OperatorScope
	if scope == "" {
		scope = httpapi.DefaultOperatorScope
	}
	tokens := issuer.Handler(scope)
	gateway := Gateway{Function: s.Functions.Command, Authorizer: authorizer, OperatorScope: scope, Logger: s.Logger.With("function", "gateway")}
	if s.Throttling != nil {
		gateway.Throttle = NewThrottle(*s.Throttling, time.Now)
	}
	gateway.Edge = s.Edge
	// Not an http.ServeMux: it would clean and redirect paths that API Gateway
	// passes on as they are.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case auth.DiscoveryPath, auth.JWKSPath, auth.TokenPath:
			tokens.ServeHTTP(w, r)
		default:
			gateway.ServeHTTP(w, r)
		}
	}), nil
}

// paused reports whether the sweep's schedule is disabled in the emulator; without a
// schedule to read, the sweep runs.
func (s *Stack) paused(ctx context.Context) bool {
	paused, err := Paused(ctx, scheduler.NewFromConfig(s.AWS))
	return err == nil && paused
}

// sweep invokes the sweep function with the input EventBridge Scheduler sends.
func (s *Stack) sweep(ctx context.Context, scheduled time.Time) (awslambda.Summary, error) {
	var sum awslambda.Summary
	input := map[string]string{"scheduledTime": scheduled.UTC().Format(time.RFC3339)}
	err := Call(ctx, s.Functions.Sweep, input, &sum)
	if err != nil {
		s.Logger.LogAttrs(ctx, slog.LevelError, "sweep invocation failed", slog.String("function", "sweep"), slog.String("error", err.Error()))
	}
	return sum, err
}
