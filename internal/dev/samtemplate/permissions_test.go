package samtemplate_test

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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go/middleware"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	rentalpkg "github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/testkit/iamtest"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

// The rental paths' timings: short, so that a payment times out and a rental is
// stuck within seconds. Only the periodic sweep, which the test runs once the other
// paths have settled, calls payments off in sweep mode; with precise deadlines each
// payment's own schedule does, so the payment timeout there leaves the other paths
// time to settle first on a busy machine.
const (
	permissionsTimeout        = 3 * time.Second
	permissionsPreciseTimeout = 8 * time.Second
	permissionsGrace          = time.Second
)

// TestRolesGrantWhatThePathsUse runs the rental paths (approved and returned,
// payment rejected, timed out, cancelled by an operator, and a stuck rental that the
// sweep repairs) on the local stack, with each function's AWS calls recorded, in
// each deadline mode and with the Stripe provider; it also builds each function from
// the template's own environment, as a cold start does, which reads the secrets. It
// adds what AWS does with a role on a function's behalf, as the template configures
// it: Lambda writing the function's logs, the event source mappings reading the
// Events stream and sending what fails to their destinations, and Scheduler
// invoking the sweep for the schedules that exist. Each use must be allowed by the
// role of the one who uses it, as the template's conditions make that role for the
// mode; and every action each role grants must be used.
func TestRolesGrantWhatThePathsUse(t *testing.T) {
	tpl := load(t)
	for _, mode := range []struct {
		name   string
		params map[string]string
	}{
		{"sweep deadlines", map[string]string{"DeadlineMode": "sweep"}},
		{"precise deadlines", map[string]string{"DeadlineMode": "precise"}},
		{"stripe", map[string]string{"PaymentProvider": "stripe"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.params["PaymentProvider"] == "stripe" {
				if _, err := stripemock.Find(); err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatalf("stripe-mock is required under CI=true: %v", err)
					}
					t.Skipf("no stripe-mock: %v", err)
				}
			}
			uses, e := runPaths(t, tpl, mode.params)
			checkGrants(t, tpl, e, uses)
		})
	}
}

// world is one mode's run: the local stack, and what it takes to drive it.
type world struct {
	t        *testing.T
	tpl      *samtemplate.Template
	e        samtemplate.Env
	up       *local.Up
	base     string
	tokens   *auth.Tokens
	db       *dynamodb.Client
	pending  string
	stripe   bool
	precise  bool
	operator string
}

