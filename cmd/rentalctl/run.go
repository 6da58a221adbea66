package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/audit"
	"github.com/bikerental/bikerental/internal/deadline"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
	"github.com/bikerental/bikerental/internal/rebuild"
)

// Environment variables rentalctl reads, besides the AWS SDK's own.
const (
	envEventsTable   = "EVENTS_TABLE" // as the service's functions read it
	envPendingTable  = "PENDING_TABLE"
	envShards        = "PENDING_SHARDS"
	envScheduleName  = "SWEEP_SCHEDULE_NAME"
	envScheduleGroup = "SWEEP_SCHEDULE_GROUP"
)

const (
	// progressEvery is how many streams pass between two progress lines.
	progressEvery = 500
	// resumeTimeout bounds restoring the schedule, which runs even after an
	// interrupt, on a context of its own.
	resumeTimeout = 30 * time.Second
)

// errUsage marks errors in the command line: main exits with status 2 for them.
var errUsage = errors.New("usage")

// errViolations is what audit returns when it found violations: main exits with
// status 1 for it, as for any other failure.
var errViolations = errors.New("violations found")

const usage = `Usage: rentalctl <command> [flags]

Commands:
  rebuild-pending   replay every payment stream of the Events table into the
                    PendingPayments table, with the sweep's schedule paused
  audit             check the service's invariants across the Events and
                    PendingPayments tables, and report every violation

Run 'rentalctl <command> -h' for the flags of a command. AWS access is configured
as for the AWS CLI: AWS_REGION, AWS_PROFILE or AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, and AWS_ENDPOINT_URL to use a local emulator.
`

const rebuildPendingUsage = `Usage: rentalctl rebuild-pending [flags]

Replays every payment stream of the Events table into the PendingPayments table.
It creates nothing: both tables must exist. Rows already there are kept or brought
up to date, never duplicated, so it is safe to run over a live projection and to run
again after an interruption.

A rebuilt row carries the time its payment was prepared, so old payments look
overdue until their settling events are replayed: the sweep's EventBridge schedule
is disabled while the rebuild runs and enabled again when it ends, fails or is
interrupted (a schedule that was already disabled stays disabled).

Flags (each defaults to the environment variable in brackets):
`

// run is rentalctl: args are the command-line arguments after the program's name,
// getenv reads the environment (the AWS SDK's variables AWS_REGION,
// AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN
// included). Results go to stdout; usage, progress and warnings to stderr. Errors in
// the command line match errUsage; -h prints usage and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "rebuild-pending":
		return rebuildPending(ctx, args[1:], getenv, stdout, stderr)
	case "audit":
		return runAudit(ctx, args[1:], getenv, stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

type rebuildPendingFlags struct {
	eventsTable, pendingTable   string
	shards                      int
	markerTTL                   time.Duration
	scheduleName, scheduleGroup string
}

func parseRebuildPending(args []string, getenv func(string) string, stderr io.Writer) (rebuildPendingFlags, error) {
	var f rebuildPendingFlags
	shards := deadline.DefaultShards
	if v := getenv(envShards); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return f, fmt.Errorf("%w: %s=%q is not a whole number", errUsage, envShards, v)
		}
		shards = n
	}
	markerTTL := deadline.DefaultMarkerTTL
	if v := getenv("SETTLED_MARKER_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return f, fmt.Errorf("%w: SETTLED_MARKER_TTL=%q is not a positive duration", errUsage, v)
		}
		markerTTL = d
	}
	f.markerTTL = markerTTL
	group := getenv(envScheduleGroup)
	if group == "" {
		group = "default"
	}
	fs := flag.NewFlagSet("rebuild-pending", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.eventsTable, "events-table", getenv(envEventsTable), "the Events table to read ["+envEventsTable+"]")
	fs.StringVar(&f.pendingTable, "pending-table", getenv(envPendingTable), "the PendingPayments table to write ["+envPendingTable+"]")
	fs.IntVar(&f.shards, "shards", shards, "the index write shards of the PendingPayments table; must match the projector's ["+envShards+"]")
	fs.StringVar(&f.scheduleName, "schedule-name", getenv(envScheduleName), "the sweep's EventBridge schedule; empty pauses nothing ["+envScheduleName+"]")
	fs.StringVar(&f.scheduleGroup, "schedule-group", group, "the schedule's group ["+envScheduleGroup+"]")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), rebuildPendingUsage)
		fs.PrintDefaults()
	}
	return f, parseTableCommand(fs, "rebuild-pending", args, &f.eventsTable, &f.pendingTable)
}

