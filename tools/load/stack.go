package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/tools/faultproxy"
)

// StackConfig describes a local stack to put load on: the one `make run` brings up
// (package local, the four functions in this process), with a fault proxy between
// the functions and the emulator.
type StackConfig struct {
	// Emulator is the endpoint of a running emulator (an emulator.Server's
	// Endpoint); empty starts moto's server, which Close stops.
	Emulator string
	// Faults configures the proxy every AWS call of the stack goes through (the
	// functions' DynamoDB calls, and the local runner's stream reads and schedule
	// look-ups). Rate 0, the zero value, forwards everything untouched. The tables
	// and the sweep's schedule are created directly, without faults.
	Faults faultproxy.Config
	// EventsTable and DeadlinesTable name the tables; fresh names if empty.
	EventsTable, DeadlinesTable string
	// PaymentTimeout is the stack's PAYMENT_TIMEOUT; 3s if zero.
	PaymentTimeout time.Duration
	// SweepInterval is how often the sweep runs; 1s if zero.
	SweepInterval time.Duration
	// WebhookSecret is PAYMENT_WEBHOOK_SECRET; local.DefaultWebhookSecret if empty.
	WebhookSecret string
	// Settings are further environment settings of the functions, such as
	// RECORDING_MODE; they override the ones above.
	Settings map[string]string
	// Logger receives the stack's logs; nil discards them.
	Logger *slog.Logger
}

// Stack is a running local stack. Close stops it.
type Stack struct {
	// BaseURL is the HTTP API's base URL.
	BaseURL string
	// WebhookSecret is the secret the payment webhooks must be signed with.
	WebhookSecret []byte
	// Faults is the proxy between the stack and the emulator; its Stats count
	// every AWS request the stack made.
	Faults *faultproxy.Server
	// PaymentTimeout and SweepInterval are the stack's settings.
	PaymentTimeout, SweepInterval time.Duration
	// EventsTable and DeadlinesTable are the stack's tables.
	EventsTable, DeadlinesTable string

	direct aws.Config // the emulator, without the fault proxy
	// deadlineTable is the Deadlines table of the stack's kinds, read directly, which
	// the auditor reads through its index.
	deadlineTable *deadlinetable.Table
	kinds         deadlines.Kinds
	emulator      *emulator.Server // started by StartStack, or nil
	cancel        context.CancelFunc
	done          chan struct{}
	mu            sync.Mutex
	err           error
	close         sync.Once
}

