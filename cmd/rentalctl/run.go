package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/operatorenv"
)

// Environment variables rentalctl reads itself, besides those internal/wiring reads
// for the process (RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY), the
// projection (SETTLED_MARKER_TTL) and the payment provider. Every one of them is in
// operatorenv's list, which the local runner prints for its stack; a test holds
// rentalctl to it.
const (
	envEventsTable    = wiring.EnvEventsTable // as the service's functions read them
	envDeadlinesTable = wiring.EnvDeadlinesTable
	envShards         = wiring.EnvDeadlinesShards
	envTimeout        = wiring.EnvPaymentTimeout
	envConcurrency    = wiring.EnvSweepConcurrency
	envScheduleName   = operatorenv.ScheduleName
	envScheduleGroup  = operatorenv.ScheduleGroup
	envRuleName       = operatorenv.RuleName
)

// errUsage marks errors in the command line or the configuration: main exits with
// status 2 for them.
var errUsage = errors.New("usage")

// errViolations is what audit returns when it found violations: main exits with
// status 1 for it, as for any other failure.
var errViolations = errors.New("violations found")

// subcommand is one of rentalctl's commands.
type subcommand struct {
	name    string
	args    string // what follows the name in its usage line
	summary string // one line for rentalctl's list of commands
	run     func(ctx context.Context, c *cli, args []string) error
}

// commands are rentalctl's commands, in the order help lists them.
var commands = []subcommand{
	{"history", "RENTAL_ID", "a rental's status and audit trail, as GET /rentals/{id}", runHistory},
	{"pending", "", "outstanding payments, oldest first; --overdue: past due; --kind: one kind's to-do list", runPending},
	{"cancel", "RENTAL_ID", "send CancelRentalPayment and print the outcome", runCancel},
	{"sweep", "", "run the sweep now or --at a time; --dry-run only lists", runSweep},
	{"refunds", "", "refunds owed for rentals that did not get their bike, oldest first", runRefunds},
	{"refund-made-by-hand", "RENTAL_ID", "record a refund owed as paid back by hand: --amount, --reference, --by", runRefundMadeByHand},
	{"mismatches", "", "provider events that did not match the payment recorded, oldest first", runMismatches},
	{"cancellations", "", "cancellations owed to the payment provider, oldest first", runCancellations},
	{"parked", "", "stream records parked for the sweep to deliver again, soonest due first", runParked},
	{"repair", "RENTAL_ID | --stuck", "deliver a rental's records again to the process and the projector", runRepair},
	{"audit", "", "check the service's invariants across both tables", runAudit},
	{"rebuild", "", "rebuild Deadlines, with the sweep's schedule paused", runRebuild},
}

func lookup(name string) (subcommand, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return subcommand{}, false
}

const usageTail = `
Run 'rentalctl <command> -h' (or 'rentalctl help <command>') for a command's flags.
Flags are written -name or --name, before or after the command's argument ('--'
ends the flags).

Configuration comes from the environment, as the service's functions read it; each
command's flags override it:
  EVENTS_TABLE, DEADLINES_TABLE   the Events and Deadlines tables
  DEADLINES_SHARDS                the Deadlines table's write shards (4)
  SETTLED_MARKER_TTL            how long a settled payment's marker is kept (72h)
  PAYMENT_TIMEOUT               how long a payment may stay outstanding (15m)
  STUCK_GRACE, STUCK_REPAIR     when a rental is stuck (10m past the timeout), and
                                whether a sweep repairs it (auto)
  RENTAL_PERIOD                 how long an approved rental lasts before its return
                                is overdue (2h)
  SWEEP_CONCURRENCY             how many cancellations a sweep sends at once (8)
  SWEEP_RATE                    how often the sweep runs (rate(1 minute)): it backs
                                off its retries of a cancellation owed to the
                                provider and of a parked record by it
  RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY
                                the rental-payment process's settings
  PAYMENT_PROVIDER, STRIPE_SECRET_ID or STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET,
  STRIPE_API_URL                the payment provider, as the functions reach it
  PAYMENT_PROVIDER_TIMEOUT      how long one call to the provider may take (5s)
  SWEEP_SCHEDULE_NAME, SWEEP_SCHEDULE_GROUP, SWEEP_RULE_NAME
                                the schedule (or rule) rebuild pauses
make run prints them for its stack, ready to paste.
AWS access is configured as for the AWS CLI: AWS_REGION, AWS_PROFILE or
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), and
AWS_ENDPOINT_URL to use the local stack's emulator instead of AWS.

Output is for people by default; --json prints JSON instead. Exit status: 0 on
success, 1 on failure (audit violations included), 2 for a bad command line or
configuration.
`

