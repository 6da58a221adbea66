package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

// Up is a local stack brought up by Start: the emulator it started (if any), the
// tables, and the functions built in this process.
type Up struct {
	*Stack
	// Direct reaches the emulator (or AWS) without what Options.PartAWS adds: for
	// creating, reading and auditing the tables from outside the stack.
	Direct   aws.Config
	emulator *emulator.Server
	stripe   *stripemock.Server
	// env is the functions' environment; access how rentalctl reaches the stack.
	env    wiring.Getenv
	access operatorAccess
}

// Start brings a local stack up from the environment getenv describes: it starts
// moto's server unless AWS_ENDPOINT_URL is set (every client then goes where it
// points; set and empty means AWS itself, with the credentials the SDK finds),
// creates the tables named by EVENTS_TABLE and DEADLINES_TABLE, and builds the four
// functions in this process with the same environment. progress receives one line per
// step. Stop it with Stop. It is StartWith with the defaults: the one way the local
// stack comes up, for make run, the demo, the load generator, the benchmarks and the
// tests.
func Start(ctx context.Context, getenv wiring.Getenv, interval time.Duration, logger *slog.Logger, progress io.Writer) (*Up, error) {
	return StartWith(ctx, Options{Getenv: getenv, SweepInterval: interval, Logger: logger, Progress: progress})
}

// Options say how StartWith brings a stack up; every field may be left zero.
type Options struct {
	// Getenv is the functions' environment (EVENTS_TABLE, DEADLINES_TABLE, ...).
	Getenv wiring.Getenv
	// SweepInterval is how often the sweep runs (5s if zero).
	SweepInterval time.Duration
	// Logger receives the stack's logs (discarded if nil); Progress one line per
	// step (discarded if nil).
	Logger   *slog.Logger
	Progress io.Writer
	// Metrics receives what the functions write to their standard output on
	// Lambda: their metrics, one Embedded Metric Format document a line (discarded
	// if nil). Writes to it never overlap.
	Metrics io.Writer
	// AWS, when set, is where the stack's clients go: an emulator already running
	// (its tables and schedules are created there). Otherwise Emulator, when set, is
	// that emulator's endpoint; otherwise AWS_ENDPOINT_URL decides, as for Start.
	AWS      *aws.Config
	Emulator string
	// PartAWS, when set, gives the configuration one part of the stack runs on,
	// from the stack's: a function by its name (lambdas.Command, ...), or the runner
	// itself ("runner": its stream pollers and schedules). A fault proxy goes in here,
	// or counting middleware.
	PartAWS func(part string, cfg aws.Config) (aws.Config, error)
	// Wrap, when set, replaces a function's invoker with what it returns: to count
	// its invocations, fail some, or run it elsewhere.
	Wrap func(function string, inv Invoker) Invoker
	// MaxRetryAttempts and MaxRecordAge are the stream mappings', DeadlinePoll how
	// often due one-time schedules are looked for (see Stack).
	MaxRetryAttempts int
	MaxRecordAge     time.Duration
	DeadlinePoll     time.Duration
	// Throttle plays the throttling template.yaml declares for each route, as API
	// Gateway does (make run does). Off, the default, the load runs and benchmarks
	// drive the stack past the deployed stage's limits, on purpose.
	Throttle bool
	// Edge plays, in front of the throttling, the web ACL template.yaml puts before
	// the API with FloodGuard=edge (make run does): requests without the credential
	// their route needs, and floods from one address, are refused there.
	Edge bool
}

// Runner is the part name PartAWS is asked with for the runner itself.
const Runner = "runner"

// StartWith brings a local stack up as o says (see Start and Options).
func StartWith(ctx context.Context, o Options) (*Up, error) {
	o = o.withDefaults()
	// Every setting is checked before anything starts: a bad one is reported
	// without an emulator, stripe-mock or table coming up first.
	getenv := withSettingDefaults(o.Getenv)
	if err := checkSettings(getenv); err != nil {
		return nil, err
	}
	up := &Up{}
	if err := up.start(ctx, o, getenv); err != nil {
		up.Stop()
		return nil, err
	}
	return up, nil
}

