package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
)

// result is what one run of rentalctl did.
type result struct {
	stdout, stderr string
	err            error
}

func (r result) status() int { return exitStatus(r.err) }

// rentalctl runs rentalctl with args in the environment e.
func rentalctl(e env, args ...string) result {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, e.get, &stdout, &stderr)
	return result{stdout.String(), stderr.String(), err}
}

// must runs rentalctl and fails the test unless it succeeds.
func must(t *testing.T, e env, args ...string) result {
	t.Helper()
	r := rentalctl(e, args...)
	if r.err != nil {
		t.Fatalf("rentalctl %q: %v (exit %d)\nstdout:\n%s\nstderr:\n%s", args, r.err, r.status(), r.stdout, r.stderr)
	}
	return r
}

// wantStatus runs rentalctl and checks its exit status, and that a usage error
// prints nothing on stdout.
func wantStatus(t *testing.T, status int, e env, args ...string) result {
	t.Helper()
	r := rentalctl(e, args...)
	if r.status() != status {
		t.Fatalf("rentalctl %q: exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", args, r.status(), r.err, status, r.stdout, r.stderr)
	}
	if status == 2 && r.stdout != "" {
		t.Errorf("rentalctl %q: stdout %q, want nothing", args, r.stdout)
	}
	return r
}

// wantUsage runs rentalctl with a bad command line: exit status 2, and the
// command's synopsis and flags on stderr.
func wantUsage(t *testing.T, e env, args ...string) result {
	t.Helper()
	r := wantStatus(t, 2, e, args...)
	if !strings.HasPrefix(r.stderr, "Usage: rentalctl "+args[0]) || !strings.Contains(r.stderr, "\nFlags ") {
		t.Errorf("rentalctl %q: stderr %q, want the command's usage", args, r.stderr)
	}
	return r
}

func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not the expected JSON: %v\n%s", err, r.stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", r.stdout)
	}
	return v
}

// ghost is a rental whose payment row exists but which has no streams at all.
var ghost = rental.NewRentalID("ghost", "AAAAAAAAAAAAAAAAAAAAAA")

// prepared projects a PaymentPrepared for rentalID recorded at the given time, as
// the projector would; a real rental's record is copied with only its time changed.
func prepared(t *testing.T, w *rebuildtest.World, p *deadlinetable.Table, rentalID string, at time.Time) {
	t.Helper()
	ref := payment.ReferenceFor(rentalID)
	rec := eventstore.Record{StreamID: payment.StreamID(ref), Version: 1, Event: eventstore.Event{ID: "prepared-" + rentalID, Type: "PaymentPrepared"}}
	if records := w.PaymentOf(rentalID); len(records) > 0 {
		rec = records[0]
	} else {
		data, err := json.Marshal(payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1500, Currency: "EUR"})
		if err != nil {
			t.Fatal(err)
		}
		rec.Data = data
	}
	rec.RecordedAt = at
	w.Project(p, rec)
}

// settle plays the projector and the process on everything the rental's payment
// stream holds, as the stream consumers would after a cancellation.
func settle(t *testing.T, w *rebuildtest.World, p *deadlinetable.Table, rentalID string) {
	t.Helper()
	records := w.PaymentOf(rentalID)
	w.Project(p, records...)
	if err := w.Process.Handle(context.Background(), records[len(records)-1]); err != nil {
		t.Fatal(err)
	}
}

// kindOf is the summary of the kind named name in a sweep's summary, zero but
// for its name if the sweep did not cover it.
func kindOf(sum ctl.Summary, name string) deadlines.KindSummary {
	k, _ := sum.Kind(name)
	return k
}

