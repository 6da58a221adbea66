package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamotypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
	"github.com/bikerental/bikerental/internal/wiring/operatorenv"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// env is a test's environment, read through run's getenv.
type env map[string]string

func (e env) get(name string) string { return e[name] }

// emulatorEnv points rentalctl at the emulator through the SDK's own variables.
func emulatorEnv(w *rebuildtest.World, endpoint string) env {
	return env{
		"AWS_ENDPOINT_URL":      endpoint,
		"AWS_REGION":            emulator.Region,
		"AWS_ACCESS_KEY_ID":     "test",
		"AWS_SECRET_ACCESS_KEY": "test",
		"EVENTS_TABLE":          w.EventsTable,
		"DEADLINES_TABLE":       w.DeadlinesTable,
		"DEADLINES_SHARDS":      "2",
	}
}

func createSchedule(t *testing.T, client *scheduler.Client) string {
	t.Helper()
	name := rebuildtest.Name("sweep")
	_, err := client.CreateSchedule(context.Background(), &scheduler.CreateScheduleInput{
		Name:               aws.String(name),
		ScheduleExpression: aws.String("rate(1 minute)"),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		Target: &types.Target{
			Arn:     aws.String("arn:aws:lambda:us-east-1:000000000000:function:sweep"),
			RoleArn: aws.String("arn:aws:iam::000000000000:role/sweep-scheduler"),
		},
		State: types.ScheduleStateEnabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.DeleteSchedule(context.Background(), &scheduler.DeleteScheduleInput{Name: aws.String(name)})
	})
	return name
}

func scheduleState(t *testing.T, client *scheduler.Client, name string) types.ScheduleState {
	t.Helper()
	out, err := client.GetSchedule(context.Background(), &scheduler.GetScheduleInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return out.State
}

// world has one payment outstanding and one of each settlement.
func world(t *testing.T) (*rebuildtest.World, []string) {
	w := rebuildtest.NewWorld(t)
	outstanding := []string{w.Rent("bike1", rebuildtest.Outstanding), w.Rent("bike2", rebuildtest.Outstanding)}
	w.Rent("bike3", rebuildtest.Confirmed)
	w.Rent("bike4", rebuildtest.Rejected)
	w.Rent("bike5", rebuildtest.Cancelled)
	slices.Sort(outstanding)
	return w, outstanding
}

// observer is a proxy in front of the emulator that calls a function before it
// passes on each Scan, one at a time, so that a test can see what state the schedule
// was in while the rebuild listed the streams, or interrupt it at that point.
type observer struct {
	*httptest.Server
	mu     sync.Mutex
	onScan func()
}

func newObserver(t *testing.T) *observer {
	backend, err := url.Parse(emulatortest.Server(t).Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	o := &observer{}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // interrupted requests are expected
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.Scan" {
			o.mu.Lock()
			if o.onScan != nil {
				o.onScan()
			}
			o.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *observer) whenScanning(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onScan = f
}

func TestRebuildPendingPausesTheScheduleRebuildsAndResumes(t *testing.T) {
	w, outstanding := world(t)
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)
	obs := newObserver(t)
	var during []types.ScheduleState
	obs.whenScanning(func() {
		out, err := sched.GetSchedule(context.Background(), &scheduler.GetScheduleInput{Name: aws.String(name)})
		if err != nil {
			t.Errorf("get schedule during the rebuild: %v", err)
			return
		}
		during = append(during, out.State)
	})

	e := emulatorEnv(w, obs.URL)
	e["SWEEP_SCHEDULE_NAME"] = name
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"rebuild"}, e.get, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}

	if len(during) == 0 || slices.ContainsFunc(during, func(s types.ScheduleState) bool { return s != types.ScheduleStateDisabled }) {
		t.Errorf("schedule while the streams were listed: %v, want DISABLED throughout", during)
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled {
		t.Errorf("schedule is %s after the rebuild, want ENABLED", s)
	}
	if got := w.Pending(w.Projection(2)); !slices.Equal(got, outstanding) {
		t.Errorf("pending %q, want the outstanding %q", got, outstanding)
	}
	if want := "15 streams, 29 records"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout %q does not report %q", stdout.String(), want)
	}
}