// runPaths runs every rental path in the mode params set, and returns what each
// role was used for (by the function's logical id, and "SweepSchedulerRole") and the
// template's Env of the run.
func runPaths(t *testing.T, tpl *samtemplate.Template, params map[string]string) (map[string][]iamtest.Use, samtemplate.Env) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	names := map[string]string{
		"EventsTable":           emulatortest.TableName(t, "events"),
		"DeadlinesTable":        emulatortest.TableName(t, "pending"),
		"DeadlineScheduleGroup": emulatortest.TableName(t, "deadlines"),
	}
	e := env(tpl, params, names)
	precise, err := tpl.Condition("PreciseDeadlines", e)
	if err != nil {
		t.Fatal(err)
	}
	useStripe, err := tpl.Condition("UseStripe", e)
	if err != nil {
		t.Fatal(err)
	}
	recorder := &iamtest.Actions{Account: samtemplate.AccountID}
	counted := func(part string, c aws.Config) aws.Config {
		c.APIOptions = append(slices.Clone(c.APIOptions), recorder.Middleware(part))
		return c
	}

	// The stack's environment: the template's (the one-time schedules' target, role
	// and dead-letter queue included), with the tables of this run, the timings of
	// the test, and the secrets given directly: the cold starts below read them as
	// the template's functions do.
	timeout := permissionsTimeout
	if precise {
		timeout = permissionsPreciseTimeout
	}
	stackEnv := templateEnvironment(t, tpl, e)
	maps.Copy(stackEnv, map[string]string{
		wiring.EnvPaymentTimeout: timeout.String(), wiring.EnvStuckGrace: permissionsGrace.String(),
		wiring.EnvWebhookSecretID: "", wiring.EnvWebhookSecret: local.DefaultWebhookSecret,
		"STRIPE_SECRET_ID": "",
	})
	var stuck atomic.Value // the rental whose confirmation the process refuses
	stuck.Store("")
	var unavailable atomic.Value // the rental for which the process's and the projector's DynamoDB calls fail
	unavailable.Store("")
	up, err := local.StartWith(ctx, local.Options{
		AWS: &cfg, Getenv: func(k string) string { return stackEnv[k] }, Logger: slog.New(slog.DiscardHandler),
		// The test runs the periodic sweep itself, when it is due.
		SweepInterval: 24 * time.Hour, DeadlinePoll: 100 * time.Millisecond, MaxRetryAttempts: 1,
		PartAWS: func(part string, c aws.Config) (aws.Config, error) {
			if part == local.Runner {
				return c, nil
			}
			if part == lambdas.Process || part == lambdas.Projector {
				c = failingFor(c, &unavailable)
			}
			return counted(part, c), nil
		},
		Wrap: func(function string, inv local.Invoker) local.Invoker {
			if function != lambdas.Process {
				return inv
			}
			return refusing{inner: inv, rental: &stuck}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := local.Listen("127.0.0.1:0")
	if err != nil {
		up.Stop()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Run(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the local stack: %v", err)
		}
		up.Stop()
	})
	base := "http://" + l.Addr().String()
	w := &world{t: t, tpl: tpl, e: e, up: up, base: base, tokens: &auth.Tokens{BaseURL: base}, db: emulatortest.DynamoDB(t),
		pending: names["DeadlinesTable"], stripe: useStripe, precise: precise, operator: "permissions-operator"}

	// Cold starts, from the template's environment: the secrets.
	coldStarts(t, tpl, e, cfg, counted)

	// The paths. A timed-out rental and a stuck one first, since they wait longest.
	timedOut := w.request("tout")
	stuckRental := w.request("stuk")
	stuck.Store(stuckRental.id)
	w.pay(stuckRental, true)
	w.waitFor("the stuck rental's confirmation to be dead-lettered", func() (bool, string) {
		for _, dl := range up.DeadLetters() {
			if dl.Function == lambdas.Process {
				return true, ""
			}
		}
		return false, "no dead letter"
	})

	// A rental whose request the process and the projector cannot handle (DynamoDB
	// fails them): each parks the record in a parking stream of its own, and the
	// sweep below delivers it again to each.
	parkedBike := "bike-park-" + ident.Random(6)
	unavailable.Store(parkedBike + "_") // in every call for its rental, in no other
	parkedRental := w.requestBike(parkedBike, "park")
	w.waitFor("the rental's request to be parked by the process and the projector", func() (bool, string) {
		for _, consumer := range []string{eventfilter.Process, eventfilter.Projector} {
			out, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.pending), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{
					Value: deadlinekinds.RedeliveryPrefix + parked.Subject(consumer, rentalpkg.StreamID(parkedBike), 2)}}})
			if err != nil {
				return false, err.Error()
			}
			if out.Item == nil {
				return false, "no row of the record parked by the " + consumer
			}
		}
		return true, ""
	})
	unavailable.Store("")

	approved := w.request("appr")
	w.pay(approved, true)
	w.waitStatus(approved, rentalview.StatusApproved)
	w.call(http.MethodGet, "/rentals/"+approved.id, nil, approved.renter, http.StatusOK, nil)
	w.call(http.MethodGet, "/rentals", nil, approved.renter, http.StatusOK, nil)
	w.call(http.MethodGet, "/bikes/"+approved.bike, nil, "", http.StatusOK, nil)
	w.call(http.MethodPost, "/bikes/"+approved.bike+"/return", nil, w.operatorToken(), http.StatusOK, nil)
	w.waitStatus(approved, rentalview.StatusReturned)

	rejected := w.request("rejt")
	w.pay(rejected, false)
	w.waitStatus(rejected, rentalview.StatusRejected)

	cancelled := w.request("canc")
	w.call(http.MethodGet, "/payments/pending", nil, w.operatorToken(), http.StatusOK, nil)
	// The console's reads of the to-do table, and the console itself.
	for _, path := range []string{"/deadlines", "/processes/stuck", "/refunds/owed"} {
		w.call(http.MethodGet, path, nil, w.operatorToken(), http.StatusOK, nil)
	}
	w.call(http.MethodGet, "/console/config", nil, "", http.StatusOK, nil)
	w.call(http.MethodPost, "/rentals/"+cancelled.id+"/cancel-payment", nil, w.operatorToken(), http.StatusOK, nil)
	w.waitStatus(cancelled, rentalview.StatusCancelled)

	// The timed-out payment: its own schedule calls it off with precise deadlines;
	// the periodic sweep does otherwise, and finds the stuck rental in either mode.
	if precise {
		w.waitStatus(timedOut, rentalview.StatusCancelled)
		// Lambda delivers a record at least once: the projector given an
		// outstanding payment's PaymentPrepared again (twice here, so that one
		// finds its schedule made) keeps the schedule where it is.
		again := w.request("agin")
		for range 2 {
			redeliverPrepared(t, up, dynamo.New(w.db, names["EventsTable"]), again)
		}
	}
	stuckDue := stuckRental.requested.Add(timeout + permissionsGrace)
	w.waitFor("the stuck rental to be due for repair", func() (bool, string) {
		return time.Now().After(stuckDue.Add(time.Second)), "not yet"
	})
	scheduled := time.Now().UTC().Truncate(time.Second)
	if err := local.Call(ctx, up.Functions.Sweep, map[string]string{"scheduledTime": scheduled.Format(time.RFC3339)}, &json.RawMessage{}); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	w.waitStatus(timedOut, rentalview.StatusCancelled)
	w.waitStatus(stuckRental, rentalview.StatusApproved)
	w.waitStatus(parkedRental, rentalview.StatusAwaitingPayment) // redelivered by the sweep
	for _, r := range []rental{timedOut, stuckRental, approved, rejected, cancelled} {
		w.waitSettled(r)
	}

	// Who used what: the functions' own calls, and what AWS does with their roles.
	uses := map[string][]iamtest.Use{}
	byName := map[string]string{}
	for _, f := range lambdas.All() {
		byName[f.Name] = logicalID(f.Name)
	}
	for _, u := range recorder.Uses() {
		id, ok := byName[u.Function]
		if !ok {
			t.Fatalf("a call recorded under %q, no function of the template", u.Function)
		}
		uses[id] = append(uses[id], u)
	}
	platformUses(t, tpl, e, uses)
	return uses, e
}