// parseTableCommand parses a command's flags, which take no arguments and need both
// tables, and returns errUsage-wrapped errors (flag.ErrHelp as it is).
func parseTableCommand(fs *flag.FlagSet, name string, args []string, eventsTable, pendingTable *string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %s: %w", errUsage, name, err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, name, fs.Args())
	}
	for _, req := range []struct{ flag, env, value string }{
		{"events-table", envEventsTable, *eventsTable},
		{"pending-table", envPendingTable, *pendingTable},
	} {
		if req.value == "" {
			return fmt.Errorf("%w: %s: -%s (or %s) is required", errUsage, name, req.flag, req.env)
		}
	}
	return nil
}

func rebuildPending(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	f, err := parseRebuildPending(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := awsConfig(ctx, getenv)
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(cfg)
	projection, err := deadline.NewProjection(db, f.pendingTable, f.shards, f.markerTTL)
	if err != nil {
		return err
	}
	// Fail before touching the schedule if either table is missing.
	for _, table := range []string{f.eventsTable, f.pendingTable} {
		if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
			return fmt.Errorf("table %s: %w", table, err)
		}
	}

	if f.scheduleName == "" {
		fmt.Fprintf(stderr, "warning: no sweep schedule given (-schedule-name or %s): nothing is paused, and a sweep that runs during the rebuild may cancel payments that only look overdue\n", envScheduleName)
	} else {
		resume, err := rebuild.Pause(ctx, scheduler.NewFromConfig(cfg), f.scheduleGroup, f.scheduleName)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "paused schedule %s/%s\n", f.scheduleGroup, f.scheduleName)
		defer func() {
			// Runs after an interrupt too: ctx may be cancelled by then.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
			defer cancel()
			if rerr := resume(rctx); rerr != nil {
				err = errors.Join(err, fmt.Errorf("the schedule may still be disabled: %w", rerr))
				return
			}
			fmt.Fprintf(stderr, "resumed schedule %s/%s\n", f.scheduleGroup, f.scheduleName)
		}()
	}

	start := time.Now()
	res, err := rebuild.PendingPayments(ctx, dynamo.New(db, f.eventsTable), projection, func(done int) {
		if done%progressEvery == 0 {
			fmt.Fprintf(stderr, "%d payment streams replayed (%s)\n", done, time.Since(start).Round(time.Second))
		}
	})
	if err != nil {
		return fmt.Errorf("rebuild-pending: after %d streams and %d records: %w", res.Streams, res.Records, err)
	}
	fmt.Fprintf(stdout, "rebuilt %s from %s: %d payment streams, %d records in %s\n",
		f.pendingTable, f.eventsTable, res.Streams, res.Records, time.Since(start).Round(time.Millisecond))
	return nil
}

const auditUsage = `Usage: rentalctl audit [flags]

Reads the Events and PendingPayments tables and checks the service's invariants:
stream versions without gaps, one process per rental that starts and completes once,
one settlement per payment, no bike booked by two rentals at once, a PendingPayments
table that lists exactly the outstanding payments, and bikes told how their rental's
process ended. It only reads: it is safe to run at any time, against a live service.

Prints one line per violation and a summary line (or, with -json, the report as
JSON) on stdout. Exits 0 when nothing was found, 1 when violations were found or the
audit failed, 2 for a bad command line.

Without -quiet, checks that only hold once every event has been handled are skipped,
and drift of the PendingPayments table is only reported for payments older than the
grace period. Pass -quiet when nothing is in flight: no requests, the stream
consumers caught up, the dead-letter queues empty.

The operator needs dynamodb:Scan and dynamodb:Query on the Events table and
dynamodb:Scan on the PendingPayments table.

Flags (each defaults to the environment variable in brackets, if any):
`