func TestRebuildPendingResumesTheScheduleWhenInterrupted(t *testing.T) {
	w, _ := world(t)
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)
	obs := newObserver(t)
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	obs.whenScanning(interrupt) // as Ctrl-C in the middle of the rebuild would

	e := emulatorEnv(w, obs.URL)
	e["SWEEP_SCHEDULE_NAME"] = name
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"rebuild"}, e.get, &stdout, &stderr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want the interruption\nstderr:\n%s", err, stderr.String())
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled {
		t.Errorf("schedule is %s after the interrupted rebuild, want ENABLED", s)
	}
}

func TestRebuildPendingResumesTheScheduleWhenTheRebuildFails(t *testing.T) {
	w, _ := world(t)
	// A payment stream whose record cannot be read: the replay fails on it, after the
	// schedule was paused.
	corrupt := dynamo.EncodeRecord(eventstore.Record{StreamID: payment.StreamID("rp_corrupt_AAAAAAAAAAAAAAAAAAAAAA"), Version: 1,
		Event: eventstore.Event{ID: "corrupt-1", Type: "PaymentPrepared", Data: []byte("{}"), RecordedAt: time.Now()}})
	corrupt[schema.EventsData] = &dynamotypes.AttributeValueMemberS{Value: "not json"}
	if _, err := w.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(w.EventsTable), Item: corrupt}); err != nil {
		t.Fatal(err)
	}
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)

	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"rebuild", "-schedule-name", name, "-schedule-group", "default"}, e.get, &stdout, &stderr)
	if err == nil {
		t.Fatal("run succeeded replaying a corrupt record")
	}
	if !strings.Contains(stderr.String(), "paused schedule") {
		t.Errorf("the failure came before the schedule was paused: %v", err)
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled {
		t.Errorf("schedule is %s after the failed rebuild, want ENABLED", s)
	}
}

func TestRebuildPendingTouchesNothingWhenATableIsMissing(t *testing.T) {
	w, _ := world(t)
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)
	counting := newObserver(t)
	var scans int
	counting.whenScanning(func() { scans++ })

	e := emulatorEnv(w, counting.URL)
	e["DEADLINES_TABLE"] = "no-such-table"
	e["SWEEP_SCHEDULE_NAME"] = name
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"rebuild"}, e.get, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "no-such-table") {
		t.Fatalf("run = %v, want an error naming the missing table", err)
	}
	if strings.Contains(stderr.String(), "paused") || scans != 0 {
		t.Errorf("went ahead without the table: %d scans, stderr %q", scans, stderr.String())
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled {
		t.Errorf("schedule is %s, want it untouched", s)
	}
}

func TestRebuildPendingWithoutAScheduleWarnsAndRebuilds(t *testing.T) {
	w, outstanding := world(t)
	var stdout, stderr bytes.Buffer
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	// Flags win over the environment.
	e["EVENTS_TABLE"] = "no-such-table"
	args := []string{"rebuild", "-shards", "3", "-events-table", w.EventsTable}
	if err := run(context.Background(), args, e.get, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "warning: no sweep schedule") {
		t.Errorf("no warning about the unpaused sweep in %q", stderr.String())
	}
	if got := w.Pending(w.Projection(3)); !slices.Equal(got, outstanding) {
		t.Errorf("pending %q, want %q", got, outstanding)
	}
}