// withDefaults returns o with its zero fields given their defaults, and its
// Metrics serialized.
func (o Options) withDefaults() Options {
	if o.SweepInterval <= 0 {
		o.SweepInterval = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Metrics == nil {
		o.Metrics = io.Discard
	}
	o.Metrics = &lockedWriter{w: o.Metrics}
	return o
}

// start brings up, in order, stripe-mock if need be, the AWS the stack runs on,
// its tables and schedules, and its functions, on the settings getenv has checked.
// What it started is up's to Stop, also when it fails.
func (up *Up) start(ctx context.Context, o Options, getenv wiring.Getenv) error {
	mode, _ := wiring.DeadlineMode(getenv) // checked
	progress := o.Progress
	getenv, stripe, err := withStripe(ctx, getenv, progress)
	if err != nil {
		return err
	}
	up.stripe = stripe
	stack := &Stack{EventsTable: getenv(wiring.EnvEventsTable), DeadlinesTable: getenv(wiring.EnvDeadlinesTable), SweepInterval: o.SweepInterval,
		Logger: o.Logger, OperatorScope: getenv(wiring.EnvOperatorScope), MaxRetryAttempts: o.MaxRetryAttempts, MaxRecordAge: o.MaxRecordAge,
		DeadlinePoll: o.DeadlinePoll}
	if o.Throttle {
		throttling, err := TemplateThrottling()
		if err != nil {
			return err
		}
		stack.Throttling = &throttling
	}
	if o.Edge {
		if stack.Edge, err = templateEdgeThatHolds(); err != nil {
			return err
		}
	}
	if stack.AWS, err = up.connect(ctx, o); err != nil {
		return err
	}
	up.Direct = stack.AWS
	if err := CreateTables(ctx, stack.AWS, stack.EventsTable, stack.DeadlinesTable); err != nil {
		return err
	}
	if mode == wiring.ModePrecise {
		stack.DeadlineGroup = getenv(wiring.EnvDeadlineGroup)
		fmt.Fprintf(progress, "precise deadlines: one-time schedules in group %s\n", stack.DeadlineGroup)
		if err := CreateDeadlineGroup(ctx, scheduler.NewFromConfig(stack.AWS), stack.DeadlineGroup); err != nil {
			return err
		}
	}
	if stack.Functions, err = buildFunctions(ctx, stack.AWS, withSweepRate(getenv, o.SweepInterval), o); err != nil {
		return err
	}
	if o.PartAWS != nil {
		if stack.AWS, err = o.PartAWS(Runner, stack.AWS); err != nil {
			return err
		}
	}
	up.Stack, up.env = stack, getenv
	return nil
}

// connect returns the configuration that reaches the AWS the stack runs on: o.AWS,
// else o.Emulator's, else AWS_ENDPOINT_URL's when it is set, else that of a moto
// server it starts. On an emulator it creates the sweep's schedule. It sets how
// rentalctl reaches the stack.
func (up *Up) connect(ctx context.Context, o Options) (aws.Config, error) {
	// Every case but AWS_ENDPOINT_URL's is an emulator, with its dummy credentials
	// and the sweep's schedule.
	up.access = operatorAccess{emulatorCreds: true, schedule: true}
	var cfg aws.Config
	var err error
	switch endpoint, set := os.LookupEnv("AWS_ENDPOINT_URL"); {
	case o.AWS != nil:
		up.access.endpoint = aws.ToString(o.AWS.BaseEndpoint)
		cfg = *o.AWS
	case o.Emulator != "":
		up.access.endpoint = o.Emulator
		if cfg, err = emulator.Config(ctx, o.Emulator); err != nil {
			return aws.Config{}, err
		}
	case set:
		up.access = operatorAccess{endpoint: endpoint}
		where := endpoint
		if where == "" {
			where = "AWS itself (AWS_ENDPOINT_URL is set and empty)"
		}
		fmt.Fprintf(o.Progress, "AWS endpoint: %s\n", where)
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
		}
		return cfg, nil
	default:
		fmt.Fprintln(o.Progress, "starting the local AWS emulator (moto_server)...")
		if up.emulator, err = startEmulator(ctx, emulator.WithLogger(o.Logger.With("part", "emulator"))); err != nil {
			return aws.Config{}, err
		}
		fmt.Fprintf(o.Progress, "AWS emulator: %s\n", up.emulator.Endpoint)
		up.access.endpoint = up.emulator.Endpoint
		if cfg, err = up.emulator.Config(ctx); err != nil {
			return aws.Config{}, err
		}
	}
	if err := CreateSweepSchedule(ctx, scheduler.NewFromConfig(cfg)); err != nil {
		return aws.Config{}, err
	}
	return cfg, nil
}