func TestHistoryPrintsTheRentalsAuditTrail(t *testing.T) {
	w, _ := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	approved := rental.NewRentalID("bike3", "AAAAAAAAAAAAAAAAAAAAAA")
	view, err := rentalview.Load(context.Background(), w.Store, approved)
	if err != nil {
		t.Fatal(err)
	}

	r := must(t, e, "history", approved)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for i, want := range []string{"rental   " + approved, "status   approved", "bike     bike3", "renter   renter-bike3", "payment  " + payment.ReferenceFor(approved), ""} {
		if i >= len(lines) || strings.TrimRight(lines[i], " ") != want {
			t.Fatalf("header line %d: want %q\nstdout:\n%s", i, want, r.stdout)
		}
	}
	events := lines[7 : len(lines)-1]
	if len(view.History) != 6 || len(events) != len(view.History) || lines[len(lines)-1] != "6 events" {
		t.Fatalf("%d event lines for %d events\nstdout:\n%s", len(events), len(view.History), r.stdout)
	}
	for i, h := range view.History {
		fields := strings.Fields(events[i])
		if len(fields) < 4 || fields[0] != timestamp(h.At) || fields[1] != h.Stream || fields[3] != h.Type {
			t.Errorf("event line %q, want %s %s %s", events[i], timestamp(h.At), h.Stream, h.Type)
		}
	}
	if !strings.Contains(r.stdout, "amount=1500 currency=EUR") || !strings.Contains(r.stdout, "outcome=approved") {
		t.Errorf("the events' key fields are missing:\n%s", r.stdout)
	}

	// --json is the document GET /rentals/{id} answers, flags after the id too.
	r = must(t, e, "history", approved, "--json")
	var got bytes.Buffer
	if err := json.Compact(&got, []byte(r.stdout)); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	want, _ := json.Marshal(view)
	if got.String() != string(want) {
		t.Errorf("history --json:\n%s\nwant what the API answers:\n%s", got.String(), want)
	}

	// A rental that never was: a failure, saying so.
	unknown := rental.NewRentalID("bike3", "BBBBBBBBBBBBBBBBBBBBBB")
	r = wantStatus(t, 1, e, "history", "-json", unknown)
	if !errors.Is(r.err, rentalview.ErrNotFound) || !strings.Contains(r.err.Error(), unknown) || r.stdout != "" {
		t.Errorf("unknown rental: %v, stdout %q", r.err, r.stdout)
	}
	// A table that is not there: a failure too.
	e2 := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	e2["EVENTS_TABLE"] = "no-such-table"
	wantStatus(t, 1, e2, "history", approved)
	// Flags override the environment.
	must(t, e2, "history", "--events-table", w.EventsTable, approved)

	for _, args := range [][]string{
		{"history"},
		{"history", "not-a-rental"},
		{"history", approved, approved},
		{"history", "--bogus", approved},
		{"history", "--json=maybe", approved},
	} {
		wantUsage(t, e, args...)
	}
	delete(e, "EVENTS_TABLE")
	wantUsage(t, e, "history", approved)
}