func TestUsage(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     env
		wantErr error
		stdout  string
		stderr  string
		errText string
	}{
		{name: "help", args: []string{"-h"}, stdout: "Usage: rentalctl <command>"},
		{name: "help word", args: []string{"help"}, stdout: "rebuild "},
		{name: "no command", args: nil, wantErr: errUsage, stderr: "Usage: rentalctl <command>"},
		{name: "unknown command", args: []string{"rebuild-everything"}, wantErr: errUsage, stderr: "Usage: rentalctl <command>"},
		{name: "rebuild's former name", args: []string{"rebuild-pending"}, env: env{"EVENTS_TABLE": "e", "DEADLINES_TABLE": "p"}, wantErr: errUsage, stderr: "Usage: rentalctl <command>", errText: `unknown command "rebuild-pending"`},
		{name: "command help", args: []string{"rebuild", "-h"}, stdout: "-schedule-name"},
		{name: "unknown flag", args: []string{"rebuild", "-bogus"}, wantErr: errUsage, stderr: "-deadlines-table"},
		{name: "stray argument", args: []string{"rebuild", "now"}, env: env{"EVENTS_TABLE": "e", "DEADLINES_TABLE": "p"}, wantErr: errUsage},
		{name: "no events table", args: []string{"rebuild"}, env: env{"DEADLINES_TABLE": "p"}, wantErr: errUsage},
		{name: "no deadlines table", args: []string{"rebuild", "-events-table", "e"}, wantErr: errUsage},
		{name: "bad shards", args: []string{"rebuild"}, env: env{"DEADLINES_SHARDS": "four"}, wantErr: errUsage, errText: `bad setting DEADLINES_SHARDS="four": want `},
		{name: "bad timeout", args: []string{"pending"}, env: env{"DEADLINES_TABLE": "p", "PAYMENT_TIMEOUT": "15"}, wantErr: errUsage, errText: `bad setting PAYMENT_TIMEOUT="15": want a positive duration`},
		{name: "help lists audit", args: []string{"-h"}, stdout: "audit "},
		{name: "audit help", args: []string{"audit", "-h"}, stdout: "-quiet"},
		{name: "help of a command", args: []string{"help", "history"}, stdout: "Usage: rentalctl history [flags] RENTAL_ID"},
		{name: "bad shards flag", args: []string{"rebuild", "-shards", "0"}, env: env{"EVENTS_TABLE": "e", "DEADLINES_TABLE": "p"}, wantErr: errUsage},
		{name: "bad shards overridden", args: []string{"rebuild", "-shards", "2"}, env: env{"DEADLINES_SHARDS": "four"}, wantErr: errUsage, errText: "-events-table (or EVENTS_TABLE) is required"},
		{name: "audit unknown flag", args: []string{"audit", "--bogus"}, wantErr: errUsage, stderr: "-json"},
		{name: "audit stray argument", args: []string{"audit", "now"}, env: env{"EVENTS_TABLE": "e", "DEADLINES_TABLE": "p"}, wantErr: errUsage},
		{name: "audit without events table", args: []string{"audit", "--quiet"}, env: env{"DEADLINES_TABLE": "p"}, wantErr: errUsage},
		{name: "audit without deadlines table", args: []string{"audit", "--events-table", "e"}, wantErr: errUsage},
		{name: "audit with no grace", args: []string{"audit", "--grace", "0s"}, env: env{"EVENTS_TABLE": "e", "DEADLINES_TABLE": "p"}, wantErr: errUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env == nil {
				c.env = env{}
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, c.env.get, &stdout, &stderr)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("run = %v, want %v", err, c.wantErr)
			}
			if c.errText != "" && !strings.Contains(err.Error(), c.errText) {
				t.Errorf("error %q, want it to say %q", err, c.errText)
			}
			if !strings.Contains(stdout.String(), c.stdout) {
				t.Errorf("stdout %q, want it to contain %q", stdout.String(), c.stdout)
			}
			if !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), c.stderr)
			}
		})
	}
}