// StartStack starts a local stack as sc describes and returns once its API
// listens. The stack runs until Close, or until one of its parts fails (see Done).
func StartStack(ctx context.Context, sc StackConfig) (_ *Stack, err error) {
	if sc.PaymentTimeout <= 0 {
		sc.PaymentTimeout = 3 * time.Second
	}
	if sc.SweepInterval <= 0 {
		sc.SweepInterval = time.Second
	}
	if sc.WebhookSecret == "" {
		sc.WebhookSecret = local.DefaultWebhookSecret
	}
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + randomAlnum(4)
	if sc.EventsTable == "" {
		sc.EventsTable = "load-events-" + suffix
	}
	if sc.DeadlinesTable == "" {
		sc.DeadlinesTable = "load-pending-" + suffix
	}
	logger := sc.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	settings := map[string]string{
		wiring.EnvEventsTable:    sc.EventsTable,
		wiring.EnvDeadlinesTable: sc.DeadlinesTable,
		wiring.EnvWebhookSecret:  sc.WebhookSecret,
		wiring.EnvPaymentTimeout: sc.PaymentTimeout.String(),
	}
	for k, v := range sc.Settings {
		settings[k] = v
	}

	s := &Stack{WebhookSecret: []byte(settings[wiring.EnvWebhookSecret]), PaymentTimeout: sc.PaymentTimeout,
		SweepInterval: sc.SweepInterval, EventsTable: sc.EventsTable, DeadlinesTable: sc.DeadlinesTable, done: make(chan struct{})}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	endpoint := sc.Emulator
	if endpoint == "" {
		if s.emulator, err = emulator.Start(ctx); err != nil {
			return nil, err
		}
		endpoint = s.emulator.Endpoint
	}
	if s.Faults, err = faultproxy.Start(endpoint, sc.Faults); err != nil {
		return nil, err
	}
	// The one local stack (local.StartWith), on the emulator, with every part of it
	// (the functions, the runner's stream reads and schedule look-ups) through the
	// fault proxy; the tables and the sweep's schedule are created directly.
	proxied, err := emulator.Config(ctx, s.Faults.URL)
	if err != nil {
		return nil, err
	}
	up, err := local.StartWith(ctx, local.Options{
		Getenv: func(k string) string { return settings[k] }, SweepInterval: sc.SweepInterval, Logger: logger,
		Emulator: endpoint,
		PartAWS:  func(string, aws.Config) (aws.Config, error) { return proxied.Copy(), nil },
	})
	if err != nil {
		return nil, err
	}
	s.direct = up.Direct
	if err := s.openDeadlines(func(k string) string { return settings[k] }); err != nil {
		return nil, err
	}
	stack := up.Stack
	listener, err := local.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.BaseURL = "http://" + listener.Addr().String()
	runCtx, cancel := context.WithCancelCause(context.Background())
	s.cancel = func() { cancel(nil) }
	go func() {
		defer close(s.done)
		err := stack.Run(runCtx, listener)
		if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	if s.emulator != nil {
		go func() {
			select {
			case <-s.emulator.Exited():
				cancel(fmt.Errorf("load: the emulator stopped: %s", s.emulator.ExitReason()))
			case <-s.done:
			}
		}()
	}
	return s, nil
}

// openDeadlines makes the Deadlines table the auditor reads, of the kinds the
// stack's settings declare, read directly.
func (s *Stack) openDeadlines(getenv wiring.Getenv) (err error) {
	if s.kinds, err = wiring.DeadlineKinds(getenv, deadlinekinds.Receivers{}); err != nil {
		return err
	}
	s.deadlineTable, err = wiring.DeadlineTable(s.direct, getenv, s.kinds)
	return err
}

// Audit runs the auditor (package audit) over the stack's tables, read directly
// from the emulator, not through the fault proxy: the Events table, and the
// Deadlines table through its index, as the stack's kinds declare it. quiet says
// the load has settled (Settle returned): the checks that only hold then are made
// too. Settled means every rental reads as ended; the projector may still be a
// poll behind, closing the last processes' open rows, so a quiet audit that finds
// violations is run again until it finds none or AuditWait has passed, and the
// last one counts. It returns one line per violation; a load run ends with it and
// fails on any.
func (s *Stack) Audit(ctx context.Context, quiet bool) ([]string, error) {
	src := audit.NewDynamo(dynamodb.NewFromConfig(s.direct), s.EventsTable)
	deadline := time.Now().Add(AuditWait)
	for {
		rep, err := audit.Run(ctx, src, s.deadlineTable, audit.Options{Quiet: quiet, Kinds: s.kinds})
		if err != nil {
			return nil, fmt.Errorf("load: audit: %w", err)
		}
		if rep.OK() || !quiet || time.Now().After(deadline) {
			out := make([]string, 0, len(rep.Violations))
			for _, v := range rep.Violations {
				out = append(out, "audit: "+v.String())
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// AuditWait is how long a quiet Audit waits for the stream consumers to catch up.
const AuditWait = 15 * time.Second

// Done is closed when the stack has stopped: after Close, or by itself when one of
// its parts failed (Err says why).
func (s *Stack) Done() <-chan struct{} { return s.done }

// Err returns why the stack stopped, once Done is closed: nil after Close, unless
// stopping failed.
func (s *Stack) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the stack, the fault proxy and the emulator StartStack started. It is
// safe to call more than once.
func (s *Stack) Close() error {
	s.close.Do(func() {
		if s.cancel != nil {
			s.cancel()
			<-s.done
		} else {
			close(s.done)
		}
		if s.Faults != nil {
			s.Faults.Close()
		}
		if s.emulator != nil {
			s.emulator.Stop()
		}
	})
	return s.Err()
}