// rental is one rental of a path, on its own bike, by its own renter (the renter's
// token).
type rental struct {
	id, ref, bike, renter string
	// requested is a time after the request was recorded.
	requested time.Time
}

// refusing is the process function, failing every batch that confirms the payment
// of one rental: that rental's confirmation is dead-lettered, and the rental stuck.
type refusing struct {
	inner  local.Invoker
	rental *atomic.Value
}

func (r refusing) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if id := r.rental.Load().(string); id != "" && bytes.Contains(payload, []byte(`"S":"PaymentConfirmed"`)) && bytes.Contains(payload, []byte(id)) {
		return nil, errors.New("the process refuses the confirmation of " + id)
	}
	return r.inner.Invoke(ctx, payload)
}

func (w *world) operatorToken() string {
	w.t.Helper()
	token, err := w.tokens.Operator(context.Background(), w.operator)
	if err != nil {
		w.t.Fatal(err)
	}
	return token
}

// call sends an API request with a bearer token (none if empty) and checks its
// status.
func (w *world) call(method, path string, body []byte, token string, want int, out any) {
	w.t.Helper()
	w.callWith(method, path, body, http.Header{"Authorization": {auth.Bearer(token)}}, want, out)
}

func (w *world) callWith(method, path string, body []byte, hdr http.Header, want int, out any) {
	w.t.Helper()
	req, err := http.NewRequest(method, w.base+path, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	for k, v := range hdr {
		if k != "Authorization" || v[0] != auth.Bearer("") {
			req.Header[k] = v
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		w.t.Fatalf("%s %s: status %d, want %d: %.300s", method, path, resp.StatusCode, want, got)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			w.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// request registers a bike and has a renter of its own request it, and waits for
// the payment to be prepared.
func (w *world) request(code string) rental {
	w.t.Helper()
	r := w.requestBike("bike-"+code+"-"+ident.Random(6), code)
	w.waitStatus(r, rentalview.StatusAwaitingPayment)
	return r
}

// requestBike registers bike and requests it, without waiting for the payment.
func (w *world) requestBike(bike, code string) rental {
	w.t.Helper()
	r := rental{bike: bike, renter: "renter-" + code + "-" + ident.Random(6)}
	w.call(http.MethodPut, "/bikes/"+r.bike, nil, w.operatorToken(), http.StatusCreated, nil)
	token, err := w.tokens.Renter(context.Background(), r.renter)
	if err != nil {
		w.t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"bikeId": r.bike})
	var accepted struct{ RentalID string }
	w.call(http.MethodPost, "/rentals", body, token, http.StatusAccepted, &accepted)
	r.requested = time.Now() // after the request was recorded
	r.id, r.ref, r.renter = accepted.RentalID, payment.ReferenceFor(accepted.RentalID), token
	return r
}

func (w *world) status(r rental) (rentalview.Status, map[string]any) {
	w.t.Helper()
	var view map[string]any
	w.call(http.MethodGet, "/rentals/"+r.id, nil, r.renter, http.StatusOK, &view)
	s, _ := view["status"].(string)
	return rentalview.Status(s), view
}

func (w *world) waitStatus(r rental, want rentalview.Status) {
	w.t.Helper()
	w.waitFor(fmt.Sprintf("rental %s to be %s", r.id, want), func() (bool, string) {
		s, _ := w.status(r)
		return s == want, "status " + string(s)
	})
}

// waitSettled waits until the rental's pending row is a settled marker: the
// projector has applied its end (and disarmed its schedule).
func (w *world) waitSettled(r rental) {
	w.t.Helper()
	w.waitFor("the pending row of "+r.id+" to be settled", func() (bool, string) {
		out, err := w.db.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(w.pending), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: r.ref}},
		})
		if err != nil {
			return false, err.Error()
		}
		_, settled := out.Item[schema.DeadlineSettled]
		return settled, "not settled"
	})
}