// TestUsageListsTheCommandsInTwoColumns: every command's summary starts in the
// same column of rentalctl -h, past the longest synopsis.
func TestUsageListsTheCommandsInTwoColumns(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, env{}.get, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(stdout.String(), "\nCommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	lines := strings.Split(list, "\n")
	if len(lines) != len(commands) {
		t.Fatalf("%d lines of commands, want %d:\n%s", len(lines), len(commands), list)
	}
	column := -1
	for i, line := range lines {
		name := commands[i].synopsis()
		rest, ok := strings.CutPrefix(line, "  "+name+"  ")
		if !ok {
			t.Errorf("line %q does not start with %q and two spaces", line, name)
			continue
		}
		at := len(line) - len(strings.TrimLeft(rest, " "))
		if column < 0 {
			column = at
		}
		if at != column {
			t.Errorf("the summary of %q starts in column %d, the first one's in %d:\n%s", name, at, column, list)
		}
	}
}

func TestAuditOfAQuietCleanWorldSucceeds(t *testing.T) {
	w, _ := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"rebuild"}, e.get, &stdout, &stderr); err != nil {
		t.Fatalf("rebuild: %v\nstderr:\n%s", err, stderr.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"audit", "--quiet"}, e.get, &stdout, &stderr); err != nil {
		t.Fatalf("audit: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	want := "20 streams, 34 records, 5 rentals, 5 payments, 5 deadline rows" // 5 bikes, payments, processes and renters; a row per outstanding payment and open process, and the approved rental's return due
	if out := stdout.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, want) || !strings.Contains(out, "no violations (quiet checks included)") {
		t.Errorf("stdout %q, want one summary line with %q and no violations", out, want)
	}
}

func TestAuditReportsViolationsAndFails(t *testing.T) {
	w, outstanding := world(t) // Deadlines never projected: both outstanding payments lack a row, and their processes
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	// and the approved rental (bike3) its return due.
	missing := []string{"deadline-missing bike-bike3: "}
	for _, id := range outstanding {
		missing = append(missing, "deadline-missing payment-rp_"+id+": ")
	}
	for _, id := range outstanding {
		bike, _ := rental.BikeIDOf(id)
		missing = append(missing, "open-missing bike-"+bike+": ")
	}

	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"audit", "--quiet"}, e.get, &stdout, &stderr)
	if !errors.Is(err, errViolations) || errors.Is(err, errUsage) {
		t.Fatalf("audit = %v, want violations found\nstderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 6 || !strings.Contains(lines[5], ": 5 violations") || !slices.EqualFunc(lines[:5], missing, strings.HasPrefix) {
		t.Errorf("stdout:\n%s\nwant a line for each of %q and a summary", stdout.String(), missing)
	}

	// As JSON, and with the tables given by flags, which win over the environment.
	e["EVENTS_TABLE"], e["DEADLINES_TABLE"] = "no-such-table", "no-such-table"
	stdout.Reset()
	err = run(context.Background(), []string{"audit", "-quiet", "-json", "-events-table", w.EventsTable, "-deadlines-table", w.DeadlinesTable}, e.get, &stdout, &stderr)
	if !errors.Is(err, errViolations) {
		t.Fatalf("audit -json = %v, want violations found", err)
	}
	var report audit.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout.String())
	}
	if report.OK() || len(report.Violations) != 5 || report.Violations[0].Invariant != audit.DeadlineMissing || report.Violations[2].Invariant != audit.DeadlineMissing || report.Violations[3].Invariant != audit.OpenMissing || report.Streams != 20 {
		t.Errorf("JSON report %+v, want 3 deadline-missing (the return's, the 2 payments') and 2 open-missing violations", report)
	}

	// Not quiet, payments this young may still be on their way to the projection.
	stdout.Reset()
	args := []string{"audit", "-events-table", w.EventsTable, "-deadlines-table", w.DeadlinesTable}
	if err := run(context.Background(), args, e.get, &stdout, &stderr); err != nil {
		t.Errorf("audit without -quiet = %v, want nothing reported within the grace period\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "quiet checks skipped") {
		t.Errorf("stdout %q does not say the quiet checks were skipped", stdout.String())
	}
}

func TestAuditOfAMissingTableFails(t *testing.T) {
	w, _ := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	e["DEADLINES_TABLE"] = "no-such-table"
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"audit"}, e.get, &stdout, &stderr)
	if err == nil || errors.Is(err, errUsage) || errors.Is(err, errViolations) || !strings.Contains(err.Error(), "no-such-table") {
		t.Fatalf("audit = %v, want a failure naming the missing table", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing reported", stdout.String())
	}
}