func usage() string {
	var b strings.Builder
	b.WriteString("Usage: rentalctl <command> [flags] [arguments]\n\nCommands:\n")
	// One column for the summaries, as wide as the longest synopsis needs.
	var width int
	for _, c := range commands {
		width = max(width, len(c.synopsis()))
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.synopsis(), c.summary)
	}
	b.WriteString(usageTail)
	return b.String()
}

// synopsis is the command's name and what follows it, as its line in usage shows it.
func (c subcommand) synopsis() string { return strings.TrimSpace(c.name + " " + c.args) }

// cli is where a command's input comes from and its output goes.
type cli struct {
	// getenv reads the environment (the AWS SDK's variables AWS_REGION,
	// AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN
	// included).
	getenv         func(string) string
	stdout, stderr io.Writer
}

// run is rentalctl: args are the command-line arguments after the program's name.
// Results go to stdout; progress, warnings, and usage after a mistake to stderr.
// Errors in the command line or the configuration match errUsage; -h, --help and
// help print usage to stdout and return nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return fmt.Errorf("%w: no command given", errUsage)
	}
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr}
	switch name := args[0]; name {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return nil
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage())
			return nil
		}
		cmd, ok := lookup(args[1])
		if !ok || len(args) > 2 {
			fmt.Fprint(stderr, usage())
			return fmt.Errorf("%w: help: want one command's name, got %q", errUsage, args[1:])
		}
		return helpOf(ctx, cmd, c)
	default:
		cmd, ok := lookup(name)
		if !ok {
			fmt.Fprint(stderr, usage())
			return fmt.Errorf("%w: unknown command %q", errUsage, name)
		}
		err := cmd.run(ctx, c, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
}

// helpOf prints a command's usage to stdout, as its -h does.
func helpOf(ctx context.Context, cmd subcommand, c *cli) error {
	err := cmd.run(ctx, c, []string{"-h"})
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// flags is one command's flag set. Flags that stand for an environment variable
// default to it and, once parsed, override it in lookup, which is what the command
// hands to internal/ops/ctl.
type flags struct {
	fs     *flag.FlagSet
	usage  string // the command's description, printed before its flags
	getenv func(string) string
	// settings are the environment variables flags stand for, with the flag's name
	// and its value as the environment would spell it.
	settings map[string]setting
	// envErrs are environment variables that do not parse, by flag name: an error
	// unless the flag is given.
	envErrs map[string]error
}

type setting struct {
	flag  string
	value func() string
	check func() error // nil, or what is wrong with the value
}

func newFlags(name, usage string, getenv func(string) string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // usage and errors are printed by parse
	fs.Usage = func() {}
	return &flags{fs: fs, usage: usage, getenv: getenv, settings: map[string]setting{}, envErrs: map[string]error{}}
}

// eventsTable adds -events-table; use says what the command does with the table.
func (f *flags) eventsTable(p *string, use string) {
	f.stringEnv(p, "events-table", envEventsTable, "the Events table "+use)
}

// deadlinesTable adds -deadlines-table; use says what the command does with the table.
func (f *flags) deadlinesTable(p *string, use string) {
	f.stringEnv(p, "deadlines-table", envDeadlinesTable, "the Deadlines table "+use)
}

func (f *flags) stringEnv(p *string, name, env, help string) {
	f.fs.StringVar(p, name, f.getenv(env), help+" ["+env+"]")
	f.settings[env] = setting{name, func() string { return *p }, nil}
}

func (f *flags) intEnv(p *int, name, env string, def int, help string) {
	if n, err := wiring.Int(f.getenv, env, def); err != nil {
		f.envErrs[name] = err // the setting's rule, and its one form of refusal
	} else {
		def = n
	}
	f.fs.IntVar(p, name, def, help+" ["+env+"]")
	f.settings[env] = setting{name, func() string { return strconv.Itoa(*p) }, func() error {
		if *p < 1 {
			return fmt.Errorf("-%s %d: want a positive whole number", name, *p)
		}
		return nil
	}}
}

func (f *flags) durationEnv(p *time.Duration, name, env string, def time.Duration, help string) {
	if d, err := wiring.Duration(f.getenv, env, def); err != nil {
		f.envErrs[name] = err
	} else {
		def = d
	}
	f.fs.DurationVar(p, name, def, help+" ["+env+"]")
	f.settings[env] = setting{name, func() string { return p.String() }, func() error {
		if *p <= 0 {
			return fmt.Errorf("-%s %s: want a positive duration", name, *p)
		}
		return nil
	}}
}

func (f *flags) jsonFlag(p *bool) { f.fs.BoolVar(p, "json", false, "print JSON instead of text") }

// lookup reads the environment with the flags' values in place of the variables
// they stand for.
func (f *flags) lookup(name string) string {
	if s, ok := f.settings[name]; ok {
		return s.value()
	}
	return f.getenv(name)
}

// printUsage prints the command's usage: all of it, or only its synopsis and flags.
func (f *flags) printUsage(w io.Writer, full bool) {
	if full {
		fmt.Fprint(w, f.usage)
	} else {
		synopsis, _, _ := strings.Cut(f.usage, "\n\n")
		fmt.Fprintf(w, "%s\n\nRun 'rentalctl %s -h' for what it does.\n", synopsis, f.fs.Name())
	}
	fmt.Fprintln(w, "\nFlags (each defaults to the environment variable in brackets, if any):")
	f.fs.SetOutput(w)
	f.fs.PrintDefaults()
	f.fs.SetOutput(io.Discard)
}

// parse parses args, flags and positional arguments in any order ("--" ends the
// flags), and checks that there are exactly as many positional arguments as names
// lists. On -h it prints the usage to stdout and returns flag.ErrHelp; on a mistake
// it prints the synopsis and flags to stderr and returns an error matching errUsage.
func (f *flags) parse(args []string, c *cli, names ...string) ([]string, error) {
	var pos []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.printUsage(c.stdout, true)
				return nil, err
			}
			return nil, f.fail(c, "%w", err)
		}
		rest := f.fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, env := range slices.Sorted(maps.Keys(f.settings)) {
		s := f.settings[env]
		if err := f.envErrs[s.flag]; err != nil && !given[s.flag] {
			return nil, f.fail(c, "%w (or give -%s)", err, s.flag)
		}
		if s.check != nil && given[s.flag] {
			if err := s.check(); err != nil {
				return nil, f.fail(c, "%w", err)
			}
		}
	}
	switch {
	case len(pos) < len(names):
		return nil, f.fail(c, "missing %s", strings.Join(names[len(pos):], " "))
	case len(pos) > len(names):
		return nil, f.fail(c, "unexpected arguments %q", pos[len(names):])
	}
	return pos, nil
}