func TestPendingListsOutstandingPaymentsOldestFirst(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	p := w.Projection(2)
	now := time.Now()
	prepared(t, w, p, ghost, now.Add(-2*time.Hour))
	old := rental.NewRentalID("old", "AAAAAAAAAAAAAAAAAAAAAA")
	prepared(t, w, p, old, now.Add(-20*time.Minute))
	must(t, e, "rebuild") // the world's two outstanding payments, prepared just now
	order := []string{ghost, old, outstanding[0], outstanding[1]}
	if first, second := w.PaymentOf(outstanding[0])[0].RecordedAt, w.PaymentOf(outstanding[1])[0].RecordedAt; !first.Truncate(time.Millisecond).Before(second.Truncate(time.Millisecond)) {
		t.Fatalf("the world's payments were prepared at %s and %s, want the first one first", first, second)
	}

	r := must(t, e, "pending")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "PAYMENT") || !strings.HasPrefix(lines[5], "4 outstanding payments, the oldest 2h0m") {
		t.Fatalf("pending:\n%s\nwant a header, 4 rows and a summary", r.stdout)
	}
	for i, id := range order {
		if f := strings.Fields(lines[i+1]); f[0] != payment.ReferenceFor(id) || f[1] != id {
			t.Errorf("row %d: %q, want %s", i, lines[i+1], id)
		}
	}
	if !strings.Contains(lines[1], "overdue by 1h45m") || !strings.Contains(lines[2], "overdue by 5m") || !(strings.Contains(lines[3], "in 14m") || strings.Contains(lines[3], "in 15m0s")) {
		t.Errorf("deadlines are wrong:\n%s", r.stdout)
	}

	list := decode[ctl.PendingList](t, must(t, e, "pending", "--json"))
	if list.Count != 4 || len(list.Payments) != 4 || list.More || list.Limit != defaultListLimit || list.OverdueOnly || list.TimeoutMs != 15*60*1000 {
		t.Fatalf("pending --json: %+v", list)
	}
	for i, id := range order {
		row := list.Payments[i]
		if row.RentalID != id || row.PaymentReference != payment.ReferenceFor(id) || row.Overdue != (i < 2) {
			t.Errorf("row %d: %+v, want %s, overdue %v", i, row, id, i < 2)
		}
	}
	if g := list.Payments[0]; g.AgeSeconds < 7200 || g.AgeSeconds > 7260 || g.OverdueSeconds != g.AgeSeconds-900 || !g.Deadline.Equal(g.PreparedAt.Add(15*time.Minute)) {
		t.Errorf("oldest row %+v: want about 2h old, 1h45m overdue", g)
	}

	// --overdue: only what the sweep would give up on, through the index.
	r = must(t, e, "pending", "--overdue")
	if strings.Count(r.stdout, "\n") != 4 || !strings.Contains(r.stdout, ghost) || !strings.Contains(r.stdout, old) || !strings.Contains(r.stdout, "2 overdue payments") {
		t.Errorf("pending --overdue:\n%s\nwant the two overdue payments", r.stdout)
	}
	list = decode[ctl.PendingList](t, must(t, e, "pending", "-overdue", "-json", "-limit", "1"))
	if list.Count != 1 || !list.More || !list.OverdueOnly || list.Payments[0].RentalID != ghost {
		t.Errorf("pending --overdue --limit 1: %+v, want the oldest and more", list)
	}
	// The timeout comes from PAYMENT_TIMEOUT, and a flag overrides it. A row is
	// due when the projector stamped it (by 15 minutes here): the timeout read
	// back gives the time each payment was prepared, not which are overdue.
	e["PAYMENT_TIMEOUT"] = "1h"
	list = decode[ctl.PendingList](t, must(t, e, "pending", "--overdue", "--json"))
	if g := list.Payments[0]; list.Count != 2 || g.RentalID != ghost || list.TimeoutMs != 3600*1000 ||
		!g.PreparedAt.Equal(g.Deadline.Add(-time.Hour)) || g.Deadline.Sub(now.Add(-2*time.Hour)).Round(time.Minute) != 15*time.Minute {
		t.Errorf("pending --overdue with PAYMENT_TIMEOUT=1h: %+v, want the two overdue payments, due when stamped, prepared an hour before", list)
	}
	if r := must(t, e, "pending", "--overdue", "--timeout", "3h"); !strings.HasSuffix(r.stdout, "(payments time out after 3h0m0s)\n") || !strings.Contains(r.stdout, "2 overdue payments") {
		t.Errorf("pending --overdue --timeout 3h: %q", r.stdout)
	}
	e["PAYMENT_TIMEOUT"] = "soon"
	wantUsage(t, e, "pending", "--overdue")
	must(t, e, "pending", "--overdue", "--timeout", "15m")
	delete(e, "PAYMENT_TIMEOUT")

	for _, args := range [][]string{
		{"pending", "now"},
		{"pending", "--limit", "0"},
		{"pending", "--limit", "10001"},
		{"pending", "--timeout", "-1m"},
		{"pending", "--shards", "x"},
		{"pending", "--bogus"},
	} {
		wantUsage(t, e, args...)
	}
	e["DEADLINES_TABLE"] = "no-such-table"
	wantStatus(t, 1, e, "pending")
	delete(e, "DEADLINES_TABLE")
	wantUsage(t, e, "pending")
}