func (w *world) waitFor(what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("gave up waiting for %s; last seen: %s", what, seen)
		}
		time.Sleep(50 * time.Millisecond) // polling the stack, with a deadline
	}
}

// pay has the provider report the rental's payment succeeded or failed, by webhook.
func (w *world) pay(r rental, succeeded bool) {
	w.t.Helper()
	if !w.stripe {
		typ, reason := generic.TypeSucceeded, ""
		if !succeeded {
			typ, reason = generic.TypeFailed, "insufficient funds"
		}
		body, _ := json.Marshal(generic.Event{ID: "evt-" + ident.Random(22), Type: typ, PaymentReference: r.ref, Reason: reason})
		hdr := http.Header{webhook.Header: {generic.Sign([]byte(local.DefaultWebhookSecret), body, time.Now())}}
		w.callWith(http.MethodPost, "/webhooks/payments", body, hdr, http.StatusOK, nil)
		return
	}
	_, view := w.status(r)
	pay, _ := view["payment"].(map[string]any)
	intent, _ := pay["paymentId"].(string)
	if !strings.HasPrefix(intent, "pi_") {
		w.t.Fatalf("rental %s has no PaymentIntent: %v", r.id, view)
	}
	name := "payment_intent.succeeded"
	if !succeeded {
		name = "payment_intent.payment_failed"
	}
	raw, err := os.ReadFile(filepath.Join(root, "internal", "adapters", "provider", "stripe", "testdata", "events", name+".json"))
	if err != nil {
		w.t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "rp_01JZ8K3M6Q2W4E5R7T9YAB", r.ref)
	text = strings.ReplaceAll(text, "pi_3TbC4nLkdIwHu7ix0yXq2aZd", intent)
	var event map[string]any
	if err := json.Unmarshal([]byte(text), &event); err != nil {
		w.t.Fatal(err)
	}
	event["id"] = "evt_" + ident.Random(22)
	body, _ := json.Marshal(event)
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: local.DefaultStripeWebhookSecret, Timestamp: time.Now()})
	w.callWith(http.MethodPost, "/webhooks/stripe", body, http.Header{stripe.SignatureHeader: {signed.Header}}, http.StatusOK, nil)
}

// templateEnvironment returns every function's environment in the template, in e,
// as one (the functions agree on the variables they share).
func templateEnvironment(t *testing.T, tpl *samtemplate.Template, e samtemplate.Env) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		for k, v := range functionEnvironment(t, tpl, fn, e) {
			if prev, ok := out[k]; ok && prev != v {
				t.Fatalf("the functions' %s differ: %q and %q", k, prev, v)
			}
			out[k] = v
		}
	}
	return out
}

