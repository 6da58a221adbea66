// Package rentalcost measures what one rental costs in DynamoDB request units, path
// by path, by driving the real functions end to end on a local stack with a
// capacity.Counter on every function's AWS clients, and turns those counts into a
// cost per million rentals at published on-demand prices, beside the same rentals
// with one Step Functions execution or one EventBridge Scheduler schedule each.
package rentalcost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

// Path is one way a rental can go.
type Path string

// The paths measured.
const (
	// Approved is a whole rental: requested, paid (the provider's webhook reports
	// payment.succeeded), ridden and returned.
	Approved Path = "approved"
	// Rejected is a rental whose payment the provider rejects by webhook
	// (payment.failed).
	Rejected Path = "payment rejected"
	// TimedOut is a rental whose payment never arrives: the sweep, run past the
	// timeout, calls it off.
	TimedOut Path = "timed out by the sweep"
	// Cancelled is a rental whose payment an operator calls off through the API.
	Cancelled Path = "cancelled by an operator"
)

// Paths returns every path, in the order they are reported.
func Paths() []Path { return []Path{Approved, Rejected, TimedOut, Cancelled} }

func (p Path) code() string {
	switch p {
	case Approved:
		return "appr"
	case Rejected:
		return "rejt"
	case TimedOut:
		return "tout"
	case Cancelled:
		return "canc"
	}
	return "othr"
}

// Function names, as the counter labels their calls.
const (
	FunctionCommand   = lambdas.Command
	FunctionProcess   = lambdas.Process
	FunctionProjector = lambdas.Projector
	FunctionSweep     = lambdas.Sweep
)

// Options configure a Bench.
type Options struct {
	// EventsTable and DeadlinesTable name the tables to create and use.
	EventsTable, DeadlinesTable string
	// RecordingMode is the process's RECORDING_MODE ("append" if empty).
	RecordingMode string
	// Logger receives the functions' and the stack's logs (discarded if nil).
	Logger *slog.Logger
	// Wait bounds each wait for the stack to settle (30s if zero).
	Wait time.Duration
}

// PaymentTimeout is the payment timeout of the bench's functions: short, so that the
// timed-out path waits about two seconds of real time for its payment to be overdue.
const PaymentTimeout = time.Second

// webhookSecret signs the bench's webhooks; it is local to the bench.
var webhookSecret = []byte("rentalcost-bench-webhook-secret")

// Bench is a local stack whose four functions count their DynamoDB calls: the same
// handlers the Lambda functions run, built by the same builders from an environment,
// behind the local stand-ins for API Gateway and the stream event source mappings.
// The sweep is not scheduled: the timed-out path invokes it, as EventBridge
// Scheduler would, once its payment is overdue. Paths must be run one at a time.
type Bench struct {
	opts    Options
	counter *capacity.Counter
	store   *dynamo.Store
	db      *dynamodb.Client
	// deadlines is the Deadlines table as the bench reads it, kinds the kinds of
	// deadline its functions declare.
	deadlines table
	kinds     deadlines.Kinds
	fns       map[string]*tracked
	stack     *local.Stack
	base      string
	client    *http.Client
	// tokens fetches the bearer tokens of the bench's renters and its operator from
	// the local stack's token issuer.
	tokens *auth.Tokens

	stop context.CancelFunc
	// done is closed when the stack has stopped, runErr then saying why.
	done   chan struct{}
	runErr error
	seq    int
	// renters counts the renters made, one per rental (see rent).
	renters int
	http    int
}

// operator is the subject of the bench's operator token.
const operator = "rentalcost-operator"

