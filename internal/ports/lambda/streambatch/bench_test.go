package streambatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

// BenchmarkHandleBatch measures one stream batch of 100 BikeRequested records, as
// Lambda delivers them, against the in-memory store (the projector, the stream's
// other consumer, needs DynamoDB and is measured by nothing here):
//
//	go test -run '^$' -bench HandleBatch -benchmem ./internal/ports/lambda/streambatch/
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
		p, err := process.New(process.Config{Store: store, Commands: command.New(store, command.WithProvider(generic.Provider{})),
			Price: process.Price{Amount: 1500, Currency: "EUR"}, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}

	for _, concurrency := range []int{1, streambatch.DefaultConcurrency} {
		opts := streambatch.Options{Concurrency: concurrency, Logger: logger}
		handle := func(b *testing.B, h streambatch.Handler) {
			resp := streambatch.HandleBatch(ctx, batch, h, opts)
			if len(resp.BatchItemFailures) != 0 {
				b.Fatalf("batch failed at %v", resp.BatchItemFailures)
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
		item := dynamo.EncodeRecord(eventstore.Record{StreamID: rental.StreamID(bikeID), Version: 2, Event: eventstore.Event{
			ID: fmt.Sprintf("evt-%d", i), Type: "BikeRequested", Data: data,
			Tags:       []string{"bike:" + bikeID, "rental:" + rentalID},
			RecordedAt: at, CorrelationID: rentalID, CausationID: "request:" + strconv.Itoa(i),
		}})
		image := make(map[string]events.DynamoDBAttributeValue, len(item))
		for name, v := range item {
			image[name] = lambdaValue(b, v)
		}
		seq := fmt.Sprintf("%021d", i+1)
		ev.Records[i] = events.DynamoDBEventRecord{
			AWSRegion: "eu-west-1", EventID: "id-" + seq, EventName: "INSERT", EventSource: "aws:dynamodb", EventVersion: "1.1",
			Change: events.DynamoDBStreamRecord{NewImage: image, SequenceNumber: seq, StreamViewType: "NEW_IMAGE"},
		}
	}
	return ev
}

// lambdaValue converts the attribute values an Events item holds into Lambda's form.
func lambdaValue(b testing.TB, v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			list[i] = lambdaValue(b, e)
		}
		return events.NewListAttribute(list)
	}
	b.Fatalf("an Events item holds no %T", v)
	return events.DynamoDBAttributeValue{}
}
