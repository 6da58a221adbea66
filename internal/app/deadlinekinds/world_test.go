package deadlinekinds_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

// world is an isolated table set on the emulator (an Events table and a Deadlines
// table, the deadlines module's, over the service's kinds), with the process and
// the projector fed from the Events table's real stream as their functions are:
// through awslambda.Stream over dynamo.StreamRecord, the process given the
// store's records by wiring.Handle and the projector the table itself
// (awslambda.Projector). A test that sweeps acts on every overdue row it finds, so
// it must own its tables.
type world struct {
	t        testing.TB
	client   *dynamodb.Client
	store    *dynamo.Store
	commands *command.Handler
	process  *process.Process
	// kinds are the kinds as every writer declares them (wiring.DeadlineProjection:
	// the default policy, no receivers).
	kinds     deadlines.Kinds
	table     *deadlinetable.Table
	listing   deadlinekinds.Listing
	deadlines string
	events    string
	pollers   []*streampoll.Poller
	// processLog is what the process logged (its metrics among it).
	processLog *lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newWorld returns a world whose Deadlines table spreads each kind's rows over
// shards, and whose commands are configured by opts (the generic provider by
// default). Its pollers deliver a hundred records a batch and park nothing.
func newWorld(t testing.TB, shards int, opts ...command.Option) *world {
	t.Helper()
	client, eventsTable := emulatortest.EventsTable(t)
	w := &world{t: t, client: client, store: dynamo.New(client, eventsTable), events: eventsTable, processLog: &lockedBuffer{}}
	w.deadlines = newDeadlinesTable(t, client)
	w.commands = command.New(w.store, append([]command.Option{command.WithProvider(generic.Provider{})}, opts...)...)
	var err error
	w.process, err = process.New(process.Config{Store: w.store, Commands: w.commands, Price: process.Price{Amount: 1500, Currency: "EUR"},
		Logger: slog.New(slog.NewJSONHandler(w.processLog, nil)), MetricsService: "bikerental-test", Metrics: emf.NewWriter(w.processLog)})
	if err != nil {
		t.Fatal(err)
	}
	w.kinds = deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})
	if w.table, err = deadlinetable.New(client, w.deadlines, w.kinds, deadlinetable.WithShards(shards)); err != nil {
		t.Fatal(err)
	}
	// As the projector function does before its first batch.
	if err := w.table.CheckShards(ctx); err != nil {
		t.Fatal(err)
	}
	w.listing = deadlinekinds.Listing{Index: w.table, Kinds: w.kinds}
	w.pollers = w.streamPollers(map[string]awslambda.Handler{eventfilter.Process: streamfn.Handle(w.process.Handle)}, 0, false)
	return w
}

// newDeadlinesTable creates a fresh Deadlines table, with its TTL on, deleted when
// the test ends.
func newDeadlinesTable(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	name := emulatortest.CreateTable(t, client, deadlinetable.Definition, "deadlines")
	if _, err := client.UpdateTimeToLive(ctx, deadlinetable.TTL(name)); err != nil {
		t.Fatal(err)
	}
	return name
}

// streamPollers returns a poller per consumer on w's Events table's stream, as its
// event source mapping (filtered to the consumer's types, batchSize records a batch,
// the default if 0), delivering to the consumer's function's handler as the
// function builds it (awslambda.Stream over dynamo.StreamRecord with
// wiring.StreamBatch's options): handlers[consumer], or else the process's, or the
// table's projector. With park, what a handler cannot handle is parked in its
// parking stream of the Events table (wiring.Park), as the functions do.
func (w *world) streamPollers(handlers map[string]awslambda.Handler, batchSize int, park bool) []*streampoll.Poller {
	w.t.Helper()
	desc, err := w.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(w.events)})
	if err != nil {
		w.t.Fatal(err)
	}
	streams := dynamodbstreams.NewFromConfig(emulatortest.Config(w.t))
	logger := slog.New(slog.DiscardHandler)
	var pollers []*streampoll.Poller
	for _, consumer := range eventfilter.Consumers() {
		opts, err := streamfn.Batch(func(string) string { return "" }, consumer, logger)
		if err != nil {
			w.t.Fatal(err)
		}
		if park {
			opts = append(opts, awslambda.Park(streamfn.Park(w.store, consumer)))
		}
		handler := awslambda.Projector(w.table, dynamo.StreamRecord, opts...)
		if h, ok := handlers[consumer]; ok {
			handler = awslambda.Stream(dynamo.StreamRecord, h, opts...)
		}
		pollers = append(pollers, &streampoll.Poller{
			Client: streams, StreamARN: aws.ToString(desc.Table.LatestStreamArn), Logger: logger,
			BatchSize: batchSize, Types: eventfilter.Types(consumer), Handler: handler,
		})
	}
	return pollers
}