func TestCancelSendsCancelRentalPaymentAndPrintsTheOutcome(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	p := w.Projection(2)
	must(t, e, "rebuild")
	cancelled := outstanding[0]

	r := must(t, e, "cancel", cancelled)
	if r.stdout != cancelled+": cancelled: the payment was called off; the bike is released once the rental-payment process handles the cancellation\n" {
		t.Errorf("cancel: %q", r.stdout)
	}
	// The projector and the process take it from there, as their stream consumers would.
	settle(t, w, p, cancelled)
	view := decode[rentalview.View](t, must(t, e, "history", "--json", cancelled))
	var cause string
	var rejected bool
	for _, h := range view.History {
		if h.Type == "PaymentCancelled" {
			cause = h.CausationID
		}
		rejected = rejected || h.Type == "RequestRejected"
	}
	if view.Status != rentalview.StatusCancelled || !rejected || !strings.HasPrefix(cause, "rentalctl:cancel:") {
		t.Errorf("history after cancel: status %s, bike told %v, cancellation caused by %q", view.Status, rejected, cause)
	}
	if list := decode[ctl.PendingList](t, must(t, e, "pending", "--json")); list.Count != 1 || list.Payments[0].RentalID != outstanding[1] {
		t.Errorf("pending after cancel: %+v, want only %s", list, outstanding[1])
	}

	// Asked again, or for a rental whose process ended or that never was, there is
	// nothing to do; that is an answer, not a failure.
	for _, id := range []string{cancelled, rental.NewRentalID("bike3", "AAAAAAAAAAAAAAAAAAAAAA"), rental.NewRentalID("nobike", "AAAAAAAAAAAAAAAAAAAAAA")} {
		res := decode[ctl.CancelResult](t, must(t, e, "cancel", "--json", id))
		if res.RentalID != id || res.Outcome != process.OutcomeNothingToDo {
			t.Errorf("cancel %s: %+v, want nothing-to-do", id, res)
		}
	}
	// A payment confirmed before the process heard of it: declined.
	confirmed := outstanding[1]
	if _, err := w.Commands.Payment(context.Background(), payment.ConfirmPayment{Reference: payment.ReferenceFor(confirmed)}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	r = must(t, e, "cancel", confirmed)
	if !strings.HasPrefix(r.stdout, confirmed+": declined: the payment was already confirmed") {
		t.Errorf("cancel of a confirmed payment: %q", r.stdout)
	}

	e["RECORDING_MODE"] = "sometimes"
	wantStatus(t, 2, e, "cancel", cancelled)
	delete(e, "RECORDING_MODE")
	e["EVENTS_TABLE"] = "no-such-table"
	r = wantStatus(t, 1, e, "cancel", cancelled)
	if !strings.Contains(r.err.Error(), "no-such-table") {
		t.Errorf("cancel against a missing table: %v", r.err)
	}
	for _, args := range [][]string{
		{"cancel"},
		{"cancel", "bike1"},
		{"cancel", cancelled, "now"},
		{"cancel", "--bogus", cancelled},
	} {
		wantUsage(t, e, args...)
	}
}

func TestSweepCancelsOverduePaymentsAndDryRunOnlyLists(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	p := w.Projection(2)
	now := time.Now()
	overdue := outstanding[0]
	prepared(t, w, p, ghost, now.Add(-2*time.Hour))
	prepared(t, w, p, overdue, now.Add(-time.Hour)) // the rebuild keeps the row as it is
	must(t, e, "rebuild")

	// A dry run lists what a sweep would give up on, and sends nothing.
	r := must(t, e, "sweep", "--dry-run")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "dry run, nothing sent") || !strings.Contains(lines[2], ghost) ||
		!strings.Contains(lines[3], overdue) || lines[4] != "it would send CancelRentalPayment for 2 payments" {
		t.Errorf("sweep --dry-run:\n%s", r.stdout)
	}
	// As of an hour and a half ago, only the ghost was overdue; the events table
	// is not needed for a dry run.
	delete(e, "EVENTS_TABLE")
	at := now.Add(-90 * time.Minute).UTC().Format(time.RFC3339)
	dry := decode[ctl.DryRun](t, must(t, e, "sweep", "--dry-run", "--json", "--at", at))
	if !dry.DryRun || dry.Count != 1 || dry.Payments[0].RentalID != ghost || dry.More || dry.Now.Format(time.RFC3339) != at {
		t.Errorf("sweep --dry-run --at %s: %+v", at, dry)
	}
	e["EVENTS_TABLE"] = w.EventsTable
	if v := decode[rentalview.View](t, must(t, e, "history", "--json", overdue)); v.Status != rentalview.StatusAwaitingPayment {
		t.Errorf("after the dry run %s is %s, want it untouched", overdue, v.Status)
	}

	// As of three hours ago nothing was overdue.
	sum := decode[ctl.Summary](t, must(t, e, "sweep", "--json", "--at", now.Add(-3*time.Hour).Format(time.RFC3339)))
	if kindOf(sum, deadlinekinds.Payment).Found != 0 || kindOf(sum, deadlinekinds.Payment).ItemsRead != 0 {
		t.Errorf("sweep three hours ago: %+v, want nothing found", sum)
	}

	// Now: the ghost has no process, the other is cancelled.
	r = must(t, e, "sweep")
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "swept as of ") ||
		lines[1] != "found 2 overdue payments: 1 cancelled, 0 declined, 1 nothing to do, 0 failed" ||
		!strings.HasPrefix(lines[2], "read 2 index items; the oldest payment was overdue by 1h45m") ||
		!strings.HasPrefix(lines[3], "found 0 stuck rentals (open since before ") ||
		lines[4] != "found 0 cancellations owed to the provider: 0 made, 0 still owed" {
		t.Errorf("sweep:\n%s", r.stdout)
	}
	// No process runs here to release the bike: the rental is ending, not ended.
	view := decode[rentalview.View](t, must(t, e, "history", "--json", overdue))
	if view.Status != rentalview.StatusCancelling || !strings.HasPrefix(view.History[len(view.History)-1].CausationID, "sweep:") {
		t.Errorf("after the sweep %s is %s, last event %+v", overdue, view.Status, view.History[len(view.History)-1])
	}
	settle(t, w, p, overdue)
	sum = decode[ctl.Summary](t, must(t, e, "sweep", "--json"))
	if pay := kindOf(sum, deadlinekinds.Payment); pay.Found != 1 || pay.NothingToDo != 1 || pay.Acted != 0 || pay.OldestOverdue < 105*time.Minute || pay.OldestOverdue > 106*time.Minute {
		t.Errorf("second sweep: %+v, want only the ghost, 1h45m overdue", sum)
	}

	// Cancellations that fail make the sweep fail, after its summary.
	e["EVENTS_TABLE"] = "no-such-table"
	r = wantStatus(t, 1, e, "sweep")
	if !strings.Contains(r.stdout, "1 failed") || !strings.Contains(r.err.Error(), "1 cancellation failed") {
		t.Errorf("sweep with failing cancellations: %v\n%s", r.err, r.stdout)
	}
	e["EVENTS_TABLE"] = w.EventsTable
	e["DEADLINES_TABLE"] = "no-such-table"
	wantStatus(t, 1, e, "sweep", "--dry-run")
	wantStatus(t, 1, e, "sweep")
	e["DEADLINES_TABLE"] = w.DeadlinesTable

	e["SWEEP_CONCURRENCY"] = "none"
	wantUsage(t, e, "sweep")
	delete(e, "SWEEP_CONCURRENCY")
	for _, args := range [][]string{
		{"sweep", "now"},
		{"sweep", "--at", "yesterday"},
		{"sweep", "--at", "2026-13-01T00:00:00Z"},
		{"sweep", "--at", time.Now().Add(time.Hour).Format(time.RFC3339)},
		{"sweep", "--dry-run", "--limit", "0"},
		{"sweep", "--dry-run=no"},
		{"sweep", "--bogus"},
	} {
		r := wantUsage(t, e, args...)
		if len(args) > 2 && args[1] == "--at" && !strings.Contains(r.err.Error(), args[2]) {
			t.Errorf("%q: error %q does not name the time", args, r.err)
		}
	}
	delete(e, "EVENTS_TABLE")
	wantUsage(t, e, "sweep")
}