func TestRebuildPausesTheSweepsRuleAndResumesIt(t *testing.T) {
	w, outstanding := world(t)
	rules := eventbridge.NewFromConfig(emulatortest.Config(t))
	name := emulatortest.TableName(t, "sweep-rule")
	if _, err := rules.PutRule(context.Background(), &eventbridge.PutRuleInput{Name: aws.String(name), ScheduleExpression: aws.String("rate(1 minute)")}); err != nil {
		t.Fatal(err)
	}
	state := func() ebtypes.RuleState {
		out, err := rules.DescribeRule(context.Background(), &eventbridge.DescribeRuleInput{Name: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return out.State
	}
	obs := newObserver(t)
	var during []ebtypes.RuleState
	obs.whenScanning(func() { during = append(during, state()) })
	e := emulatorEnv(w, obs.URL)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"rebuild", "-rule-name", name}, e.get, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	if len(during) == 0 || slices.ContainsFunc(during, func(s ebtypes.RuleState) bool { return s != ebtypes.RuleStateDisabled }) {
		t.Errorf("rule while the streams were listed: %v, want DISABLED throughout", during)
	}
	if s := state(); s != ebtypes.RuleStateEnabled {
		t.Errorf("rule is %s after the rebuild, want ENABLED", s)
	}
	if got := w.Pending(w.Projection(2)); !slices.Equal(got, outstanding) {
		t.Errorf("pending %q, want the outstanding %q", got, outstanding)
	}
	err := run(context.Background(), []string{"rebuild", "-rule-name", name, "-schedule-name", "x"}, e.get, &stdout, &stderr)
	if !errors.Is(err, errUsage) {
		t.Errorf("both a rule and a schedule: %v, want a usage error", err)
	}
}

// TestASecondRebuildRefusesToStart holds the rebuild lock as a running rebuild
// would: rebuild refuses, leaves the sweep's schedule as it was and the lock with
// its holder.
func TestASecondRebuildRefusesToStart(t *testing.T) {
	w, _ := world(t)
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)
	held, err := rebuild.Acquire(context.Background(), w.Client, w.DeadlinesTable, "the first rebuild", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"rebuild", "-schedule-name", name, "-schedule-group", "default"}, e.get, &stdout, &stderr)
	if !errors.Is(err, rebuild.ErrLocked) || !strings.Contains(err.Error(), "the first rebuild") || exitStatus(err) != 1 {
		t.Fatalf("rebuild while another runs: %v (exit %d)", err, exitStatus(err))
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled || strings.Contains(stderr.String(), "paused") {
		t.Errorf("the refused rebuild touched the schedule: %s\n%s", s, stderr.String())
	}
	if err := held.Renew(context.Background()); err != nil {
		t.Errorf("the first rebuild lost its lock: %v", err)
	}
}

// TestARebuildResumesWhatAnInterruptedOnePaused plays a rebuild that paused the
// sweep and died: its lock expires, and the next rebuild takes it over and resumes
// the schedule when it ends, though the schedule was already disabled when it began.
func TestARebuildResumesWhatAnInterruptedOnePaused(t *testing.T) {
	w, _ := world(t)
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)
	ctx := context.Background()
	dead, err := rebuild.Acquire(ctx, w.Client, w.DeadlinesTable, "a rebuild that died", time.Minute,
		func() time.Time { return time.Now().Add(-time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	if err := rebuild.Schedule(sched, "default", name).Disable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dead.Paused(ctx, true); err != nil {
		t.Fatal(err)
	}
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"rebuild", "-schedule-name", name, "-schedule-group", "default"}, e.get, &stdout, &stderr); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, stderr.String())
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled || !strings.Contains(stderr.String(), "an interrupted rebuild left") {
		t.Errorf("schedule %s after taking over an interrupted rebuild:\n%s", s, stderr.String())
	}
	if out, err := w.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.DeadlinesTable),
		Key: map[string]dynamotypes.AttributeValue{aws.ToString(deadlinetable.Definition("").KeySchema[0].AttributeName): &dynamotypes.AttributeValueMemberS{Value: rebuild.LockKey}}}); err != nil || out.Item != nil {
		t.Errorf("the lock is still there after the rebuild: %v %v", out, err)
	}
}

