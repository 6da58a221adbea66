package awslambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/memory"
)

// sweepWorld is an index holding two outstanding orders, order-1 due a minute
// before at and order-2 a minute after it, and a disputed invoice (worked by
// hand); a command that keeps what it is sent; and a clock ten minutes after at.
type sweepWorld struct {
	at      time.Time
	clock   time.Time
	sent    *sent
	kinds   deadlines.Kinds
	index   *memory.Index
	sweeper *deadlines.Sweeper
}

func newSweepWorld(t *testing.T, idx func(*memory.Index) deadlines.Index) *sweepWorld {
	t.Helper()
	at := time.Date(2026, 5, 4, 9, 20, 0, 0, time.UTC)
	w := &sweepWorld{at: at, clock: at.Add(10 * time.Minute), sent: &sent{}}
	w.kinds = deadlines.MustKinds(
		deadlines.Kind{
			Name: "unconfirmed-order", After: 15 * time.Minute, Work: deadlines.Send{Command: w.sent},
			Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed"}},
		},
		deadlines.Kind{
			Name: "disputed-invoice", Work: deadlines.ByHand{},
			Changes: deadlines.Events{Opens: []string{"InvoiceDisputed"}, Settles: []string{"DisputeResolved"}},
		})
	w.index = memory.New(w.kinds, 2)
	for _, r := range []deadlines.Record{
		{Stream: "order-1", Position: 1, Type: "OrderPlaced", At: at.Add(-16 * time.Minute)},
		{Stream: "order-2", Position: 1, Type: "OrderPlaced", At: at.Add(-14 * time.Minute)},
		{Stream: "invoice-3", Position: 1, Type: "InvoiceDisputed", At: at.Add(-time.Hour)},
	} {
		if err := w.index.Apply(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	var i deadlines.Index = w.index
	if idx != nil {
		i = idx(w.index)
	}
	s, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: i, Kinds: w.kinds, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w.sweeper = s
	return w
}

func (w *sweepWorld) handler(opts ...awslambda.SweepOption) func(context.Context, json.RawMessage) (awslambda.Summary, error) {
	return awslambda.Sweep(w.sweeper, append([]awslambda.SweepOption{awslambda.Clock(func() time.Time { return w.clock }), quiet}, opts...)...)
}

// TestSweepSweepsAsOfTheTriggersTime feeds the sweep what EventBridge Scheduler
// sends, the event an EventBridge rule delivers, no input, and a time later than
// the clock: each sweeps as of its time, never later than the clock.
func TestSweepSweepsAsOfTheTriggersTime(t *testing.T) {
	at := time.Date(2026, 5, 4, 9, 20, 0, 0, time.UTC)
	clock := at.Add(10 * time.Minute)
	tests := []struct {
		name     string
		input    string
		wantNow  time.Time
		wantSent []string
	}{
		{
			name: "EventBridge Scheduler", input: `{"scheduledTime": "2026-05-04T09:20:00Z"}`, wantNow: at,
			wantSent: []string{"unconfirmed-order order-1 sweep:2026-05-04T09:20:00Z"},
		},
		{
			name: "EventBridge rule",
			input: `{"version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event",
				"source": "aws.events", "account": "123456789012", "time": "2026-05-04T09:20:00Z",
				"region": "eu-west-1", "resources": ["arn:aws:events:eu-west-1:123456789012:rule/orders-sweep"], "detail": {}}`,
			wantNow: at, wantSent: []string{"unconfirmed-order order-1 sweep:2026-05-04T09:20:00Z"},
		},
		{
			name: "no input", input: ``, wantNow: clock,
			wantSent: []string{"unconfirmed-order order-1 sweep:2026-05-04T09:30:00Z", "unconfirmed-order order-2 sweep:2026-05-04T09:30:00Z"},
		},
		{
			name: "a time later than the clock", input: `{"scheduledTime": "2026-05-04T11:00:00Z"}`, wantNow: clock,
			wantSent: []string{"unconfirmed-order order-1 sweep:2026-05-04T09:30:00Z", "unconfirmed-order order-2 sweep:2026-05-04T09:30:00Z"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newSweepWorld(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sum, err := w.handler()(ctx, json.RawMessage(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			got := w.sent.all()
			slices.Sort(got) // the sweep sends concurrently
			if !slices.Equal(got, tc.wantSent) {
				t.Errorf("sent %q, want %q", got, tc.wantSent)
			}
			k, ok := sum.Kind("unconfirmed-order")
			if !sum.Now.Equal(tc.wantNow) || sum.Incomplete || !ok || k.Acted != len(tc.wantSent) || len(sum.Kinds) != 1 {
				t.Errorf("summary %+v: want now %v, complete, %d acted, of the swept kind alone", sum, tc.wantNow, len(tc.wantSent))
			}
		})
	}
}

// TestSweepOneActsOnTheRowItNames feeds the sweep a row's own one-time schedule's
// input: it acts on that row alone, and on none that is not outstanding.
func TestSweepOneActsOnTheRowItNames(t *testing.T) {
	w := newSweepWorld(t, nil)
	w.clock = w.at.Add(2 * time.Minute) // both orders overdue
	sum, err := w.handler()(context.Background(), json.RawMessage(`{"kind": "unconfirmed-order", "key": "unconfirmed-order#order-2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.sent.all(), []string{"unconfirmed-order order-2 deadline:unconfirmed-order#order-2"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if k, _ := sum.Kind("unconfirmed-order"); sum.Subject != "order-2" || len(sum.Kinds) != 1 || k.Found != 1 || k.Acted != 1 || !sum.Now.Equal(w.clock) {
		t.Errorf("summary %+v: want order-2 found and acted on as of the clock", sum)
	}

	sum, err = w.handler()(context.Background(), json.RawMessage(`{"kind": "unconfirmed-order", "key": "unconfirmed-order#order-9"}`))
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := sum.Kind("unconfirmed-order"); len(w.sent.all()) != 1 || k.Found != 0 || sum.Subject != "order-9" {
		t.Errorf("summary %+v, sent %q: want nothing found or sent for a row that is not outstanding", sum, w.sent.all())
	}
}

// TestSweepOneWaitsForAnEarlySchedulesRow fires a row's schedule before the row's
// due time, as Scheduler may: with time left the sweep waits and acts; without, it
// fails with ErrNotYetDue, so that the scheduler retries, and sends nothing.
func TestSweepOneWaitsForAnEarlySchedulesRow(t *testing.T) {
	input := json.RawMessage(`{"kind": "unconfirmed-order", "key": "unconfirmed-order#order-2"}`)
	t.Run("time left", func(t *testing.T) {
		w := newSweepWorld(t, nil)
		w.clock = w.at.Add(time.Minute - 50*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sum, err := w.handler()(ctx, input)
		if err != nil || len(w.sent.all()) != 1 || !sum.Now.After(w.at.Add(time.Minute)) {
			t.Errorf("summary %+v, %v, sent %q: want order-2 sent once due", sum, err, w.sent.all())
		}
	})
	t.Run("no time left", func(t *testing.T) {
		w := newSweepWorld(t, nil)
		w.clock = w.at.Add(time.Minute - 50*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := w.handler(awslambda.Margin(time.Hour))(ctx, input)
		if !errors.Is(err, deadlines.ErrNotYetDue) || len(w.sent.all()) != 0 {
			t.Errorf("answered %v, sent %q: want ErrNotYetDue and nothing sent", err, w.sent.all())
		}
	})
}

// TestSweepRefusesInputItCannotRead feeds the sweep inputs it cannot read, or that
// name no row it sweeps: each is refused with an error, and nothing is sent.
func TestSweepRefusesInputItCannotRead(t *testing.T) {
	for _, tc := range []struct{ name, input string }{
		{"not JSON", `scheduledTime`},
		{"not an object", `["2026-05-04T09:20:00Z"]`},
		{"a member a trigger does not have", `{"orderId": "order-1"}`},
		{"a scheduled time that is no time", `{"scheduledTime": "yesterday"}`},
		{"a kind not declared", `{"kind": "late-order", "key": "late-order#order-1"}`},
		{"a key of another kind", `{"kind": "unconfirmed-order", "key": "disputed-invoice#invoice-3"}`},
		{"a key without a kind", `{"key": "unconfirmed-order#order-1"}`},
		{"a kind worked off by hand", `{"kind": "disputed-invoice", "key": "disputed-invoice#invoice-3"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSweepWorld(t, nil)
			var logs bytes.Buffer
			_, err := w.handler(awslambda.Logger(slog.New(slog.NewJSONHandler(&logs, nil))))(context.Background(), json.RawMessage(tc.input))
			if err == nil {
				t.Error("the input was taken")
			}
			if got := w.sent.all(); len(got) != 0 {
				t.Errorf("sent %q for input the sweep cannot read", got)
			}
			if !strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Errorf("the refusal is not logged as an error:\n%s", logs.String())
			}
		})
	}
}

// TestSweepStopsTheMarginBeforeTheDeadline runs the sweep with less time left
// than its margin: nothing is sent, the overdue row is left for the next run, and
// the summary says the sweep is incomplete.
func TestSweepStopsTheMarginBeforeTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		opts    []awslambda.SweepOption
	}{
		{"default margin", awslambda.DefaultSweepMargin / 2, nil},
		{"margin given", time.Minute, []awslambda.SweepOption{awslambda.Margin(2 * time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSweepWorld(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			sum, err := w.handler(tc.opts...)(ctx, json.RawMessage(`{"scheduledTime": "2026-05-04T09:20:00Z"}`))
			if err != nil {
				t.Fatal(err)
			}
			k, _ := sum.Kind("unconfirmed-order")
			if !sum.Incomplete || k.Left != 1 || k.Acted != 0 || len(w.sent.all()) != 0 {
				t.Errorf("summary %+v, sent %q: want incomplete, the overdue row left and nothing sent", sum, w.sent.all())
			}
		})
	}
}

// failingReads is an index whose reads of rows fail.
type failingReads struct{ *memory.Index }

func (failingReads) Rows(context.Context, deadlines.Span, func([]deadlines.Row) bool) (int, error) {
	return 0, errors.New("the index is unavailable")
}

// TestSweepReturnsAReadThatFailed checks that a read that fails is the handler's
// error, so that the scheduler retries the invocation.
func TestSweepReturnsAReadThatFailed(t *testing.T) {
	w := newSweepWorld(t, func(x *memory.Index) deadlines.Index { return failingReads{x} })
	var logs bytes.Buffer
	_, err := w.handler(awslambda.Logger(slog.New(slog.NewJSONHandler(&logs, nil))))(context.Background(), json.RawMessage(`{"scheduledTime": "2026-05-04T09:20:00Z"}`))
	if err == nil || !strings.Contains(err.Error(), "the index is unavailable") {
		t.Errorf("answered %v, want the read's failure", err)
	}
	if lines := logLines(t, &logs); len(lines) != 1 || lines[0]["msg"] != "sweep" || lines[0]["level"] != "ERROR" {
		t.Errorf("log lines %v: want one sweep line at ERROR", lines)
	}
}

// TestSweepReportsEachSummary gives Report what every invocation that swept
// returned, a sweep's and a row's own; an input refused swept nothing, and reports
// nothing.
func TestSweepReportsEachSummary(t *testing.T) {
	w := newSweepWorld(t, nil)
	var reported []awslambda.Summary
	h := w.handler(awslambda.Report(func(s awslambda.Summary) { reported = append(reported, s) }))
	var returned []awslambda.Summary
	for _, input := range []string{`{"scheduledTime": "2026-05-04T09:20:00Z"}`, `{"kind":"unconfirmed-order","key":"unconfirmed-order#order-2"}`, `[`} {
		sum, _ := h(context.Background(), json.RawMessage(input))
		returned = append(returned, sum)
	}
	if len(reported) != 2 {
		t.Fatalf("reported %d summaries, want 2", len(reported))
	}
	for i := range reported {
		if reported[i].Now != returned[i].Now || reported[i].Subject != returned[i].Subject || len(reported[i].Kinds) != len(returned[i].Kinds) {
			t.Errorf("reported %+v, returned %+v", reported[i], returned[i])
		}
	}
}