func TestRebuildPrintsProgressAndJSON(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	r := must(t, e, "rebuild", "--json")
	res := decode[ctl.RebuildResult](t, r)
	// 5 payment streams, 5 bikes' and 5 processes'.
	if res.Streams != 15 || res.Records != 29 || res.EventsTable != w.EventsTable || res.DeadlinesTable != w.DeadlinesTable {
		t.Errorf("rebuild --json: %+v", res)
	}
	if want := `"deadlinesTable": ` + strconv.Quote(w.DeadlinesTable); !strings.Contains(r.stdout, want) {
		t.Errorf("rebuild --json printed %s, want it to name the Deadlines table as %s", r.stdout, want)
	}
	progress := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(progress) != 3 || !strings.HasPrefix(progress[0], "warning: no sweep schedule") ||
		!strings.HasPrefix(progress[1], "rebuilding "+w.DeadlinesTable+" from ") || !strings.HasPrefix(progress[2], "15 streams replayed (") {
		t.Errorf("stderr:\n%s\nwant the warning, a start line and a final progress line", r.stderr)
	}
	if got := w.Pending(w.Projection(2)); len(got) != len(outstanding) {
		t.Errorf("pending %q, want %q", got, outstanding)
	}
	report := decode[audit.Report](t, must(t, e, "audit", "--quiet", "--json"))
	// The outstanding payments' and their open processes' rows, and the approved
	// rental's return due.
	if !report.OK() || report.DeadlineRows != 5 {
		t.Errorf("audit after the rebuild: %+v", report)
	}
}