// TestARebuildThatLostItsLockLeavesTheSweepToTheHolder lets another rebuild, whose
// clock runs ahead by more than the lease's margin, take the lock over while the
// rebuild lists the streams: the rebuild fails saying it lost the lock, and leaves
// the schedule disabled and the lock, with its pause, to the holder, whose job it
// now is to resume the sweep.
func TestARebuildThatLostItsLockLeavesTheSweepToTheHolder(t *testing.T) {
	w, _ := world(t)
	sched := scheduler.NewFromConfig(emulatortest.Config(t))
	name := createSchedule(t, sched)
	obs := newObserver(t)
	var once sync.Once
	var other *rebuild.Lock
	obs.whenScanning(func() {
		once.Do(func() {
			// Its clock three minutes ahead, the other rebuild finds the lease over.
			var err error
			other, err = rebuild.Acquire(context.Background(), w.Client, w.DeadlinesTable, "the other rebuild", time.Hour,
				func() time.Time { return time.Now().Add(3 * time.Minute) })
			if err != nil || !other.Inherited {
				t.Errorf("take the lock over: %+v, %v; want the pause inherited", other, err)
			}
		})
	})

	e := emulatorEnv(w, obs.URL)
	e["SWEEP_SCHEDULE_NAME"] = name
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"rebuild"}, e.get, &stdout, &stderr)
	var locked *rebuild.LockedError
	if !errors.Is(err, rebuild.ErrLost) || !errors.As(err, &locked) || locked.Owner != "the other rebuild" || exitStatus(err) != 1 {
		t.Fatalf("rebuild = %v (exit %d), want the lock lost to the other rebuild\nstderr:\n%s", err, exitStatus(err), stderr.String())
	}
	if !strings.Contains(err.Error(), "left paused") || strings.Contains(stderr.String(), "resumed") {
		t.Errorf("the rebuild does not say it left the schedule paused: %v\nstderr:\n%s", err, stderr.String())
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateDisabled {
		t.Errorf("schedule %s after the rebuild lost its lock, want DISABLED for the holder to resume", s)
	}
	if other == nil {
		t.FailNow()
	}
	if err := other.ResumeSweep(context.Background(), rebuild.Schedule(sched, "default", name)); err != nil {
		t.Fatalf("the holder's resume: %v", err)
	}
	if s := scheduleState(t, sched, name); s != types.ScheduleStateEnabled {
		t.Errorf("schedule %s after the holder's resume, want ENABLED", s)
	}
	if err := other.Release(context.Background()); err != nil {
		t.Errorf("the holder's release: %v", err)
	}
}

