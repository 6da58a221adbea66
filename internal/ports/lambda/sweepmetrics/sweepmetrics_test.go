package sweepmetrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
)

// summary is a sweep's summary with a different count in every field, so that a
// metric read from the wrong one shows.
var summary = awslambda.Summary{
	Now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
	Kinds: []deadlines.KindSummary{
		{Kind: deadlinekinds.Payment, Found: 11, Waiting: 19, Acted: 12, Declined: 13, NothingToDo: 14, Failed: 15, ItemsRead: 16, OldestOverdue: 17 * time.Second, Left: 18},
		{Kind: deadlinekinds.Stuck, Found: 25, Acted: 22, Declined: 23, Failed: 24, ItemsRead: 26, OldestOverdue: 27 * time.Second},
		{Kind: deadlinekinds.Return, Found: 31, Acted: 32, ItemsRead: 36},
		{Kind: deadlinekinds.Cancellation, Found: 41, Waiting: 40, Acted: 42, Failed: 43, Left: 44, ItemsRead: 45, OldestOverdue: 46 * time.Second},
		{Kind: deadlinekinds.Redelivery, Found: 51, Waiting: 57, Acted: 52, NothingToDo: 56, Failed: 53, Left: 58, ItemsRead: 55, OldestOverdue: 54 * time.Second},
	},
}

// TestEachSweepMetricCountsWhatItIsNamedFor: a sweep writes one metric per count of
// each kind it covered, each named for its kind and for what it counts and read
// from that count, and nothing else: no metric twice under two names.
func TestEachSweepMetricCountsWhatItIsNamedFor(t *testing.T) {
	d := sweepmetrics.Document(summary, "bikerental-test")
	want := map[string]float64{
		"PaymentRowsFound": 11, "PaymentRowsWaiting": 19, "PaymentRowsActed": 12, "PaymentRowsDeclined": 13, "PaymentRowsNothingToDo": 14,
		"PaymentRowsFailed": 15, "PaymentRowsLeft": 18, "PaymentRowsOldestOverdue": 17,
		"StuckRowsFound": 25, "StuckRowsWaiting": 0, "StuckRowsActed": 22, "StuckRowsDeclined": 23, "StuckRowsNothingToDo": 0,
		"StuckRowsFailed": 24, "StuckRowsLeft": 0, "StuckRowsOldestOverdue": 27,
		"ReturnRowsFound": 31, "ReturnRowsWaiting": 0, "ReturnRowsActed": 32, "ReturnRowsDeclined": 0, "ReturnRowsNothingToDo": 0,
		"ReturnRowsFailed": 0, "ReturnRowsLeft": 0, "ReturnRowsOldestOverdue": 0,
		"CancellationRowsFound": 41, "CancellationRowsWaiting": 40, "CancellationRowsActed": 42, "CancellationRowsDeclined": 0, "CancellationRowsNothingToDo": 0,
		"CancellationRowsFailed": 43, "CancellationRowsLeft": 44, "CancellationRowsOldestOverdue": 46,
		"RedeliveryRowsFound": 51, "RedeliveryRowsWaiting": 57, "RedeliveryRowsActed": 52, "RedeliveryRowsDeclined": 0, "RedeliveryRowsNothingToDo": 56,
		"RedeliveryRowsFailed": 53, "RedeliveryRowsLeft": 58, "RedeliveryRowsOldestOverdue": 54,
	}
	if got := values(d); !maps.Equal(got, want) || len(d.Metrics) != len(want) {
		t.Errorf("the sweep wrote %d metrics %v,\nwant %v", len(d.Metrics), got, want)
	}
	for _, m := range d.Metrics {
		unit := "Count"
		if strings.Contains(m.Name, "Oldest") {
			unit = "Seconds"
		}
		if m.Unit != unit {
			t.Errorf("%s is in %s, want %s", m.Name, m.Unit, unit)
		}
	}
	if d.Namespace != sweepmetrics.Namespace || len(d.Dimensions) != 1 || d.Dimensions[0] != (emf.Dimension{Name: "Service", Value: "bikerental-test"}) ||
		!d.Timestamp.Equal(summary.Now) {
		t.Errorf("namespace %s, dimensions %v, at %s; want %s, Service=bikerental-test, at %s", d.Namespace, d.Dimensions, d.Timestamp, sweepmetrics.Namespace, summary.Now)
	}
}