func functionEnvironment(t *testing.T, tpl *samtemplate.Template, fn string, e samtemplate.Env) map[string]string {
	t.Helper()
	out := map[string]string{}
	vars := tpl.Resource(fn).Get("Properties", "Environment", "Variables")
	for _, k := range vars.Keys() {
		v, err := tpl.Eval(vars.Get(k), e)
		if err != nil {
			t.Fatalf("%s: %s: %v", fn, k, err)
		}
		out[k] = fmt.Sprint(v)
	}
	return out
}

// coldStarts builds each function from its environment in the template, on a
// configuration that records its calls: what a cold start does (the secrets).
func coldStarts(t *testing.T, tpl *samtemplate.Template, e samtemplate.Env, cfg aws.Config, counted func(string, aws.Config) aws.Config) {
	t.Helper()
	ctx := context.Background()
	secrets := secretsmanager.NewFromConfig(cfg)
	for param, value := range map[string]string{
		"WebhookSecretName": "a-webhook-secret-for-the-template-test",
		"StripeSecretName":  fmt.Sprintf(`{"secretKey": %q, "webhookSecret": %q}`, stripemock.SecretKey, local.DefaultStripeWebhookSecret),
	} {
		name, _ := tpl.Param(param, e)
		_, err := secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(fmt.Sprint(name)), SecretString: aws.String(value)})
		var exists *smtypes.ResourceExistsException
		if err != nil && !errors.As(err, &exists) {
			t.Fatal(err)
		}
	}
	for _, f := range lambdas.All() {
		fnEnv := functionEnvironment(t, tpl, logicalID(f.Name), e)
		if _, err := f.Build(ctx, counted(f.Name, cfg.Copy()), func(k string) string { return fnEnv[k] }, slog.New(slog.DiscardHandler), io.Discard); err != nil {
			t.Fatalf("%s does not start with the template's environment: %v", f.Name, err)
		}
	}
}

// platformUses adds what AWS does with the template's roles on its resources'
// behalf, as the template configures them: Lambda writes each function's logs to its
// log group; an event source mapping reads its stream (the actions of the DynamoDB
// Developer Guide's policy for a Lambda function reading a stream) and sends the
// records that fail to its on-failure destination; Scheduler, assuming the
// scheduler's role, invokes each schedule's target and sends what it cannot deliver
// to the schedule's dead-letter queue: the sweep's schedule where it exists, and the
// payments' one-time schedules where the projector made some.
func platformUses(t *testing.T, tpl *samtemplate.Template, e samtemplate.Env, uses map[string][]iamtest.Use) {
	t.Helper()
	eval := func(n samtemplate.Node) string {
		t.Helper()
		v, err := tpl.Eval(n, e)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(v)
	}
	add := func(who, action, resource, why string) {
		uses[who] = append(uses[who], iamtest.Use{Function: who, Action: action, Resource: resource, Call: why})
	}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		group := eval(tpl.Resource(fn).Get("Properties", "LoggingConfig", "LogGroup"))
		stream := fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:log-stream:2026/12/01/[$LATEST]0123abcd", samtemplate.Region, samtemplate.AccountID, group)
		add(fn, "logs:CreateLogStream", stream, "Lambda, the function's logs")
		add(fn, "logs:PutLogEvents", stream, "Lambda, the function's logs")
	}
	for _, m := range tpl.Resources("AWS::Lambda::EventSourceMapping") {
		p := tpl.Resource(m).Get("Properties")
		fn := p.Get("FunctionName").Str()
		for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"} {
			add(fn, a, eval(p.Get("EventSourceArn")), "Lambda, event source mapping "+m)
		}
		add(fn, "sqs:SendMessage", eval(p.Get("DestinationConfig", "OnFailure", "Destination")), "Lambda, on-failure destination of "+m)
	}
	const role = "SweepSchedulerRole"
	for _, s := range tpl.Resources("AWS::Scheduler::Schedule") {
		r := tpl.Resource(s)
		if present, err := tpl.Present(r, e); err != nil || !present {
			continue
		}
		target := r.Get("Properties", "Target")
		if name, arg, _ := target.Get("RoleArn").Function(); name != "Fn::GetAtt" || arg.Str() != role+".Arn" {
			t.Fatalf("schedule %s assumes another role than %s", s, role)
		}
		add(role, "lambda:InvokeFunction", eval(target.Get("Arn")), "Scheduler, schedule "+s)
		add(role, "sqs:SendMessage", eval(target.Get("DeadLetterConfig", "Arn")), "Scheduler, dead letters of schedule "+s)
	}
	projector := functionEnvironment(t, tpl, "ProjectorFunction", e)
	if slices.ContainsFunc(uses["ProjectorFunction"], func(u iamtest.Use) bool { return u.Action == "scheduler:CreateSchedule" }) {
		if arn, _ := e.Resource(role + ".Arn"); projector[wiring.EnvDeadlineRole] != fmt.Sprint(arn) {
			t.Fatalf("the one-time schedules assume %s, not %s", projector[wiring.EnvDeadlineRole], role)
		}
		add(role, "lambda:InvokeFunction", projector[wiring.EnvDeadlineTarget], "Scheduler, the payments' one-time schedules")
		add(role, "sqs:SendMessage", projector[wiring.EnvDeadlineDLQ], "Scheduler, dead letters of the payments' one-time schedules")
	}
}

