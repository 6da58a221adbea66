package schedules_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/schedules"
)

var ctx = context.Background()

// now is the tests' clock.
var now = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

// testKinds declares an order not confirmed within 15 minutes (precise), which an
// order flagged for review takes over (by hand); an invoice's reminder, due a week
// after its issue or its last reminder (precise, ordered); and an invoice unpaid
// 30 days after issue (swept, not precise).
func testKinds() deadlines.Kinds {
	send := deadlines.Send{Command: deadlines.CommandFunc(func(context.Context, deadlines.Row, string) (deadlines.Outcome, error) {
		return deadlines.Acted, nil
	})}
	return deadlines.MustKinds(
		deadlines.Kind{
			Name: "unconfirmed-order", Prefix: "order#", After: 15 * time.Minute, Work: send,
			Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}},
		},
		deadlines.Kind{
			Name: "order-review", Prefix: "order#", Work: deadlines.ByHand{ListedAs: "unconfirmed-order"}, Takes: "unconfirmed-order",
			Changes: deadlines.Events{Opens: []string{"OrderFlagged"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}},
		},
		deadlines.Kind{
			Name: "invoice-reminder", After: 7 * 24 * time.Hour, Work: send, Ordered: true,
			Changes: deadlines.Events{Opens: []string{"InvoiceIssued", "InvoiceReminded"}, Settles: []string{"InvoicePaid"}},
		},
		deadlines.Kind{
			Name: "unpaid-invoice", After: 30 * 24 * time.Hour, Work: send,
			Changes: deadlines.Events{Opens: []string{"InvoiceIssued"}, Settles: []string{"InvoicePaid"}},
		},
	)
}

const (
	group  = "deadlines"
	target = "arn:aws:lambda:eu-west-1:123456789012:function:orders-sweep"
	role   = "arn:aws:iam::123456789012:role/orders-scheduler"
	dlq    = "arn:aws:sqs:eu-west-1:123456789012:orders-deadlines-dlq"
)

func config(client schedules.API, logger *slog.Logger) schedules.Config {
	return schedules.Config{
		Client: client, Group: group, TargetARN: target, RoleARN: role, DeadLetterARN: dlq,
		Kinds: testKinds(), Precise: []string{"unconfirmed-order", "invoice-reminder"},
		Now: func() time.Time { return now }, Logger: logger,
	}
}