type auditFlags struct {
	eventsTable, pendingTable string
	quiet, json               bool
	grace                     time.Duration
	concurrency, segments     int
}

func parseAudit(args []string, getenv func(string) string, stderr io.Writer) (auditFlags, error) {
	var f auditFlags
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.eventsTable, "events-table", getenv(envEventsTable), "the Events table to read ["+envEventsTable+"]")
	fs.StringVar(&f.pendingTable, "pending-table", getenv(envPendingTable), "the PendingPayments table to read ["+envPendingTable+"]")
	fs.BoolVar(&f.quiet, "quiet", false, "the service is quiet: also run the checks that need every event handled")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.DurationVar(&f.grace, "grace", audit.DefaultGrace, "without -quiet, how far the projector may lag behind the payments")
	fs.IntVar(&f.concurrency, "concurrency", audit.DefaultConcurrency, "how many streams to read at once")
	fs.IntVar(&f.segments, "segments", audit.DefaultScanSegments, "how many parallel segments each table scan uses")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), auditUsage)
		fs.PrintDefaults()
	}
	if err := parseTableCommand(fs, "audit", args, &f.eventsTable, &f.pendingTable); err != nil {
		return f, err
	}
	switch {
	case f.grace <= 0:
		return f, fmt.Errorf("%w: audit: -grace %s: want a positive duration", errUsage, f.grace)
	case f.concurrency < 1:
		return f, fmt.Errorf("%w: audit: -concurrency %d: want at least 1", errUsage, f.concurrency)
	case f.segments < 1:
		return f, fmt.Errorf("%w: audit: -segments %d: want at least 1", errUsage, f.segments)
	}
	return f, nil
}

// runAudit is `rentalctl audit`: it returns nil when the audit found nothing, an
// error matching errViolations when it found violations (after printing them), and
// any other error when it could not finish.
func runAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, err := parseAudit(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := awsConfig(ctx, getenv)
	if err != nil {
		return err
	}
	source := audit.NewDynamo(dynamodb.NewFromConfig(cfg), f.eventsTable, f.pendingTable, audit.WithScanSegments(f.segments))
	start := time.Now()
	report, err := audit.Run(ctx, source, source, audit.Options{
		Quiet:       f.quiet,
		Grace:       f.grace,
		Concurrency: f.concurrency,
		Progress: func(done int) {
			if done%progressEvery == 0 {
				fmt.Fprintf(stderr, "%d streams read (%s)\n", done, time.Since(start).Round(time.Second))
			}
		},
	})
	if err != nil {
		return fmt.Errorf("audit of %s and %s: %w", f.eventsTable, f.pendingTable, err)
	}

	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		for _, v := range report.Violations {
			fmt.Fprintln(stdout, v)
		}
		found := "no violations"
		if n := len(report.Violations); n > 0 {
			found = fmt.Sprintf("%d violations", n)
		}
		checks := "quiet checks included"
		if !report.Quiet {
			checks = "quiet checks skipped, -quiet runs them"
		}
		fmt.Fprintf(stdout, "audited %s and %s: %d streams, %d records, %d rentals, %d payments, %d pending rows in %s: %s (%s)\n",
			f.eventsTable, f.pendingTable, report.Streams, report.Records, report.Rentals, report.Payments, report.PendingRows,
			time.Since(start).Round(time.Millisecond), found, checks)
	}
	if !report.OK() {
		return fmt.Errorf("audit: %d %w", len(report.Violations), errViolations)
	}
	return nil
}

// awsConfig loads the SDK's default configuration, with the region, endpoint and
// static credentials that getenv gives overriding what the SDK found itself; with
// os.Getenv that changes nothing, and tests can point rentalctl elsewhere without
// touching the process's environment.
func awsConfig(ctx context.Context, getenv func(string) string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if region := getenv("AWS_REGION"); region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if endpoint := getenv("AWS_ENDPOINT_URL"); endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(endpoint))
	}
	if id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}
