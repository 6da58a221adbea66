package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/schedules"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/wiring"
)

// serve runs up on a loopback port the kernel picks until the test ends, when
// cancel, which ends ctx, stops it; it returns the stack's base URL.
func serve(t *testing.T, ctx context.Context, cancel context.CancelFunc, up *local.Up) string {
	t.Helper()
	l, err := local.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Run(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stack: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

// stackClient calls a local stack's HTTP API as a client does.
type stackClient struct {
	t      *testing.T
	base   string
	tokens *auth.Tokens
}

// newStackClient is a client of the stack listening at base.
func newStackClient(t *testing.T, base string) stackClient {
	return stackClient{t: t, base: base, tokens: &auth.Tokens{BaseURL: base}}
}

// preciseStack is a local stack in precise deadline mode whose periodic sweep never
// runs on its own: whatever cancels a payment is its one-time schedule, or a sweep the
// test invokes.
type preciseStack struct {
	stackClient
	stack     *local.Stack
	scheduler *scheduler.Client
	group     string
	// pending reads the stack's Deadlines table.
	pending *deadlinetable.Table
	// metrics holds what the stack's functions wrote as their metrics.
	metrics *syncBuffer
}

const preciseTimeout = 4 * time.Second

func startPrecise(t *testing.T) *preciseStack {
	t.Helper()
	return startPreciseWith(t, nil)
}

// startPreciseWith is startPrecise with more settings.
func startPreciseWith(t *testing.T, more map[string]string) *preciseStack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	events, pending := emulatortest.TableName(t, "events"), emulatortest.TableName(t, "pending")
	group := emulatortest.TableName(t, "deadlines")
	env := map[string]string{
		wiring.EnvEventsTable: events, wiring.EnvDeadlinesTable: pending, wiring.EnvWebhookSecret: local.DefaultWebhookSecret,
		wiring.EnvPaymentTimeout: preciseTimeout.String(), wiring.EnvDeadlineMode: wiring.ModePrecise,
		wiring.EnvDeadlineGroup:  group,
		wiring.EnvDeadlineTarget: "arn:aws:lambda:us-east-1:000000000000:function:sweep",
		wiring.EnvDeadlineRole:   "arn:aws:iam::000000000000:role/scheduler",
		wiring.EnvDeadlineDLQ:    "arn:aws:sqs:us-east-1:000000000000:deadline-dlq",
	}
	maps.Copy(env, more)
	client := scheduler.NewFromConfig(cfg)
	metrics := &syncBuffer{}
	// The one local stack, in precise mode: it creates the tables and the group.
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: time.Hour, Logger: slog.New(slog.DiscardHandler), DeadlinePoll: 100 * time.Millisecond, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	stack := up.Stack
	base := serve(t, ctx, cancel, up)
	kinds, err := wiring.DeadlineKinds(func(k string) string { return env[k] }, deadlinekinds.Receivers{})
	if err != nil {
		t.Fatal(err)
	}
	projection, err := deadlinetable.New(dynamodb.NewFromConfig(cfg), pending, kinds)
	if err != nil {
		t.Fatal(err)
	}
	return &preciseStack{stackClient: newStackClient(t, base), stack: stack, scheduler: client, group: group, pending: projection, metrics: metrics}
}

// send calls method path with body and the headers hdr, as an operator unless hdr
// names who (Authorization), decodes a 2xx answer into out (if not nil) and returns
// the status.
func (p *stackClient) send(method, path string, body []byte, hdr http.Header, out any) int {
	p.t.Helper()
	req, err := http.NewRequest(method, p.base+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if req.Header.Get("Authorization") == "" { // an operator, unless the caller says who
		token, err := p.tokens.Operator(context.Background(), "ops")
		if err != nil {
			p.t.Fatal(err)
		}
		req.Header.Set("Authorization", auth.Bearer(token))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			p.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// rent registers a bike and requests it; it returns the rental id and the payment
// reference once the payment is prepared.
func (p *preciseStack) rent(bike string) (string, string) {
	p.t.Helper()
	if code := p.send("PUT", "/bikes/"+bike, nil, nil, nil); code != http.StatusCreated {
		p.t.Fatalf("register %s: %d", bike, code)
	}
	body, _ := json.Marshal(map[string]string{"bikeId": bike})
	token, err := p.tokens.Renter(context.Background(), "renter-"+bike)
	if err != nil {
		p.t.Fatal(err)
	}
	var r struct{ RentalID, PaymentReference string }
	if code := p.send("POST", "/rentals", body, http.Header{"Content-Type": {"application/json"}, "Authorization": {auth.Bearer(token)}}, &r); code != http.StatusAccepted {
		p.t.Fatalf("request %s: %d", bike, code)
	}
	p.waitStatus(r.RentalID, "awaiting-payment")
	return r.RentalID, r.PaymentReference
}

func (p *preciseStack) status(rentalID string) string {
	var v struct{ Status string }
	p.send("GET", "/rentals/"+rentalID, nil, nil, &v)
	return v.Status
}

func (p *preciseStack) waitStatus(rentalID, want string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("rental %s to be %s", rentalID, want), func() bool { return p.status(rentalID) == want })
}

// waitFor waits for cond, failing the test after 30 seconds.
func (p *stackClient) waitFor(what string, cond func() bool) {
	p.t.Helper()
	if !await(cond) {
		p.t.Fatalf("timed out waiting for %s", what)
	}
}

// await waits for cond for up to 30 seconds, and reports whether it came.
func await(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// signedWebhook posts e to POST /webhooks/payments, signed as the generic provider
// signs it with the local stack's webhook secret, decodes a 2xx answer into out (if
// not nil) and returns the status.
func (p *stackClient) signedWebhook(e generic.Event, out any) int {
	p.t.Helper()
	body, err := json.Marshal(e)
	if err != nil {
		p.t.Fatal(err)
	}
	hdr := http.Header{"Content-Type": {"application/json"}, webhook.Header: {generic.Sign([]byte(local.DefaultWebhookSecret), body, time.Now())}}
	return p.send("POST", "/webhooks/payments", body, hdr, out)
}

// refundsListed returns the rentals GET /refunds/owed lists and those
// GET /deadlines?kind=refund lists, a rental once per refund it owes.
func (p *stackClient) refundsListed() (refunds, deadlines []string) {
	p.t.Helper()
	type owed struct{ RentalID string }
	var r struct{ Refunds []owed }
	if code := p.send("GET", "/refunds/owed", nil, nil, &r); code != http.StatusOK {
		p.t.Fatalf("GET /refunds/owed: %d", code)
	}
	var d struct{ Deadlines []owed }
	if code := p.send("GET", "/deadlines?kind=refund", nil, nil, &d); code != http.StatusOK {
		p.t.Fatalf("GET /deadlines?kind=refund: %d", code)
	}
	for _, o := range r.Refunds {
		refunds = append(refunds, o.RentalID)
	}
	for _, o := range d.Deadlines {
		deadlines = append(deadlines, o.RentalID)
	}
	return refunds, deadlines
}

// schedule returns the payment's one-time schedule, or nil if it has none.
func (p *preciseStack) schedule(reference string) *scheduler.GetScheduleOutput {
	p.t.Helper()
	out, err := p.scheduler.GetSchedule(context.Background(), &scheduler.GetScheduleInput{
		Name: aws.String(schedules.Name(reference)), GroupName: aws.String(p.group),
	})
	var gone *types.ResourceNotFoundException
	if errors.As(err, &gone) {
		return nil
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// TestPreciseDeadlineFiresOnTime follows one payment that is never paid: the
// projector creates its one-time schedule at the deadline, the local runner fires it,
// the sweep function gives up on that one payment, and the schedule is gone.
func TestPreciseDeadlineFiresOnTime(t *testing.T) {
	p := startPrecise(t)
	rentalID, ref := p.rent("precise-1")
	var s *scheduler.GetScheduleOutput
	p.waitFor("the payment's schedule", func() bool { s = p.schedule(ref); return s != nil })
	at, err := schedules.ParseAtExpression(aws.ToString(s.ScheduleExpression))
	if err != nil {
		t.Fatal(err)
	}
	if s.ActionAfterCompletion != types.ActionAfterCompletionDelete || s.Target.DeadLetterConfig == nil || s.Target.RetryPolicy == nil {
		t.Errorf("schedule %+v: want deletion after completion, a retry policy and a dead-letter queue", s)
	}
	var input deadlines.Trigger
	if err := json.Unmarshal([]byte(aws.ToString(s.Target.Input)), &input); err != nil || input.Kind != deadlinekinds.Payment || input.Key != ref || ref != payment.ReferenceFor(rentalID) {
		t.Errorf("schedule input %s (%v): want the payment row %s of rental %s", aws.ToString(s.Target.Input), err, ref, rentalID)
	}
	if status := p.status(rentalID); status != "awaiting-payment" {
		t.Fatalf("rental %s before its deadline %v", status, at)
	}
	p.waitStatus(rentalID, "cancelled")
	var v struct {
		History []struct {
			At          time.Time
			Type        string
			CausationID string
		}
	}
	p.send("GET", "/rentals/"+rentalID, nil, nil, &v)
	var prepared, cancelled time.Time
	var cause string
	for _, e := range v.History {
		switch e.Type {
		case "PaymentPrepared":
			prepared = e.At
		case "PaymentCancelled":
			cancelled, cause = e.At, e.CausationID
		}
	}
	if late := cancelled.Sub(prepared.Add(preciseTimeout)); late < 0 {
		t.Errorf("cancelled %v before the payment's deadline (schedule at %v)", -late, at)
	}
	if want := "deadline:" + ref; cause != want {
		t.Errorf("PaymentCancelled caused by %q, want %q: its own schedule", cause, want)
	}
	p.waitFor("the fired schedule's deletion", func() bool { return p.schedule(ref) == nil })
	if dl := p.stack.DeadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
}

// TestSettlingDeletesThePaymentsSchedule confirms a payment before its deadline: its
// schedule is deleted and nothing cancels the rental afterwards.
func TestSettlingDeletesThePaymentsSchedule(t *testing.T) {
	p := startPrecise(t)
	rentalID, ref := p.rent("precise-2")
	var s *scheduler.GetScheduleOutput
	p.waitFor("the payment's schedule", func() bool { s = p.schedule(ref); return s != nil })
	at, err := schedules.ParseAtExpression(aws.ToString(s.ScheduleExpression))
	if err != nil {
		t.Fatal(err)
	}
	eventID := "evt-" + ident.Random(20)
	var ans struct{ EventID, PaymentReference, Status string }
	if code := p.signedWebhook(generic.Event{ID: eventID, Type: generic.TypeSucceeded, PaymentReference: ref}, &ans); code != http.StatusOK {
		t.Fatalf("payment.succeeded: %d", code)
	}
	if ans.EventID != eventID || ans.PaymentReference != ref || ans.Status != "confirmed" {
		t.Fatalf("payment.succeeded answered %+v", ans)
	}
	p.waitFor("the settled payment's schedule to be deleted", func() bool { return p.schedule(ref) == nil })
	p.waitStatus(rentalID, "approved")
	// Past the schedule's time and several polls of the local scheduler, the rental
	// is still approved: nothing fired.
	time.Sleep(time.Until(at) + 2*time.Second)
	if status := p.status(rentalID); status != "approved" {
		t.Errorf("rental %s after its deadline passed", status)
	}
}

// TestTheSweepCatchesALostSchedule deletes a payment's schedule behind the service's
// back: the periodic sweep still calls the payment off.
func TestTheSweepCatchesALostSchedule(t *testing.T) {
	p := startPrecise(t)
	rentalID, ref := p.rent("precise-3")
	var s *scheduler.GetScheduleOutput
	p.waitFor("the payment's schedule", func() bool { s = p.schedule(ref); return s != nil })
	at, err := schedules.ParseAtExpression(aws.ToString(s.ScheduleExpression))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.scheduler.DeleteSchedule(context.Background(), &scheduler.DeleteScheduleInput{
		Name: aws.String(schedules.Name(ref)), GroupName: aws.String(p.group),
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(at) + 1500*time.Millisecond) // past the deadline (at most a second after at), with nothing scheduled
	if status := p.status(rentalID); status != "awaiting-payment" {
		t.Fatalf("rental %s with its schedule lost and no sweep run", status)
	}
	var sum awslambda.Summary
	input := map[string]string{"scheduledTime": time.Now().UTC().Format(time.RFC3339Nano)}
	if err := local.Call(context.Background(), p.stack.Functions.Sweep, input, &sum); err != nil {
		t.Fatal(err)
	}
	if payments, _ := sum.Kind(deadlinekinds.Payment); payments.Found != 1 || payments.Acted != 1 {
		t.Errorf("sweep %+v: want the lost one found and cancelled", sum)
	}
	p.waitStatus(rentalID, "cancelled")
}

// TestAReturnIsFlaggedOverdueOnTime follows an approved rental whose bike is late,
// with a rental period of two seconds, on the local stack in precise mode: its
// return is due (GET /deadlines lists it), the return's one-time schedule fires,
// the bike records ReturnOverdue and the rental is overdue, still listed as an
// overdue return, due as it was; the bike's return then makes it returned, with
// both facts in its history, and the to-do list empty.
func TestAReturnIsFlaggedOverdueOnTime(t *testing.T) {
	p := startPreciseWith(t, map[string]string{wiring.EnvRentalPeriod: "2s"})
	rentalID, ref := p.rent("late-bike")
	if code := p.signedWebhook(generic.Event{ID: "evt-" + ident.Random(20), Type: generic.TypeSucceeded, PaymentReference: ref}, nil); code != http.StatusOK {
		t.Fatalf("payment.succeeded: %d", code)
	}
	p.waitStatus(rentalID, "approved")
	type row struct {
		Kind, RentalID string
		DueAt          time.Time
		Overdue        bool
	}
	var list struct{ Deadlines []row }
	p.waitFor("GET /deadlines?kind=return to list the approved rental's return", func() bool {
		list.Deadlines = nil
		return p.send("GET", "/deadlines?kind=return", nil, nil, &list) == http.StatusOK && len(list.Deadlines) == 1 && list.Deadlines[0].RentalID == rentalID
	})
	due := list.Deadlines[0].DueAt
	p.waitStatus(rentalID, "overdue")
	if late := time.Since(due); late < 0 || late > 10*time.Second {
		t.Errorf("flagged overdue %s after its due time", late)
	}
	// Flagged, the bike is still out: once the projector has the flag, operators
	// keep seeing it as an overdue return, due as it was.
	p.waitFor("the projector to hand the flagged return over to the operators", func() bool {
		_, ok, err := p.pending.Row(context.Background(), deadlinekinds.OverdueKind(2*time.Second), rentalID)
		return err == nil && ok
	})
	list.Deadlines = nil
	if code := p.send("GET", "/deadlines?kind=return&overdue=true", nil, nil, &list); code != http.StatusOK || len(list.Deadlines) != 1 ||
		list.Deadlines[0] != (row{Kind: "return", RentalID: rentalID, DueAt: due, Overdue: true}) {
		t.Errorf("flagged: GET /deadlines?kind=return&overdue=true %d %+v; want the rental listed, overdue, due at %v", code, list.Deadlines, due)
	}
	if code := p.send("POST", "/bikes/late-bike/return", nil, nil, nil); code >= 300 {
		t.Fatalf("return: %d", code)
	}
	p.waitStatus(rentalID, "returned")
	var v struct{ History []struct{ Type string } }
	p.send("GET", "/rentals/"+rentalID, nil, nil, &v)
	var types []string
	for _, e := range v.History {
		types = append(types, e.Type)
	}
	if !slices.Contains(types, "ReturnOverdue") || !slices.Contains(types, "BikeReturned") {
		t.Errorf("history %v, want ReturnOverdue and BikeReturned", types)
	}
	p.waitFor("the return's row to leave the to-do list", func() bool {
		list.Deadlines = nil
		return p.send("GET", "/deadlines?kind=return", nil, nil, &list) == http.StatusOK && len(list.Deadlines) == 0
	})
}