// Start creates the tables and brings the stack up on cfg, which must reach DynamoDB
// and DynamoDB Streams (moto's server, usually). Stop it with Close.
func Start(ctx context.Context, cfg aws.Config, opts Options) (*Bench, error) {
	if opts.EventsTable == "" || opts.DeadlinesTable == "" {
		return nil, errors.New("rentalcost: the events and deadlines tables must be named")
	}
	if opts.Wait <= 0 {
		opts.Wait = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	db := dynamodb.NewFromConfig(cfg)
	env := map[string]string{
		wiring.EnvEventsTable:    opts.EventsTable,
		wiring.EnvDeadlinesTable: opts.DeadlinesTable,
		wiring.EnvWebhookSecret:  string(webhookSecret),
		wiring.EnvPaymentTimeout: PaymentTimeout.String(),
		wiring.EnvRecordingMode:  opts.RecordingMode,
	}
	kinds, err := wiring.DeadlineKinds(func(name string) string { return env[name] }, deadlinekinds.Receivers{})
	if err != nil {
		return nil, fmt.Errorf("rentalcost: %w", err)
	}
	b := &Bench{
		opts: opts, counter: capacity.NewCounter(db), db: db, store: dynamo.New(db, opts.EventsTable),
		deadlines: tableOf(db, opts.DeadlinesTable), kinds: kinds,
		fns: map[string]*tracked{}, client: &http.Client{Timeout: opts.Wait},
	}
	stream := map[string]bool{}
	for _, f := range lambdas.All() {
		stream[f.Name] = f.Stream
	}
	// The one local stack (local.StartWith) on cfg, each function's calls counted
	// under its name and its invocations tracked; the runner's own calls (stream
	// reads) are not the rental's and go uncounted.
	up, err := local.StartWith(ctx, local.Options{
		Getenv: func(name string) string { return env[name] }, Logger: opts.Logger, AWS: &cfg,
		// Never within a run: the timed-out path invokes the sweep itself. (SWEEP_RATE
		// takes at most 10,000 seconds.)
		SweepInterval: 2 * time.Hour,
		PartAWS: func(part string, c aws.Config) (aws.Config, error) {
			if part != local.Runner {
				c.APIOptions = append(slices.Clone(c.APIOptions), b.counter.Middleware(part))
			}
			return c, nil
		},
		Wrap: func(function string, inv local.Invoker) local.Invoker {
			t := &tracked{inner: inv, stream: stream[function], handled: map[recordKey]bool{}}
			b.fns[function] = t
			return t
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rentalcost: %w", err)
	}
	// A projector checks the table's shard count once, on its first batch: a cost of
	// the execution environment, not of a rental. Each Run resets the counter, so
	// this warm-up is in none of them.
	var resp events.DynamoDBEventResponse
	if err := local.Call(ctx, b.fns[FunctionProjector].inner, events.DynamoDBEvent{}, &resp); err != nil {
		return nil, fmt.Errorf("rentalcost: warm up the projector: %w", err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("rentalcost: %w", err)
	}
	b.base = "http://" + listener.Addr().String()
	b.tokens = &auth.Tokens{BaseURL: b.base, Client: b.client}
	b.stack = up.Stack
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	b.stop, b.done = stop, make(chan struct{})
	go func() {
		b.runErr = b.stack.Run(runCtx, listener)
		close(b.done)
	}()
	return b, nil
}

// Close stops the stack. The tables stay. Safe to call more than once.
func (b *Bench) Close() error {
	b.stop()
	<-b.done
	if b.runErr != nil && !errors.Is(b.runErr, context.Canceled) {
		return fmt.Errorf("rentalcost: the local stack: %w", b.runErr)
	}
	return nil
}

// Measurement is what one rental cost, and what it had to cost.
type Measurement struct {
	Path     Path
	RentalID string
	// Calls are every request the functions made while the rental ran, until the
	// stream consumers had handled every event it appended.
	Calls []capacity.Call
	// Events are the events the rental appended, stream by stream: the bike's, the
	// payment's, the rental-payment process's, the renter's and, on the webhook
	// paths, the provider event's receipt stream, which stays empty when the event
	// settles the payment (the settling event carries the receipt) and holds
	// ProviderEventReceived alone otherwise.
	Events []eventstore.Record
	// Floor is the least the rental's writes can cost.
	Floor Floor
	// HTTPRequests counts the API requests the rental took (API Gateway requests and
	// command function invocations).
	HTTPRequests int
	// Functions holds each function's invocations during the rental.
	Functions map[string]FunctionStats
	// Sweep is what the sweep reported, on the timed-out path.
	Sweep *awslambda.Summary
	// BikeStreamBytes is the size of the bike's stream when the rental began: what
	// its first bike command read.
	BikeStreamBytes int
}

// Floor is what a rental's writes must cost: each event it appends to any stream
// (the renter's RentalRequested included, and a webhook's ProviderEventReceived
// receipt where its event settles nothing), written once on its own, and the two to-do table rows: the
// payment's, created when it is prepared and changed once when it settles, and the
// rental's open process, created on the request and changed once on completion,
// each with its index entry put and removed. It does not count the premium of
// writing several items in one transaction (see Measurement.TransactionPremium).
type Floor struct {
	Events, EventUnits int
	ProjectionUnits    int
	IndexUnits         int
}

// Units returns the whole floor in write request units.
func (f Floor) Units() int { return f.EventUnits + f.ProjectionUnits + f.IndexUnits }

// FunctionStats is one function's invocations during a rental.
type FunctionStats struct {
	Invocations int
	// Records counts stream records delivered, for the stream consumers (a record
	// delivered twice counts twice); Failures the invocations that reported one.
	Records, Failures int
	// Busy is the time spent in the handler, locally against moto: not Lambda's.
	Busy time.Duration
}

// Amortized reports whether a call is the sweep's own search for overdue rows (a
// query of the Deadlines table's index), which runs once per sweep interval
// whatever the number of rentals, rather than work done for a rental.
func Amortized(c capacity.Call) bool {
	return c.Function == FunctionSweep && c.Operation == "Query" && len(c.Tables) == 1 && c.Tables[0].Index == deadlinesIndex
}

// TransactionPremium returns the write units the rental's TransactWriteItems calls
// cost above writing the same items once each on their own: DynamoDB bills every
// item of a transaction twice (capacity.TransactWriteUnits), so it is half of their
// table write units (index writes are not doubled). The request appends the bike's
// BikeRequested and the renter's RentalRequested in one transaction, so that two
// requests by one renter that read the same state cannot both succeed. A provider's
// webhook that settles the payment appends one event (PaymentConfirmed or
// PaymentRejected, carrying the event's receipt) in one conditional PutItem, with no
// premium.
func (m Measurement) TransactionPremium() int {
	var units int
	for _, c := range m.PerRental() {
		if c.Service == "DynamoDB" && c.Operation == "TransactWriteItems" {
			for _, u := range c.Tables {
				units += u.WriteUnits
			}
		}
	}
	return units / 2
}

// PerRental returns the calls done for the rental, without the sweep's search.
func (m Measurement) PerRental() []capacity.Call {
	var out []capacity.Call
	for _, c := range m.Calls {
		if !Amortized(c) {
			out = append(out, c)
		}
	}
	return out
}

// Run runs one rental along path on a fresh bike and measures it.
func (b *Bench) Run(ctx context.Context, path Path) (Measurement, error) {
	return b.RunAfter(ctx, path, 0)
}

// RunAfter runs prior approved rentals on a fresh bike, unmeasured, then one rental
// along path on the same bike, measured: what a rental costs on a bike with a
// history: what its bike commands read must not grow with that history.
func (b *Bench) RunAfter(ctx context.Context, path Path, prior int) (Measurement, error) {
	b.seq++
	bikeID := fmt.Sprintf("bike-%s-%03d", path.code(), b.seq%1000)
	ops, err := b.tokens.Operator(ctx, operator)
	if err != nil {
		return Measurement{}, fmt.Errorf("rentalcost: %w", err)
	}
	if err := b.expect(ctx, ops, http.MethodPut, "/bikes/"+bikeID, nil, http.StatusCreated, nil); err != nil {
		return Measurement{}, err
	}
	if err := b.settle(ctx, "the bike's registration", []string{rental.StreamID(bikeID)}, nil); err != nil {
		return Measurement{}, err
	}
	for range prior {
		if _, err := b.rent(ctx, Approved, bikeID); err != nil {
			return Measurement{}, err
		}
	}
	return b.rent(ctx, path, bikeID)
}

// rent runs one rental along path on bikeID, which is available, and measures it.
// Each rental is its renter's first: a renter of its own, whose stream is empty
// when the request reads it, so that what a rental costs does not depend on the
// rentals measured before it. (A renter's later request also reads the bike stream
// of the renter's previous rental, to know that it has settled: one more strongly
// consistent Query.)
func (b *Bench) rent(ctx context.Context, path Path, bikeID string) (Measurement, error) {
	before, err := b.store.Read(ctx, rental.StreamID(bikeID), 0)
	if err != nil {
		return Measurement{}, err
	}
	b.renters++
	renterID := fmt.Sprintf("renter-%s-%d", path.code(), b.renters)
	// The tokens come from the local issuer, not from DynamoDB: fetched before the
	// count starts all the same, and not counted as API requests.
	renterToken, err := b.tokens.Renter(ctx, renterID)
	if err != nil {
		return Measurement{}, fmt.Errorf("rentalcost: %w", err)
	}
	ops, err := b.tokens.Operator(ctx, operator)
	if err != nil {
		return Measurement{}, fmt.Errorf("rentalcost: %w", err)
	}
	b.counter.Reset()
	b.http = 0
	for _, f := range b.fns {
		f.reset()
	}
	m := Measurement{Path: path}
	for _, r := range before {
		m.BikeStreamBytes += capacity.ItemSize(dynamo.EncodeRecord(r))
	}
	var accepted httpapi.RentalAccepted
	body, _ := json.Marshal(httpapi.RentalRequest{BikeID: bikeID})
	if err := b.expect(ctx, renterToken, http.MethodPost, "/rentals", body, http.StatusAccepted, &accepted); err != nil {
		return m, err
	}
	if accepted.Renter != renterID {
		return m, fmt.Errorf("rentalcost: POST /rentals answered renter %q, want the token's subject %q", accepted.Renter, renterID)
	}
	m.RentalID = accepted.RentalID
	ref := payment.ReferenceFor(m.RentalID)
	// Every stream the rental appends to: the bike's, the payment's, the process's,
	// and the renter's (RentalRequested, appended with BikeRequested in one write).
	streams := []string{rental.StreamID(bikeID), payment.StreamID(ref), rentalpayment.StreamID(m.RentalID), renter.StreamID(renterID)}
	if err := b.settle(ctx, "the payment's preparation", streams, b.status(m.RentalID, rentalview.StatusAwaitingPayment)); err != nil {
		return m, err
	}

	streams, final, err := b.takePath(ctx, path, &m, bikeID, ops, streams)
	if err != nil {
		return m, err
	}
	if err := b.settle(ctx, "the rental's end", streams, b.ended(m.RentalID, final)); err != nil {
		return m, err
	}

	m.Calls = b.counter.Calls()
	m.HTTPRequests = b.http
	m.Functions = map[string]FunctionStats{}
	for name, f := range b.fns {
		m.Functions[name] = f.stats()
	}
	for _, s := range streams {
		records, err := b.store.Read(ctx, s, 0)
		if err != nil {
			return m, err
		}
		if s == streams[0] {
			records = records[len(before):]
		}
		m.Events = append(m.Events, records...)
	}
	if m.Floor, err = b.floor(ctx, m.RentalID, m.Events); err != nil {
		return m, err
	}
	if dl := b.stack.DeadLetters(); len(dl) > 0 {
		return m, fmt.Errorf("rentalcost: %d stream records went to the dead-letter destination", len(dl))
	}
	return m, nil
}

// takePath takes the rental m along path once its payment is prepared: the
// provider's success or failure, the sweep once the payment is overdue, or an
// operator's cancellation, and for an approved rental the bike's return. It
// returns the streams the rental appends to, a provider event's receipt among
// them, and the rental's status at the end.
func (b *Bench) takePath(ctx context.Context, path Path, m *Measurement, bikeID, ops string, streams []string) ([]string, rentalview.Status, error) {
	ref := payment.ReferenceFor(m.RentalID)
	final := rentalview.StatusCancelled
	switch path {
	case Approved:
		receipt, err := b.webhook(ctx, ref, generic.TypeSucceeded, "", payment.StatusConfirmed)
		if err != nil {
			return nil, "", err
		}
		streams = append(streams, receipt)
		if err := b.settle(ctx, "the approval", streams, b.status(m.RentalID, rentalview.StatusApproved)); err != nil {
			return nil, "", err
		}
		if err := b.expect(ctx, ops, http.MethodPost, "/bikes/"+bikeID+"/return", nil, http.StatusOK, nil); err != nil {
			return nil, "", err
		}
		final = rentalview.StatusReturned
	case Rejected:
		receipt, err := b.webhook(ctx, ref, generic.TypeFailed, "insufficient funds", payment.StatusRejected)
		if err != nil {
			return nil, "", err
		}
		streams = append(streams, receipt)
		final = rentalview.StatusRejected
	case TimedOut:
		sum, err := b.sweepWhenOverdue(ctx, ref)
		if err != nil {
			return nil, "", err
		}
		m.Sweep = &sum
	case Cancelled:
		var out httpapi.CancelPaymentResult
		if err := b.expect(ctx, ops, http.MethodPost, "/rentals/"+m.RentalID+"/cancel-payment", nil, http.StatusOK, &out); err != nil {
			return nil, "", err
		}
		if out.Outcome != process.OutcomeCancelled {
			return nil, "", fmt.Errorf("rentalcost: cancel-payment answered %q, want %q", out.Outcome, process.OutcomeCancelled)
		}
	default:
		return nil, "", fmt.Errorf("rentalcost: unknown path %q", path)
	}
	return streams, final, nil
}

// floor computes the least the rental's writes can cost, from what it stored.
func (b *Bench) floor(ctx context.Context, rentalID string, records []eventstore.Record) (Floor, error) {
	f := Floor{Events: len(records)}
	for _, r := range records {
		f.EventUnits += capacity.WriteUnits(capacity.ItemSize(dynamo.EncodeRecord(r)))
	}
	// The payment's row and the rental's process row: each opened with its index
	// entry and settled once, out of the index.
	for _, name := range []string{deadlinekinds.Payment, deadlinekinds.Stuck} {
		k, _ := b.kinds.ByName(name)
		row, err := b.deadlines.item(ctx, k.Key(rentalID))
		if err != nil {
			return f, fmt.Errorf("rentalcost: read the %s row of %s: %w", name, rentalID, err)
		}
		if len(row) == 0 {
			return f, fmt.Errorf("rentalcost: no %s row of %s", name, rentalID)
		}
		f.ProjectionUnits += 2 * capacity.WriteUnits(capacity.ItemSize(row))
		f.IndexUnits += 2 * capacity.WriteUnits(capacity.ItemSize(b.deadlines.entry(row, k)))
	}
	// An approved rental's process row is taken over as its return due: written
	// once more, its index entry moved (removed and put).
	for _, r := range records {
		if r.Type == (rental.RequestApproved{}).EventType() {
			k, _ := b.kinds.ByName(deadlinekinds.Return)
			row, err := b.deadlines.item(ctx, k.Key(rentalID))
			if err != nil {
				return f, fmt.Errorf("rentalcost: read the return row of %s: %w", rentalID, err)
			}
			f.ProjectionUnits += capacity.WriteUnits(capacity.ItemSize(row))
			f.IndexUnits += 2 * capacity.WriteUnits(capacity.ItemSize(b.deadlines.entry(row, k)))
		}
	}
	return f, nil
}

// sweepWhenOverdue waits until the payment is overdue by the scheduler's clock
// (whole seconds) and invokes the sweep with the input EventBridge Scheduler sends.
func (b *Bench) sweepWhenOverdue(ctx context.Context, ref string) (awslambda.Summary, error) {
	records, err := b.store.Read(ctx, payment.StreamID(ref), 0)
	if err != nil {
		return awslambda.Summary{}, err
	}
	if len(records) == 0 || records[0].Type != (payment.PaymentPrepared{}).EventType() {
		return awslambda.Summary{}, fmt.Errorf("rentalcost: payment %s was not prepared", ref)
	}
	prepared := records[0].RecordedAt
	var scheduled time.Time
	err = b.wait(ctx, "the payment to be overdue", func(context.Context) (bool, string, error) {
		scheduled = time.Now().UTC().Truncate(time.Second)
		return scheduled.Add(-PaymentTimeout).After(prepared), "prepared at " + prepared.Format(time.RFC3339Nano), nil
	})
	if err != nil {
		return awslambda.Summary{}, err
	}
	var sum awslambda.Summary
	input := map[string]string{"scheduledTime": scheduled.Format(time.RFC3339)}
	if err := local.Call(ctx, b.fns[FunctionSweep], input, &sum); err != nil {
		return sum, fmt.Errorf("rentalcost: sweep: %w", err)
	}
	if pay, _ := sum.Kind(deadlinekinds.Payment); pay.Found != 1 || pay.Acted != 1 {
		return sum, fmt.Errorf("rentalcost: the sweep found %d and cancelled %d payments, want 1 and 1", pay.Found, pay.Acted)
	}
	return sum, nil
}

// webhook delivers one signed event of the generic provider about the payment ref,
// as the provider does: POST /webhooks/payments with no token, under an event id of
// its own. It requires the payment's status after it to be want, and returns the
// stream of the event's receipt, which the webhook leaves empty when the event
// settles the payment and appends to otherwise.
func (b *Bench) webhook(ctx context.Context, ref, eventType, reason string, want payment.Status) (string, error) {
	eventID := "evt-" + ident.Random(22)
	body, err := json.Marshal(generic.Event{ID: eventID, Type: eventType, PaymentReference: ref, Reason: reason})
	if err != nil {
		return "", err
	}
	hdr := http.Header{webhook.Header: {generic.Sign(webhookSecret, body, time.Now())}}
	var ans httpapi.WebhookAnswer
	if err := b.expectWith(ctx, http.MethodPost, "/webhooks/payments", body, hdr, http.StatusOK, &ans); err != nil {
		return "", err
	}
	if ans.EventID != eventID || ans.PaymentReference != ref || ans.Status != string(want) || ans.Refund != "" || ans.Duplicate {
		return "", fmt.Errorf("rentalcost: POST /webhooks/payments answered %+v, want event %s applied to %s, now %s", ans, eventID, ref, want)
	}
	return command.ReceiptStreamID(generic.Name, eventID), nil
}

// expect sends an API request with the bearer token (a renter's or the operator's)
// and checks its answer.
func (b *Bench) expect(ctx context.Context, token, method, path string, body []byte, want int, out any) error {
	return b.expectWith(ctx, method, path, body, http.Header{"Authorization": {auth.Bearer(token)}}, want, out)
}

func (b *Bench) expectWith(ctx context.Context, method, path string, body []byte, hdr http.Header, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	b.http++
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("rentalcost: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("rentalcost: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("rentalcost: %s %s: status %d, want %d: %.300s", method, path, resp.StatusCode, want, got)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			return fmt.Errorf("rentalcost: %s %s: %w", method, path, err)
		}
	}
	return nil
}

// condition reports whether something holds, and what was seen when it does not.
type condition func(context.Context) (bool, string, error)

func (b *Bench) status(rentalID string, want rentalview.Status) condition {
	return func(ctx context.Context) (bool, string, error) {
		v, err := rentalview.Load(ctx, b.store, rentalID)
		if err != nil {
			return false, "", err
		}
		return v.Status == want, "status " + string(v.Status), nil
	}
}

// ended holds once the rental has its final status, its process has completed and
// its payment's row is a settled marker.
func (b *Bench) ended(rentalID string, want rentalview.Status) condition {
	status := b.status(rentalID, want)
	return func(ctx context.Context) (bool, string, error) {
		if ok, seen, err := status(ctx); !ok || err != nil {
			return ok, seen, err
		}
		records, err := b.store.Read(ctx, rentalpayment.StreamID(rentalID), 0)
		if err != nil {
			return false, "", err
		}
		if n := len(records); n == 0 || !rentalpayment.Ends(records[n-1].Type) {
			return false, "the process has not completed", nil
		}
		k, _ := b.kinds.ByName(deadlinekinds.Payment)
		row, err := b.deadlines.item(ctx, k.Key(rentalID))
		if err != nil {
			return false, "", err
		}
		if !b.deadlines.settled(row) {
			return false, "the payment's row is not settled", nil
		}
		return true, "", nil
	}
}

// settle waits until cond holds and both stream consumers have handled every record
// of streams that wakes them (eventfilter: each is delivered only the types it acts
// on, as Lambda's event filtering does), so that nothing the rental set off is
// still running.
func (b *Bench) settle(ctx context.Context, what string, streams []string, cond condition) error {
	return b.wait(ctx, what, func(ctx context.Context) (bool, string, error) {
		if cond != nil {
			if ok, seen, err := cond(ctx); !ok || err != nil {
				return ok, seen, err
			}
		}
		// What the consumers had handled first, then the streams: a record handled
		// by then had its reaction's own appends already in the streams.
		handled := map[string]map[recordKey]bool{
			FunctionProcess: b.fns[FunctionProcess].handledSet(), FunctionProjector: b.fns[FunctionProjector].handledSet(),
		}
		for _, s := range streams {
			records, err := b.store.Read(ctx, s, 0)
			if err != nil {
				return false, "", err
			}
			for _, r := range records {
				for name, set := range handled {
					if eventfilter.Wakes(name, r.Type) && !set[recordKey{r.StreamID, r.Version}] {
						return false, fmt.Sprintf("the %s has not handled %s version %d", name, r.StreamID, r.Version), nil
					}
				}
			}
		}
		return true, "", nil
	})
}

func (b *Bench) wait(ctx context.Context, what string, cond condition) error {
	deadline := time.Now().Add(b.opts.Wait)
	for {
		ok, seen, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("rentalcost: waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rentalcost: gave up waiting for %s after %s; last seen: %s", what, b.opts.Wait, seen)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return fmt.Errorf("rentalcost: waiting for %s: the local stack stopped: %v", what, b.runErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type recordKey struct {
	stream  string
	version int64
}

// tracked wraps a function's invoker and notes its invocations and, for a stream
// consumer, which records it has handled (those before the first reported failure
// of each batch).
type tracked struct {
	inner  local.Invoker
	stream bool

	mu          sync.Mutex
	invocations int
	records     int
	failures    int
	busy        time.Duration
	handled     map[recordKey]bool
}

var _ local.Invoker = (*tracked)(nil)

func (t *tracked) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	start := time.Now()
	out, err := t.inner.Invoke(ctx, payload)
	took := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.invocations++
	t.busy += took
	if !t.stream {
		return out, err
	}
	var ev events.DynamoDBEvent
	if json.Unmarshal(payload, &ev) != nil {
		return out, err
	}
	t.records += len(ev.Records)
	failed := ""
	var resp events.DynamoDBEventResponse
	if err != nil || json.Unmarshal(out, &resp) != nil {
		t.failures++
		return out, err
	}
	if len(resp.BatchItemFailures) > 0 {
		t.failures++
		failed = resp.BatchItemFailures[0].ItemIdentifier
	}
	for _, rec := range ev.Records {
		if failed != "" && rec.Change.SequenceNumber == failed {
			break
		}
		if k, ok := keyOfImage(rec.Change.NewImage); ok {
			t.handled[k] = true
		}
	}
	return out, err
}

func keyOfImage(image map[string]events.DynamoDBAttributeValue) (recordKey, bool) {
	s, ok1 := image[schema.EventsStreamID]
	v, ok2 := image[schema.EventsVersion]
	if !ok1 || !ok2 || s.DataType() != events.DataTypeString || v.DataType() != events.DataTypeNumber {
		return recordKey{}, false
	}
	n, err := v.Int64()
	if err != nil {
		return recordKey{}, false
	}
	return recordKey{s.String(), n}, true
}

func (t *tracked) handledSet() map[recordKey]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[recordKey]bool, len(t.handled))
	for k := range t.handled {
		out[k] = true
	}
	return out
}

func (t *tracked) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.invocations, t.records, t.failures, t.busy = 0, 0, 0, 0
}

func (t *tracked) stats() FunctionStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return FunctionStats{Invocations: t.invocations, Records: t.records, Failures: t.failures, Busy: t.busy}
}