// TestAPartThatDidNotRunWritesNoMetric: a sweep of one row's own deadline (precise
// mode) writes its kind's metrics alone, and one that covered no kind writes no
// document: a zero there would let an alarm's Minimum read nothing owed, stuck or
// parked while something is. A sweep that covered every kind but found nothing
// writes every metric; one out of time before it sent anything still counts what
// it found, left.
func TestAPartThatDidNotRunWritesNoMetric(t *testing.T) {
	var idle []deadlines.KindSummary
	for _, k := range summary.Kinds {
		idle = append(idle, deadlines.KindSummary{Kind: k.Kind})
	}
	all := values(sweepmetrics.Document(summary, "bikerental-test"))
	if got := values(sweepmetrics.Document(awslambda.Summary{Now: summary.Now, Kinds: idle}, "bikerental-test")); len(got) != len(all) {
		t.Errorf("an idle sweep wrote %v, want every metric a busy one writes (%d)", got, len(all))
	}
	one := values(sweepmetrics.Document(awslambda.Summary{Now: summary.Now, Subject: "r", Kinds: []deadlines.KindSummary{{Kind: deadlinekinds.Return, Found: 1}}}, "bikerental-test"))
	for name, v := range one {
		if !strings.HasPrefix(name, "ReturnRows") {
			t.Errorf("a sweep of one return's deadline wrote %s = %v", name, v)
		}
	}
	if one["ReturnRowsFound"] != 1 || len(one) != 8 {
		t.Errorf("a sweep of one return's deadline wrote %v, want the return's metrics, ReturnRowsFound 1", one)
	}
	var out bytes.Buffer
	w := sweepmetrics.NewWriter(emf.NewWriter(&out), "bikerental-test", func(err error) { t.Error(err) })
	w.Report(awslambda.Summary{Now: summary.Now, Kinds: []deadlines.KindSummary{}})
	if out.Len() != 0 {
		t.Errorf("a sweep that covered no kind wrote %s", out.String())
	}

	docs := outOfTime(t)
	if len(docs) != 1 {
		t.Fatalf("a sweep out of time wrote %d documents, want 1", len(docs))
	}
	got := docs[0].Values
	if got["PaymentRowsFound"] != 1 || got["PaymentRowsLeft"] != 1 || got["CancellationRowsFound"] != 2 || got["CancellationRowsLeft"] != 2 ||
		got["PaymentRowsActed"] != 0 || got["CancellationRowsActed"] != 0 || len(got) != len(all) {
		t.Errorf("a sweep out of time before it sent anything wrote %v; want the payment and the two owed cancellations found and left", got)
	}
}

// outOfTime runs the service's sweep through its Lambda handler, reporting to a
// metrics writer, with less time left than its margin, over an index holding an
// overdue payment and two cancellations owed to the provider, and returns the
// documents it wrote. Nothing may be sent.
func outOfTime(t *testing.T) []emftest.Doc {
	t.Helper()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	nobody := refuses{t}
	kinds := deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: nobody, Retrier: nobody})
	idx := memory.New(kinds, 2)
	// The payment was prepared an hour ago; the cancellations became owed in the
	// sweep's interval, when they are sent first.
	for i, e := range []payment.Event{
		payment.PaymentPrepared{Reference: ref("late"), PaymentID: "p", Amount: 1, Currency: "EUR"},
		payment.CancellationOwedAtProvider{Reference: ref("owed1"), PaymentID: "p", Attempts: 3},
		payment.CancellationOwedAtProvider{Reference: ref("owed2"), PaymentID: "p", Attempts: 3},
	} {
		at := now.Add(-30 * time.Second)
		if i == 0 {
			at = now.Add(-time.Hour)
		}
		if err := idx.Apply(context.Background(), dynamo.RecordOf(paymenttest.Record(t, e, int64(i+1), at))); err != nil {
			t.Fatal(err)
		}
	}
	s, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: idx, Kinds: kinds, Every: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := sweepmetrics.NewWriter(emf.NewWriter(&out), "bikerental-test", func(err error) { t.Error(err) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := awslambda.Sweep(s, awslambda.Margin(time.Hour), awslambda.Clock(func() time.Time { return now }),
		awslambda.Logger(slog.New(slog.DiscardHandler)), awslambda.Report(w.Report))(ctx, json.RawMessage(`{}`))
	if err != nil || !sum.Incomplete {
		t.Fatalf("the sweep out of time: %+v, %v; want it incomplete", sum, err)
	}
	return emftest.Parse(t, out.Bytes())
}

func ref(bike string) string {
	return payment.ReferenceFor(rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA"))
}

// refuses is a receiver of the sweep's commands that must not be sent any.
type refuses struct{ t *testing.T }

func (r refuses) CancelRentalPayment(context.Context, string, command.Meta) (process.Outcome, error) {
	r.t.Error("a payment was cancelled by a sweep out of time")
	return process.OutcomeCancelled, nil
}

func (r refuses) RetryCancellation(context.Context, string, command.Meta) (bool, error) {
	r.t.Error("a cancellation was retried by a sweep out of time")
	return false, nil
}

// values returns the document's metrics by name, durations in seconds.
func values(d emf.Document) map[string]float64 {
	out := map[string]float64{}
	for _, m := range d.Metrics {
		out[m.Name] = m.Value
	}
	return out
}