// TestEveryVariableRentalctlReadsIsListed runs every command, with the generic
// provider and with Stripe's, and records each environment variable it reads: every
// one must be in operatorenv's list, which the local runner prints for its stack.
func TestEveryVariableRentalctlReadsIsListed(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	outstanding, confirmed := w.Rent("listed1", rebuildtest.Outstanding), w.Rent("listed2", rebuildtest.Confirmed)
	owed := w.Rent("listed3", rebuildtest.Outstanding)
	for _, c := range []payment.Command{payment.CancelPayment{Reference: payment.ReferenceFor(owed)}, payment.ConfirmPayment{Reference: payment.ReferenceFor(owed)}, payment.OweRefund{Reference: payment.ReferenceFor(owed)}} {
		if _, err := w.Commands.Payment(context.Background(), c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	base := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	base["SWEEP_SCHEDULE_NAME"] = createSchedule(t, scheduler.NewFromConfig(emulatortest.Config(t)))
	runs := map[string][][]string{
		"history":             {{"history", outstanding}},
		"pending":             {{"pending"}, {"pending", "--overdue"}},
		"cancel":              {{"cancel", confirmed}},
		"sweep":               {{"sweep", "--dry-run"}, {"sweep"}},
		"refunds":             {{"refunds"}},
		"refund-made-by-hand": {{"refund-made-by-hand", owed, "--amount", "1500", "--reference", "bank-1", "--by", "ann"}},
		"repair":              {{"repair", confirmed}, {"repair", "--stuck"}},
		"audit":               {{"audit", "--quiet"}},
		"rebuild":             {{"rebuild"}},
		"cancellations":       {{"cancellations"}},
		"parked":              {{"parked"}},
		"mismatches":          {{"mismatches"}},
	}
	var mu sync.Mutex
	read := map[string]bool{}
	for _, provider := range []env{{}, {"PAYMENT_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "sk_test_123", "STRIPE_API_URL": "http://127.0.0.1:9"}} {
		e := env{}
		maps.Copy(e, base)
		maps.Copy(e, provider)
		getenv := func(name string) string {
			mu.Lock()
			defer mu.Unlock()
			read[name] = true
			return e[name]
		}
		for _, cmd := range commands {
			cases, ok := runs[cmd.name]
			if !ok {
				t.Fatalf("rentalctl %s is not run here: add it, so that what it reads is checked", cmd.name)
			}
			for _, args := range cases {
				if err := run(context.Background(), args, getenv, io.Discard, io.Discard); err != nil && provider["PAYMENT_PROVIDER"] == "" {
					t.Fatalf("rentalctl %q: %v", args, err)
				}
			}
		}
	}
	listed := operatorenv.Names()
	for _, name := range slices.Sorted(maps.Keys(read)) {
		if !slices.Contains(listed, name) {
			t.Errorf("rentalctl reads %s, which operatorenv does not list: the local runner's block would leave it out", name)
		}
	}
	for _, name := range listed {
		if !strings.Contains(usage(), name) {
			t.Errorf("rentalctl -h does not mention %s, which it reads", name)
		}
	}
	for _, must := range []string{"PAYMENT_TIMEOUT", "STRIPE_API_URL", "SWEEP_SCHEDULE_NAME", "AWS_ENDPOINT_URL"} {
		if !read[must] {
			t.Errorf("rentalctl never read %s: the runs here do not cover what it reads", must)
		}
	}
}

// TestPendingHelpNamesEveryDeclaredKind: pending -h names, in --kind's line and in
// the text, every kind the to-do list declares (ctl.DeadlineKinds, from
// deadlinekinds.Listed), so that a kind added to the declaration is in the help.
func TestPendingHelpNamesEveryDeclaredKind(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"pending", "-h"}, env{}.get, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	help := stdout.String()
	_, flagHelp, ok := strings.Cut(help, "-kind string\n")
	if !ok {
		t.Fatalf("pending -h has no -kind flag:\n%s", help)
	}
	flagHelp, _, _ = strings.Cut(flagHelp, "\n")
	listed := regexp.MustCompile(`The kinds: ([^.]*)\.`).FindStringSubmatch(help)
	if listed == nil {
		t.Fatalf("pending -h's text does not list the kinds:\n%s", help)
	}
	if len(ctl.DeadlineKinds) < 4 {
		t.Fatalf("ctl.DeadlineKinds = %v: fewer kinds than the service declares", ctl.DeadlineKinds)
	}
	for _, kind := range ctl.DeadlineKinds {
		word := regexp.MustCompile(`\b` + regexp.QuoteMeta(kind) + `\b`)
		if !word.MatchString(flagHelp) {
			t.Errorf("-kind's help %q does not name the kind %s", flagHelp, kind)
		}
		if !word.MatchString(listed[1]) {
			t.Errorf("pending -h's text lists the kinds %q, without %s", listed[1], kind)
		}
	}
}