// fail prints the command's synopsis and flags to stderr and returns the error,
// matching errUsage.
func (f *flags) fail(c *cli, format string, args ...any) error {
	f.printUsage(c.stderr, false)
	return fmt.Errorf("%w: %s: %w", errUsage, f.fs.Name(), fmt.Errorf(format, args...))
}

// require reports a missing table (or other required setting) as a usage error.
func (f *flags) require(c *cli, names ...string) error {
	for _, name := range names {
		fl := f.fs.Lookup(name)
		if fl == nil || fl.Value.String() != "" {
			continue
		}
		for env, s := range f.settings {
			if s.flag == name {
				return f.fail(c, "-%s (or %s) is required", name, env)
			}
		}
		return f.fail(c, "-%s is required", name)
	}
	return nil
}

// rentalID checks that id can be a rental id (a bike id, "_" and a suffix, as POST
// /rentals returns it), as a usage error if not.
func (f *flags) rentalID(c *cli, id string) error {
	if _, err := rental.BikeIDOf(id); err != nil {
		return f.fail(c, "%q is not a rental id (a bike id, an underscore and %d letters or digits, as POST /rentals returns it)", id, rental.RentalSuffixLength)
	}
	return nil
}

// open checks that the tables the command needs (named by their flags) were given,
// and opens the stack the command works on, with the flags in place of the
// variables they stand for.
func (f *flags) open(ctx context.Context, c *cli, tables ...string) (*ctl.Stack, error) {
	if err := f.require(c, tables...); err != nil {
		return nil, err
	}
	return ctl.Open(ctx, f.lookup, c.logger())
}

// failed is what a command returns for an error of internal/ops/ctl: a setting the
// service refuses is a usage error, naming the command; any other error is
// returned as it is.
func failed(name string, err error) error {
	if ctl.IsSettings(err) {
		return fmt.Errorf("%w: %s: %w", errUsage, name, err)
	}
	return err
}

// logger is what the service's parts log through: warnings and errors, as text on
// stderr.
func (c *cli) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// printJSON writes v to stdout as indented JSON.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// timestamp is how rentalctl prints times: UTC, to the millisecond.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// seconds rounds d to the second, for people to read.
func seconds(d time.Duration) time.Duration { return d.Round(time.Second) }

// count says how many of noun there are: "1 payment", "2 payments".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