// startEmulator starts moto's server; a test replaces it to see that it is not
// reached.
var startEmulator = emulator.Start

// CheckSettings validates, touching nothing, every setting the local stack reads
// from getenv, with the local defaults StartWith fills in: every function's
// (lambdas.Check). StartWith runs it before it starts anything; make run runs it
// before it claims its port.
func CheckSettings(getenv wiring.Getenv) error { return checkSettings(withSettingDefaults(getenv)) }

func checkSettings(getenv wiring.Getenv) error { return lambdas.Check(getenv) }

// withSettingDefaults fills in the local defaults of the settings getenv leaves
// empty: the precise deadlines' and Stripe's keys (stripe-mock's address comes
// when it is started).
func withSettingDefaults(getenv wiring.Getenv) wiring.Getenv {
	return withConsoleDefaults(withDefaults(withStripeKeys(withDeadlineDefaults(getenv))))
}

// buildFunctions builds the four functions in this process, each on its part's AWS
// configuration, and wraps them as o says.
func buildFunctions(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, o Options) (Functions, error) {
	var fs Functions
	into := map[string]*Invoker{lambdas.Command: &fs.Command, lambdas.Process: &fs.Process, lambdas.Projector: &fs.Projector, lambdas.Sweep: &fs.Sweep}
	for _, f := range lambdas.All() {
		fcfg := cfg
		if o.PartAWS != nil {
			var err error
			if fcfg, err = o.PartAWS(f.Name, cfg.Copy()); err != nil {
				return Functions{}, err
			}
		}
		h, err := f.Build(ctx, fcfg, getenv, o.Logger.With("function", f.Name), o.Metrics)
		if err != nil {
			return Functions{}, fmt.Errorf("%s function: %w", f.Name, err)
		}
		inv := InProcess(h)
		if o.Wrap != nil {
			inv = o.Wrap(f.Name, inv)
		}
		*into[f.Name] = inv
	}
	return fs, nil
}

// Died is closed if the emulator Start started stops by itself; Reason then says why.
// It is nil when no emulator was started.
func (u *Up) Died() <-chan struct{} {
	if u.emulator == nil {
		return nil
	}
	return u.emulator.Exited()
}

// Reason says how the emulator ended.
func (u *Up) Reason() string { return u.emulator.ExitReason() }

// Stop stops the emulator and stripe-mock Start started, if any. Safe to call more
// than once.
func (u *Up) Stop() {
	if u.emulator != nil {
		u.emulator.Stop()
	}
	if u.stripe != nil {
		u.stripe.Stop()
	}
}

// MetricsService is the Service dimension of the local stack's metrics: the
// template's bikerental-<stage>, for the stage "local".
const MetricsService = "bikerental-local"

// withDefaults fills in the local stack's settings that getenv leaves empty.
func withDefaults(getenv wiring.Getenv) wiring.Getenv {
	return func(name string) string {
		if v := getenv(name); v != "" || name != wiring.EnvMetricsService {
			return v
		}
		return MetricsService
	}
}

// lockedWriter serializes the writes of the functions, which share it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// withSweepRate sets SWEEP_RATE, when getenv leaves it unset, to the local sweep's
// interval: what the sweep's backoff counts by, as the template sets it to
// SweepRate on AWS.
func withSweepRate(getenv wiring.Getenv, interval time.Duration) wiring.Getenv {
	return func(name string) string {
		if v := getenv(name); v != "" || name != wiring.EnvSweepRate {
			return v
		}
		return wiring.RateExpression(interval)
	}
}