func TestEveryCommandHasHelpAndRefusesUnknownFlags(t *testing.T) {
	for _, c := range commands {
		name := c.name
		for _, h := range []string{"-h", "--help", "-help"} {
			r := rentalctl(env{}, name, h)
			if r.err != nil || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: rentalctl ") || !strings.Contains(r.stdout, "\nFlags ") {
				t.Errorf("%s %s: %v, stdout %q, stderr %q; want its usage on stdout", name, h, r.err, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "-json") {
				t.Errorf("%s %s: no -json flag", name, h)
			}
		}
		if r := rentalctl(env{}, "help", name); r.err != nil || !strings.HasPrefix(r.stdout, "Usage: rentalctl ") {
			t.Errorf("help %s: %v, stdout %q", name, r.err, r.stdout)
		}
		if r := rentalctl(env{}, name, "--no-such-flag"); r.status() != 2 || !strings.Contains(r.stderr, "-json") {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q; want 2 and the flags", name, r.status(), r.stderr)
		}
	}
	r := rentalctl(env{}, "help")
	for _, c := range commands {
		if !strings.Contains(r.stdout, "\n  "+c.name+" ") {
			t.Errorf("help does not list %s:\n%s", c.name, r.stdout)
		}
	}
	for _, args := range [][]string{{"help", "bogus"}, {"help", "rebuild-pending"}, {"help", "pending", "audit"}} {
		if r := rentalctl(env{}, args...); r.status() != 2 {
			t.Errorf("%q: exit %d, want 2", args, r.status())
		}
	}
}

