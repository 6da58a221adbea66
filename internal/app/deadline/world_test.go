package deadline_test

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

// world is an isolated table set on the emulator, with the process and the projector
// fed from the Events table's real stream, as their Lambda functions are: a test that
// sweeps acts on every overdue row it finds, so it must own its tables.
type world struct {
	t          testing.TB
	client     *dynamodb.Client
	store      *dynamo.Store
	commands   *command.Handler
	process    *process.Process
	projection *deadlinetable.Projection
	pending    string
	events     string
	pollers    []*streampoll.Poller
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

// newWorld returns a world whose commands are configured by opts (the generic
// provider by default).
func newWorld(t testing.TB, shards int, opts ...command.Option) *world {
	t.Helper()
	client, eventsTable := emulatortest.EventsTable(t)
	pending := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
	if _, err := client.UpdateTimeToLive(ctx, schema.DeadlinesTTL(pending)); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, client: client, store: dynamo.New(client, eventsTable), pending: pending, events: eventsTable, processLog: &lockedBuffer{}}
	w.commands = command.New(w.store, append([]command.Option{command.WithProvider(generic.Provider{})}, opts...)...)
	var err error
	w.process, err = process.New(process.Config{Store: w.store, Commands: w.commands, Price: process.Price{Amount: 1500, Currency: "EUR"},
		Logger: slog.New(slog.NewJSONHandler(w.processLog, nil)), MetricsService: "bikerental-test", Metrics: emf.NewWriter(w.processLog)})
	if err != nil {
		t.Fatal(err)
	}
	if w.projection, err = deadlinetable.New(client, pending, shards, deadlinetable.DefaultMarkerTTL); err != nil {
		t.Fatal(err)
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(eventsTable)})
	if err != nil {
		t.Fatal(err)
	}
	streams := dynamodbstreams.NewFromConfig(emulatortest.Config(t))
	logger := slog.New(slog.DiscardHandler)
	for _, h := range []streambatch.Handler{w.process.Handle, w.projection.Apply} {
		w.pollers = append(w.pollers, &streampoll.Poller{
			Client: streams, StreamARN: aws.ToString(desc.Table.LatestStreamArn), Logger: logger,
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return streambatch.HandleBatch(ctx, ev, h, streambatch.Options{Logger: logger}), nil
			},
		})
	}
	return w
}

// pumpUntil feeds the stream to the process and the projector until cond holds.
func (w *world) pumpUntil(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
		var wg sync.WaitGroup
		for _, p := range w.pollers {
			wg.Add(1)
			go func() { defer wg.Done(); p.Poll(ctx) }()
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

func (w *world) listed(rentalID string) bool {
	w.t.Helper()
	rows, err := w.projection.List(ctx, 1000)
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

func (w *world) bikeStatus(bikeID string) rental.Status {
	w.t.Helper()
	b, _, err := w.commands.LoadBike(ctx, bikeID)
	if err != nil {
		w.t.Fatal(err)
	}
	return b.Status
}

func (w *world) sweeper(c deadlinekinds.Canceller) *sweep.Sweep {
	if c == nil {
		c = w.process
	}
	policy := deadline.Policy{Timeout: 15 * time.Minute}
	return over(w.projection, c, policy, nil, sweep.Sweep{Logger: slog.New(slog.DiscardHandler)})
}

// index is what a sweep reads: the kinds' lanes, the owed cancellations' and the
// parked records'.
type index interface {
	deadline.Index
	owed.Rows
	parked.Rows
}

// over returns s, its parts (made if nil) sweeping idx for the service's kinds
// under policy p, their commands sent to c, and the stuck rentals' to r if it is
// not nil; a part without a logger logs to s's.
func over(idx index, c deadlinekinds.Canceller, p deadline.Policy, r deadlinekinds.StuckRepairer, s sweep.Sweep) *sweep.Sweep {
	if s.Deadlines == nil {
		s.Deadlines = &deadline.Sweeper{}
	}
	if s.Owed == nil {
		s.Owed = &owed.Retries{}
	}
	if s.Parked == nil {
		s.Parked = &parked.Redelivery{}
	}
	s.Deadlines.Index, s.Deadlines.Kinds = idx, deadlinekinds.MustDeclare(p, deadlinekinds.Receivers{Canceller: c, Repairer: r})
	s.Owed.Rows, s.Parked.Rows = idx, idx
	s.Deadlines.Logger = cmp.Or(s.Deadlines.Logger, s.Logger)
	s.Owed.Logger = cmp.Or(s.Owed.Logger, s.Logger)
	s.Parked.Logger = cmp.Or(s.Parked.Logger, s.Logger)
	return &s
}

// otherReads is how many items a sweep read but for the payments' lane: the
// reads that find the stuck rentals, the returns due, the owed cancellations and
// the parked records (the summary's stuckItemsRead before kinds).
func otherReads(sum sweep.Summary) int {
	n := sum.Owed.ItemsRead + sum.Parked.ItemsRead
	for _, k := range sum.Kinds {
		if k.Kind != deadlinekinds.Payment {
			n += k.ItemsRead
		}
	}
	return n
}