// pumpUntil feeds the stream to w's consumers until cond holds.
func (w *world) pumpUntil(what string, cond func() bool) {
	w.t.Helper()
	pump(w.t, w.pollers, 30*time.Second, what, cond)
}

// pump polls every poller at once, again and again, until cond holds, failing
// after within.
func pump(t testing.TB, pollers []*streampoll.Poller, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		var wg sync.WaitGroup
		for _, p := range pollers {
			wg.Go(func() { p.Poll(ctx) })
		}
		wg.Wait()
	}
}

// request registers a bike and asks for it; the process then prepares the payment.
func (w *world) request(bikeID string) string {
	w.t.Helper()
	rentalID := rental.NewRentalID(bikeID, "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: bikeID}, rental.RequestBike{BikeID: bikeID, Renter: "renter-" + bikeID, RentalID: rentalID}} {
		if _, err := w.commands.Bike(ctx, c, command.Meta{}); err != nil {
			w.t.Fatal(err)
		}
	}
	return rentalID
}

// listed reports whether the rental's payment is outstanding, as the pending list
// reads it.
func (w *world) listed(rentalID string) bool {
	w.t.Helper()
	rows, _, err := w.listing.Payments(ctx, false, time.Time{}, deadlines.MaxLimit)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range rows {
		if r.RentalID == rentalID {
			return true
		}
	}
	return false
}

// row returns the outstanding row of the kind named kind about subject.
func (w *world) row(kind, subject string) (deadlines.Row, bool) {
	w.t.Helper()
	k, _ := w.kinds.ByName(kind)
	r, ok, err := w.table.Row(ctx, k, subject)
	if err != nil {
		w.t.Fatal(err)
	}
	return r, ok
}

func (w *world) bikeStatus(bikeID string) rental.Status {
	w.t.Helper()
	b, _, err := w.commands.LoadBike(ctx, bikeID)
	if err != nil {
		w.t.Fatal(err)
	}
	return b.Status
}

// apply projects records into w's table, as the projector does.
func (w *world) apply(recs ...eventstore.Record) {
	w.t.Helper()
	applyTo(w.t, w.table, recs...)
}

// sweeper returns the service's sweeper over w's table: its kinds declared under
// the default policy, their commands sent to r, the payments' cancelled by w's
// process unless r names another canceller.
func (w *world) sweeper(r deadlinekinds.Receivers) *deadlines.Sweeper {
	w.t.Helper()
	if r.Canceller == nil {
		r.Canceller = w.process
	}
	return newSweeper(w.t, w.table, deadlinekinds.Policy{}, r, 0)
}

// repairer delivers records again to w's consumers, as the sweep function's does
// (sweepfn): the process's handler, given as process, and the table.
func (w *world) repairer(process repair.Handler) *repair.Repairer {
	return &repair.Repairer{Store: w.store, Consumers: map[string]repair.Handler{
		eventfilter.Process:   process,
		eventfilter.Projector: func(ctx context.Context, r eventstore.Record) error { return w.table.Apply(ctx, dynamo.RecordOf(r)) },
	}}
}

// redeliverer is the redelivery kind's command as the sweep function has it, over
// w's parking streams, delivering through rep.
func (w *world) redeliverer(rep *repair.Repairer) parked.Redeliver {
	return parked.Redeliver{Store: w.store, Redeliverer: rep, NewID: ident.UUID, Known: eventfilter.Known}
}