func newProjection(t *testing.T, client schedules.API) (*schedules.Projection, *index) {
	t.Helper()
	x := newIndex(testKinds())
	p, err := schedules.New(x, config(client, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return p, x
}

func event(stream string, position int64, typ string, at time.Time) deadlines.Record {
	return deadlines.Record{Stream: stream, Position: position, Type: typ, At: at}
}

func apply(t *testing.T, p *schedules.Projection, records ...deadlines.Record) {
	t.Helper()
	for _, r := range records {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatalf("%s %s@%d: %v", r.Type, r.Stream, r.Position, err)
		}
	}
}

func TestAnOpeningMakesOneScheduleAtTheRowsDueTimeAndItsSettlementDeletesIt(t *testing.T) {
	for _, settle := range []string{"OrderConfirmed", "OrderCancelled"} {
		t.Run(settle, func(t *testing.T) {
			fake := newFakeScheduler()
			p, _ := newProjection(t, fake)
			placed := event("order-17", 1, "OrderPlaced", now.Add(-time.Minute+250*time.Millisecond))
			apply(t, p, placed, placed) // delivered again: still one schedule, no error
			name := schedules.Name("order#order-17")
			s := fake.get(group, name)
			if s == nil {
				t.Fatalf("no schedule %s after the opening; calls %q", name, fake.callsMade())
			}
			if got, want := aws.ToString(s.ScheduleExpression), "at(2026-05-04T09:14:00)"; got != want {
				t.Errorf("expression %s, want %s (placed at 08:59:00.250 plus 15m, truncated)", got, want)
			}
			checkSchedule(t, s, "unconfirmed-order", "order#order-17")

			confirmed := event("order-17", 2, settle, now)
			apply(t, p, confirmed, confirmed) // the second deletion finds it gone, which is fine
			if fake.get(group, name) != nil {
				t.Error("the schedule outlived its row's settlement")
			}
			want := []string{"create " + name, "create " + name, "update " + name, "delete " + name, "delete " + name}
			if got := fake.callsMade(); !slices.Equal(got, want) {
				t.Errorf("calls %q, want %q", got, want)
			}
		})
	}
}

// checkSchedule checks what every schedule holds: UTC, no flexible window,
// deleted once fired, the sweep as its target, with the role, the dead-letter
// queue and the retry policy, and the one-row trigger of kind and key as input.
func checkSchedule(t *testing.T, s *scheduler.CreateScheduleInput, kind, key string) {
	t.Helper()
	if aws.ToString(s.ScheduleExpressionTimezone) != "UTC" || s.ActionAfterCompletion != types.ActionAfterCompletionDelete ||
		s.FlexibleTimeWindow == nil || s.FlexibleTimeWindow.Mode != types.FlexibleTimeWindowModeOff || s.State != types.ScheduleStateEnabled {
		t.Errorf("schedule %+v: want UTC, no flexible window, enabled, deleted after completion", s)
	}
	if s.Target == nil || aws.ToString(s.Target.Arn) != target || aws.ToString(s.Target.RoleArn) != role ||
		s.Target.DeadLetterConfig == nil || aws.ToString(s.Target.DeadLetterConfig.Arn) != dlq ||
		s.Target.RetryPolicy == nil || aws.ToInt32(s.Target.RetryPolicy.MaximumRetryAttempts) != schedules.RetryAttempts ||
		aws.ToInt32(s.Target.RetryPolicy.MaximumEventAgeInSeconds) != int32(schedules.MaxEventAge/time.Second) {
		t.Fatalf("target %+v: want the sweep, the role, the dead-letter queue and the retry policy", s.Target)
	}
	trigger, err := deadlines.ParseTrigger([]byte(aws.ToString(s.Target.Input)), testKinds())
	if err != nil || !trigger.OneRow() || trigger.Kind != kind || trigger.Key != key {
		t.Errorf("input %s: %+v, %v; want the one-row trigger of %s %s", aws.ToString(s.Target.Input), trigger, err, kind, key)
	}
}

// TestTheScheduleFollowsTheRowAsTheProjectionHoldsIt applies records in turn and
// checks, after each, the schedule of one row: at the due time the projection
// holds, or none.
func TestTheScheduleFollowsTheRowAsTheProjectionHoldsIt(t *testing.T) {
	type step struct {
		record deadlines.Record
		want   string // the schedule's expression; empty: none
	}
	tests := []struct {
		name  string
		key   string
		steps []step
	}{
		{"an opening after its row settled makes none", "order#order-1", []step{
			{event("order-1", 2, "OrderConfirmed", now), ""},
			{event("order-1", 1, "OrderPlaced", now.Add(-time.Minute)), ""},
		}},
		{"a row due already gets none", "order#order-2", []step{
			{event("order-2", 1, "OrderPlaced", now.Add(-time.Hour)), ""},
		}},
		{"a row due within the second gets none", "order#order-3", []step{
			{event("order-3", 1, "OrderPlaced", now.Add(-15*time.Minute+999*time.Millisecond)), ""},
		}},
		{"a row taken over by a kind worked by hand loses its schedule", "order#order-4", []step{
			{event("order-4", 1, "OrderPlaced", now), "at(2026-05-04T09:15:00)"},
			{event("order-4", 2, "OrderFlagged", now.Add(time.Minute)), ""},
			{event("order-4", 3, "OrderConfirmed", now.Add(2*time.Minute)), ""},
		}},
		{"an ordered kind's newer opening moves it, an older settlement does not", "invoice-reminder#invoice-5", []step{
			{event("invoice-5", 1, "InvoiceIssued", now), "at(2026-05-11T09:00:00)"},
			{event("invoice-5", 3, "InvoiceReminded", now.Add(24*time.Hour)), "at(2026-05-12T09:00:00)"},
			{event("invoice-5", 2, "InvoicePaid", now.Add(time.Hour)), "at(2026-05-12T09:00:00)"},
			{event("invoice-5", 1, "InvoiceIssued", now), "at(2026-05-12T09:00:00)"},
			{event("invoice-5", 4, "InvoicePaid", now.Add(25*time.Hour)), ""},
			{event("invoice-5", 5, "InvoiceReminded", now.Add(26*time.Hour)), "at(2026-05-12T11:00:00)"},
		}},
		{"a kind that is not precise gets none", "unpaid-invoice#invoice-6", []step{
			{event("invoice-6", 1, "InvoiceIssued", now), ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeScheduler()
			p, _ := newProjection(t, fake)
			for i, s := range tc.steps {
				apply(t, p, s.record)
				got := ""
				if sch := fake.get(group, schedules.Name(tc.key)); sch != nil {
					got = aws.ToString(sch.ScheduleExpression)
				}
				if got != s.want {
					t.Fatalf("after step %d (%s@%d): schedule %q, want %q; calls %q", i+1, s.record.Type, s.record.Position, got, s.want, fake.callsMade())
				}
			}
		})
	}
}

// firedMeanwhile is a Scheduler whose schedule fires, and deletes itself, between
// a creation that found it and the update that moves it.
type firedMeanwhile struct {
	*fakeScheduler
	fired bool
}

func (f *firedMeanwhile) CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	if !f.fired {
		f.fired = true
		return nil, &types.ConflictException{Message: aws.String("exists")}
	}
	return f.fakeScheduler.CreateSchedule(ctx, in, opts...)
}

func TestAScheduleThatFiredMeanwhileIsMadeAgain(t *testing.T) {
	fake := &firedMeanwhile{fakeScheduler: newFakeScheduler()}
	p, _ := newProjection(t, fake)
	apply(t, p, event("order-7", 1, "OrderPlaced", now))
	if fake.get(group, schedules.Name("order#order-7")) == nil {
		t.Errorf("no schedule; calls %q", fake.callsMade())
	}
}

func TestASchedulerThatFailsHoldsNothingBack(t *testing.T) {
	fake := newFakeScheduler()
	fake.fail = errors.New("throttled")
	var logs bytes.Buffer
	x := newIndex(testKinds())
	p, err := schedules.New(x, config(fake, slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	placed := event("order-8", 1, "OrderPlaced", now)
	if err := p.Apply(ctx, placed); err != nil {
		t.Errorf("Apply: %v, want the record projected and the failure logged", err)
	}
	if _, ok, _ := x.Row(ctx, mustKind(t, "unconfirmed-order"), "order-8"); !ok {
		t.Error("the row was not projected")
	}
	if !strings.Contains(logs.String(), "throttled") || !strings.Contains(logs.String(), `"stream":"order-8"`) {
		t.Errorf("the failure is not logged with its record:\n%s", logs.String())
	}
	if err := p.Schedule(ctx, placed); err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Errorf("Schedule: %v, want Scheduler's failure", err)
	}
}

func TestAProjectionThatFailsSchedulesNothing(t *testing.T) {
	fake := newFakeScheduler()
	p, x := newProjection(t, fake)
	x.fail = errors.New("the table is unavailable")
	if err := p.Apply(ctx, event("order-9", 1, "OrderPlaced", now)); !errors.Is(err, x.fail) {
		t.Errorf("Apply: %v, want the projection's failure", err)
	}
	if calls := fake.callsMade(); len(calls) != 0 {
		t.Errorf("calls %q after a record that was not projected", calls)
	}
}

func TestNewRefusesAConfigurationItCannotKeep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*schedules.Config)
		want   string
	}{
		{"no client", func(c *schedules.Config) { c.Client = nil }, "client"},
		{"a group Scheduler refuses", func(c *schedules.Config) { c.Group = "orders/deadlines" }, "group"},
		{"no target", func(c *schedules.Config) { c.TargetARN = "" }, "ARN"},
		{"no role", func(c *schedules.Config) { c.RoleARN = "" }, "ARN"},
		{"no precise kind", func(c *schedules.Config) { c.Precise = nil }, "Precise"},
		{"a kind not declared", func(c *schedules.Config) { c.Precise = []string{"late-order"} }, `"late-order"`},
		{"a kind worked by hand", func(c *schedules.Config) { c.Precise = []string{"order-review"} }, `"order-review"`},
		{"a kind named twice", func(c *schedules.Config) { c.Precise = []string{"unconfirmed-order", "unconfirmed-order"} }, `"unconfirmed-order"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(newFakeScheduler(), nil)
			tc.change(&cfg)
			if _, err := schedules.New(newIndex(testKinds()), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if _, err := schedules.New(newIndex(testKinds()), config(newFakeScheduler(), nil)); err != nil {
		t.Errorf("New refuses a valid configuration: %v", err)
	}
}

func TestNameIsAScheduleNameOfItsKeyAlone(t *testing.T) {
	valid := regexp.MustCompile(`^[0-9A-Za-z_.-]{1,64}$`)
	keys := []string{
		"order-17", "order#order-17", "order_order-17", "order.order-17", "order-order-17",
		strings.Repeat("k", 64), strings.Repeat("k", 65), strings.Repeat("k", 63) + "#",
		strings.Repeat("é", 40), "unconfirmed-order#" + strings.Repeat("9", 100),
	}
	seen := map[string]string{}
	for _, key := range keys {
		name := schedules.Name(key)
		if !valid.MatchString(name) {
			t.Errorf("Name(%q) = %q, which Scheduler refuses", key, name)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("keys %q and %q share the name %q", other, key, name)
		}
		seen[name] = key
		if schedules.Name(key) != name {
			t.Errorf("Name(%q) changes", key)
		}
	}
	for key, want := range map[string]string{
		"order-17":                 "order-17",
		strings.Repeat("k", 64):    strings.Repeat("k", 64),
		"order#order-17":           "order_order-17.",
		"order.order-17":           "order_order-17.",
		strings.Repeat("k", 65):    strings.Repeat("k", 43) + ".",
		strings.Repeat("é", 2):     "____.",
		"invoice-reminder#invoice": "invoice-reminder_invoice.",
	} {
		if got := schedules.Name(key); !strings.HasPrefix(got, want) || (strings.HasSuffix(want, ".") && len(got) != len(want)+20) {
			t.Errorf("Name(%q) = %q, want %q and, for a derived name, 20 characters of hash", key, got, want)
		}
	}
}

func mustKind(t *testing.T, name string) deadlines.Kind {
	t.Helper()
	k, ok := testKinds().ByName(name)
	if !ok {
		t.Fatalf("no kind %q", name)
	}
	return k
}

func TestAtExpressionReadsBackToTheSecond(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 5, 900_000_000, time.FixedZone("x", 3600))
	got, err := schedules.ParseAtExpression(schedules.AtExpression(at))
	if err != nil || !got.Equal(at.Truncate(time.Second)) {
		t.Errorf("ParseAtExpression(AtExpression(%v)) = %v, %v; want it to the second, in UTC", at, got, err)
	}
	for _, bad := range []string{"", "at()", "at(2026-03-01)", "rate(1 minute)", "at(2026-03-01T12:00:05", "cron(0 12 * * ? *)"} {
		if _, err := schedules.ParseAtExpression(bad); err == nil {
			t.Errorf("ParseAtExpression(%q) accepted", bad)
		}
	}
}