// checkGrants fails for each use its role does not allow, and for each action a
// role grants that nothing used.
func checkGrants(t *testing.T, tpl *samtemplate.Template, e samtemplate.Env, uses map[string][]iamtest.Use) {
	t.Helper()
	roles := map[string][]samtemplate.Statement{}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		roles[fn] = nil
	}
	roles["SweepSchedulerRole"] = nil
	for who := range roles {
		var st []samtemplate.Statement
		var err error
		if who == "SweepSchedulerRole" {
			st, err = tpl.Statements(who, e)
		} else {
			st, err = tpl.FunctionStatements(who, e)
		}
		if err != nil {
			t.Fatal(err)
		}
		roles[who] = st
	}
	for _, who := range slices.Sorted(maps.Keys(roles)) {
		st, used := roles[who], iamtest.Sorted(uses[who])
		var lines []string
		for _, u := range used {
			lines = append(lines, "  "+u.String())
			if u.Resource == "" {
				t.Errorf("%s: the test cannot tell the resource of %s", who, u)
				continue
			}
			if !slices.ContainsFunc(st, func(s samtemplate.Statement) bool { return s.Allows(u.Action, u.Resource, u.Context) }) {
				t.Errorf("%s: not granted by its role in the template: %s", who, u)
			}
		}
		t.Logf("%s uses:\n%s", who, strings.Join(lines, "\n"))
		// Every action of every statement, on every resource it names, is used.
		for _, s := range st {
			for _, a := range s.Actions {
				for _, r := range s.Resources {
					one := samtemplate.Statement{Effect: "Allow", Actions: []string{a}, Resources: []string{r}}
					if !slices.ContainsFunc(used, func(u iamtest.Use) bool { return one.Matches(u.Action, u.Resource) }) {
						t.Errorf("%s: %s grants %s on %s, which no path uses", who, s.Sid, a, r)
					}
				}
			}
		}
	}
}

// failingFor makes every DynamoDB call of c that holds the string in id fail,
// while id holds one: a function's calls for one rental, as if DynamoDB were down
// for it alone.
func failingFor(c aws.Config, id *atomic.Value) aws.Config {
	c.APIOptions = append(slices.Clone(c.APIOptions), func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("failingFor",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if s := id.Load().(string); s != "" {
					if b, err := json.Marshal(in.Parameters); err == nil && bytes.Contains(b, []byte(s)) {
						return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("DynamoDB is unavailable for " + s)
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
	return c
}

// redeliverPrepared hands the projector function r's PaymentPrepared again, as
// Lambda's event source mapping may, and fails unless it is handled.
func redeliverPrepared(t *testing.T, up *local.Up, store *dynamo.Store, r rental) {
	t.Helper()
	records, err := store.Read(context.Background(), payment.StreamID(payment.ReferenceFor(r.id)), 0)
	if err != nil || len(records) == 0 || records[0].Type != (payment.PaymentPrepared{}).EventType() {
		t.Fatalf("the payment of %s: %d records, %v", r.id, len(records), err)
	}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamo.EventRecord(records[0], "1")}}
	var resp events.DynamoDBEventResponse
	if err := local.Call(context.Background(), up.Functions.Projector, ev, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the projector given %s's PaymentPrepared again: %+v, %v", r.id, resp, err)
	}
}
