package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

// hangsOn is a provider that never answers for one payment reference and answers
// at once for every other, as the generic provider does.
type hangsOn struct {
	generic.Provider
	reference string
}

func (p hangsOn) CreatePayment(ctx context.Context, reference string, amount int64, currency string) (payment.Created, error) {
	if reference == p.reference {
		<-ctx.Done()
		return payment.Created{}, ctx.Err()
	}
	return p.Provider.CreatePayment(ctx, reference, amount, currency)
}

// TestAProviderThatNeverAnswersFailsOnlyItsRecord runs a batch of three rentals
// through the process function's handler (awslambda.Stream over
// dynamo.StreamRecord, the process given the store's records by wiring.Handle),
// whose provider never answers for the second: the provider call is abandoned
// after its bound and that record alone fails; the other rentals' processes
// start, and the batch is answered before the invocation's deadline.
func TestAProviderThatNeverAnswersFailsOnlyItsRecord(t *testing.T) {
	batch := bikeRequestedBatch(t, 3)
	rentals := make([]string, 3)
	for i, rec := range batch.Records {
		r, err := dynamo.DecodeImage(rec.Change.NewImage)
		if err != nil {
			t.Fatal(err)
		}
		rentals[i] = rentalOf(t, r)
	}
	store := eventstore.NewMemory()
	provider := hangsOn{reference: payment.ReferenceFor(rentals[1])}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	p, err := process.New(process.Config{Store: store, Commands: command.New(store, command.WithProvider(provider), command.WithProviderTimeout(50*time.Millisecond)),
		Price: price, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// The invocation's deadline is far enough that the batch's own margin would
	// end the call only seconds later, with another error than the provider's bound.
	ctx, cancel := context.WithTimeout(context.Background(), awslambda.DefaultStreamMargin+3*time.Second)
	defer cancel()

	resp, err := awslambda.Stream(dynamo.StreamRecord, streamfn.Handle(p.Handle), awslambda.Concurrency(3), awslambda.Logger(logger))(ctx, batch)

	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != batch.Records[1].Change.SequenceNumber {
		t.Errorf("failures %v (%v), want exactly the second record's", resp.BatchItemFailures, err)
	}
	for i, id := range rentals {
		records, err := store.Read(context.Background(), rentalpayment.StreamID(id), 0)
		if err != nil {
			t.Fatal(err)
		}
		if started := len(records) > 0; started != (i != 1) {
			t.Errorf("rental %d: process started %v", i, started)
		}
	}
	if !strings.Contains(logs.String(), command.ErrProviderTimeout.Error()) {
		t.Errorf("the failure is not the provider's timeout:\n%s", logs.String())
	}
}

func rentalOf(t *testing.T, r eventstore.Record) string {
	t.Helper()
	var e rental.BikeRequested
	if err := json.Unmarshal(r.Data, &e); err != nil {
		t.Fatal(err)
	}
	return e.RentalID
}

// BenchmarkHandleBatch measures one stream batch of 100 BikeRequested records, as
// Lambda delivers them, through the process function's handler against the
// in-memory store (the projector, the stream's other consumer, needs DynamoDB and
// is measured by nothing here):
//
//	go test -run '^$' -bench HandleBatch -benchmem ./internal/app/process/
//
// decode-only runs a handler that does nothing, which leaves the cost of turning
// images into records. process/first-delivery starts 100 rental-payment processes
// on an empty store each time (each one reads its stream, prepares a payment and
// records that it did); process/redelivery delivers the same batch again to a
// store where every process has started, which is what Lambda's retries cost. Each
// runs one record at a time (concurrency=1) and at the default concurrency: on the
// in-memory store nothing waits, so the difference is what the lanes cost.
func BenchmarkHandleBatch(b *testing.B) {
	const size = 100
	batch := bikeRequestedBatch(b, size)
	logger := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	newProcess := func(b *testing.B) *process.Process {
		store := eventstore.NewMemory()
		p, err := process.New(process.Config{Store: store, Commands: command.New(store, command.WithProvider(generic.Provider{})), Price: price, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	for _, concurrency := range []int{1, awslambda.DefaultConcurrency} {
		handle := func(b *testing.B, h func(context.Context, eventstore.Record) error) {
			resp, err := awslambda.Stream(dynamo.StreamRecord, streamfn.Handle(h), awslambda.Concurrency(concurrency), awslambda.Logger(logger))(ctx, batch)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				b.Fatalf("batch failed at %v (%v)", resp.BatchItemFailures, err)
			}
		}
		b.Run(fmt.Sprintf("decode-only/records=%d/concurrency=%d", size, concurrency), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				handle(b, func(context.Context, eventstore.Record) error { return nil })
			}
		})
		b.Run(fmt.Sprintf("process/first-delivery/records=%d/concurrency=%d", size, concurrency), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				handle(b, newProcess(b).Handle)
			}
		})
		b.Run(fmt.Sprintf("process/redelivery/records=%d/concurrency=%d", size, concurrency), func(b *testing.B) {
			p := newProcess(b)
			handle(b, p.Handle)
			b.ReportAllocs()
			for b.Loop() {
				handle(b, p.Handle)
			}
		})
	}
}

// bikeRequestedBatch returns n BikeRequested records of n bikes, each the bike's
// second event, as the Events table's stream delivers them to Lambda.
func bikeRequestedBatch(b testing.TB, n int) events.DynamoDBEvent {
	b.Helper()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, n)}
	for i := range n {
		bikeID := "bike-" + strconv.Itoa(i)
		rentalID := rental.NewRentalID(bikeID, fmt.Sprintf("%022d", i))
		data, err := json.Marshal(rental.BikeRequested{BikeID: bikeID, Renter: "renter-" + strconv.Itoa(i), RentalID: rentalID})
		if err != nil {
			b.Fatal(err)
		}
		ev.Records[i] = dynamo.EventRecord(eventstore.Record{StreamID: rental.StreamID(bikeID), Version: 2, Event: eventstore.Event{
			ID: fmt.Sprintf("evt-%d", i), Type: "BikeRequested", Data: data,
			Tags:       []string{"bike:" + bikeID, "rental:" + rentalID},
			RecordedAt: at, CorrelationID: rentalID, CausationID: "request:" + strconv.Itoa(i),
		}}, fmt.Sprintf("%021d", i+1))
	}
	return ev
}