func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{errViolations, 1},
		{errUsage, 2},
		{errors.Join(errors.New("context"), errUsage), 2},
	} {
		if got := exitStatus(c.err); got != c.want {
			t.Errorf("exitStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestRefundsListsWhatIsOwed cancels a payment of the world, lets the generic
// provider report it paid afterwards, and lists the refund owed, in text and JSON.
func TestRefundsListsWhatIsOwed(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	r := must(t, e, "refunds")
	if r.stdout != "PAYMENT  RENTAL  PROVIDER PAYMENT  CAUSE  AMOUNT  OWED SINCE  REASON\n0 refunds owed\n" {
		t.Errorf("refunds of a world that owes none:\n%q", r.stdout)
	}
	// The scan says how far it has got, on stderr, after each page.
	if !regexp.MustCompile(`(?m)^[1-9][0-9]* events scanned \([0-9]+s\)$`).MatchString(r.stderr) {
		t.Errorf("refunds printed no progress on stderr:\n%s", r.stderr)
	}
	ref := payment.ReferenceFor(outstanding[0])
	ctx := context.Background()
	if _, err := w.Commands.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "late-1", Kind: payment.ProviderSucceeded, Reference: ref, Unstated: payment.AllFacts, Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	r = must(t, e, "refunds")
	if !strings.Contains(r.stdout, ref) || !strings.Contains(r.stdout, "15.00 EUR") || !strings.HasSuffix(r.stdout, "\n1 refund owed\n") {
		t.Errorf("refunds:\n%s", r.stdout)
	}
	list := decode[ctl.RefundList](t, must(t, e, "refunds", "--json"))
	if list.Count != 1 || list.Refunds[0].PaymentReference != ref || list.Refunds[0].RentalID != outstanding[0] {
		t.Errorf("refunds --json: %+v", list)
	}
}

// TestChangingTheShardCount changes DEADLINES_SHARDS from 8 to 2 and back with
// payments outstanding and records parked: a rebuild with another count refuses
// until told to reshard, the projector refuses to start with a count that is not
// the table's, a reshard moves every outstanding row of every kind (the parked
// records' included) to its shard under the new count, so that another finds none
// to move, and after each reshard the sweep finds and cancels every outstanding
// payment.
func TestChangingTheShardCount(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	// A row falls due by the timeout it was projected with: the rebuilds project
	// the payments due a millisecond after they were prepared, for the sweep.
	e[wiring.EnvPaymentTimeout] = "1ms"
	ctx := context.Background()
	for _, leg := range []struct {
		name     string
		from, to int
	}{{"8 to 2", 8, 2}, {"2 to 8", 2, 8}} {
		t.Run(leg.name, func(t *testing.T) {
			var outstanding []string
			for i := range 8 {
				outstanding = append(outstanding, w.Rent(fmt.Sprintf("shard-%d-%d-%d", leg.from, leg.to, i), rebuildtest.Outstanding))
			}
			from, to := fmt.Sprint(leg.from), fmt.Sprint(leg.to)
			// The table holds the rows under the old count (the first leg records it).
			must(t, e, "rebuild", "-shards", from, "-reshard")
			if got := len(decode[ctl.PendingList](t, must(t, e, "pending", "--json", "-shards", from)).Payments); got != 8 {
				t.Fatalf("%d outstanding under %s shards, want 8", got, from)
			}
			// The projector could not handle the rentals' requests: parked, each its
			// row under the old count.
			parker := &parked.Parker{Store: w.Store, Consumer: eventfilter.Projector, NewID: ident.UUID, Known: eventfilter.Known}
			for _, id := range outstanding {
				bike, _ := rental.BikeIDOf(id)
				requested := w.Read(rental.StreamID(bike))[1]
				if err := parker.Park(ctx, requested); err != nil {
					t.Fatal(err)
				}
				w.Project(w.Projection(leg.from), w.Read(parked.StreamOf(eventfilter.Projector, requested.StreamID))...)
			}
			r := wantStatus(t, 1, e, "rebuild", "-shards", to)
			if !strings.Contains(r.err.Error(), "records "+from+" shards") || !strings.Contains(r.err.Error(), "-reshard") {
				t.Errorf("a rebuild with another count: %v", r.err)
			}
			env := func(k string) string {
				return map[string]string{wiring.EnvEventsTable: w.EventsTable, wiring.EnvDeadlinesTable: w.DeadlinesTable, wiring.EnvDeadlinesShards: to}[k]
			}
			project := func() error { // an empty batch to a fresh projector with the new count
				h, err := projectorfn.ProjectorFunction(ctx, emulatortest.Config(t), env, slog.New(slog.DiscardHandler), nil)
				if err != nil {
					t.Fatal(err)
				}
				_, err = h.(wiring.StreamHandler)(ctx, events.DynamoDBEvent{})
				return err
			}
			if err := project(); !errors.Is(err, deadlinetable.ErrShardMismatch) {
				t.Errorf("the projector ran with %s shards on a table of %s: %v", to, from, err)
			}
			r = must(t, e, "rebuild", "--json", "-shards", to, "-reshard")
			if res := decode[ctl.RebuildResult](t, r); res.Moved == 0 || !strings.Contains(r.stderr, "resharded: ") {
				t.Errorf("the reshard to %s shards moved %d rows; want some moved, and said so:\n%s", to, res.Moved, r.stderr)
			}
			// Every outstanding row is on its shard under the new count: the parked
			// records' too, which the listing reads under it, and another reshard
			// finds nothing to move.
			if again := decode[ctl.RebuildResult](t, must(t, e, "rebuild", "--json", "-shards", to, "-reshard")); again.Moved != 0 {
				t.Errorf("a second reshard to %s shards moved %d rows, want none left to move", to, again.Moved)
			}
			listing := deadlinekinds.Listing{Index: w.Projection(leg.to), Kinds: w.Kinds}
			parkedThere, _, err := listing.Parked(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range outstanding {
				bike, _ := rental.BikeIDOf(id)
				if !slices.ContainsFunc(parkedThere, func(p parked.Record) bool { return p.StreamID == rental.StreamID(bike) }) {
					t.Errorf("the parked request of %s is on none of the %s shards: %+v", id, to, parkedThere)
				}
			}
			if err := project(); err != nil {
				t.Errorf("the projector with the table's new count: %v", err)
			}
			// The open processes moved too: the sweep's stuck query finds every one.
			backlog, _, err := listing.Backlog(ctx, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range outstanding {
				if !slices.ContainsFunc(backlog.Open, func(o deadlinekinds.Open) bool { return o.RentalID == id }) {
					t.Errorf("rental %s's open process is not under %s shards: %+v", id, to, backlog.Open)
				}
			}
			sum := decode[ctl.Summary](t, must(t, e, "sweep", "--json", "-shards", to, "-timeout", "1ms"))
			if pay := kindOf(sum, deadlinekinds.Payment); pay.Found != 8 || pay.Acted != 8 {
				t.Errorf("the sweep under %s shards: %+v, want all 8 outstanding payments found and cancelled", to, sum)
			}
			// The cancellations, and the parked requests delivered again, reach the
			// projection as the rebuild replays them, for the next leg to start with
			// none outstanding.
			must(t, e, "rebuild", "-shards", to)
			for _, id := range outstanding {
				if view := decode[rentalview.View](t, must(t, e, "history", "--json", id)); view.Payment == nil || view.Payment.Status != "cancelled" {
					t.Errorf("%s after the sweep: %+v", id, view.Payment)
				}
			}
		})
	}
}

// TestRepairMendsAStuckRental leaves a rental as a dead-lettered settlement does
// (paid, its process never started), finds it with the auditor, which names the
// repair, and repairs it with --stuck: a dry run changes nothing, the repair
// approves the rental, and the audit is then clean.
func TestRepairMendsAStuckRental(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	ctx := context.Background()
	rentalID := rental.NewRentalID("stuck", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: "stuck"}, rental.RequestBike{BikeID: "stuck", Renter: "renter-stuck", RentalID: rentalID}} {
		if _, err := w.Commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	ref := payment.ReferenceFor(rentalID)
	if _, err := w.Commands.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "evt-stuck", Kind: payment.ProviderSucceeded, Reference: ref, Unstated: payment.AllFacts, Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	must(t, e, "rebuild")
	r := wantStatus(t, 1, e, "audit", "--quiet")
	if !strings.Contains(r.stdout, "process-not-started") || !strings.Contains(r.stdout, "(repair: rentalctl repair "+rentalID+")") {
		t.Fatalf("audit of a stuck rental:\n%s", r.stdout)
	}
	events := len(w.Read(rentalpayment.StreamID(rentalID)))
	dry := decode[ctl.RepairList](t, must(t, e, "repair", "--stuck", "--dry-run", "--json"))
	if len(dry.Rentals) != 1 || dry.Rentals[0].RentalID != rentalID || len(dry.Rentals[0].Deliveries) != 5 || dry.Rentals[0].Case != repair.CaseStartMissing || len(w.Read(rentalpayment.StreamID(rentalID))) != events {
		t.Fatalf("repair --stuck --dry-run: %+v", dry)
	}
	out := must(t, e, "repair", "--stuck")
	if !strings.Contains(out.stdout, rentalID+" (start-missing): awaiting-payment -> approved, repaired 7 records") || !strings.HasSuffix(out.stdout, "\n1 stuck rental\n") {
		t.Errorf("repair --stuck:\n%s", out.stdout)
	}
	must(t, e, "audit", "--quiet")
	again := decode[ctl.RepairList](t, must(t, e, "repair", rentalID, "--json"))
	if again.Rentals[0].Before != rentalview.StatusApproved || again.Rentals[0].After != rentalview.StatusApproved {
		t.Errorf("a second repair: %+v", again)
	}
	wantStatus(t, 2, e, "repair") // neither a rental id nor --stuck
}

// TestPendingListsAKindOfDeadline: pending --kind lists the rows of that kind, as
// GET /deadlines answers them; an unknown kind is a usage error.
func TestPendingListsAKindOfDeadline(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	must(t, e, "rebuild")
	returns := decode[ctl.KindList](t, must(t, e, "pending", "--kind", "return", "--json"))
	if returns.Count != 1 || returns.Deadlines[0].Kind != "return" || returns.Deadlines[0].Overdue || !strings.HasPrefix(returns.Deadlines[0].RentalID, "bike3_") {
		t.Errorf("pending --kind return: %+v, want the approved rental's return, not overdue", returns)
	}
	payments := decode[ctl.KindList](t, must(t, e, "pending", "--kind", "payment", "--json"))
	if payments.Count != len(outstanding) || payments.Deadlines[0].RentalID != outstanding[0] {
		t.Errorf("pending --kind payment: %+v, want the outstanding payments %v", payments, outstanding)
	}
	if r := must(t, e, "pending", "--kind", "return", "--overdue"); !strings.Contains(r.stdout, "0 return deadlines") {
		t.Errorf("pending --kind return --overdue:\n%s\nwant none", r.stdout)
	}
	wantStatus(t, 2, e, "pending", "--kind", "bikes")
}
