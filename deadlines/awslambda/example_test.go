package awslambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/memory"
)

// orderKinds declares an order not confirmed within 15 minutes of being placed:
// send cancels it.
func orderKinds(send deadlines.Command) deadlines.Kinds {
	return deadlines.MustKinds(deadlines.Kind{
		Name:    "unconfirmed-order",
		After:   15 * time.Minute,
		Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}},
		Work:    deadlines.Send{Command: send},
	})
}

// The projector's Lambda: each event of the orders' table stream is applied to the
// projection of the deadlines, which keeps the orders not yet confirmed. The
// orders' table keeps one item per event, so Items decodes its stream.
func ExampleProjector() {
	decode, err := awslambda.Items{Stream: "stream", Position: "position", Type: "type", At: "at", Data: "data"}.Decoder()
	if err != nil {
		panic(err) // in a Lambda's main: log.Fatal, refusing to start
	}
	kinds := orderKinds(nil)
	projection := memory.New(kinds, 1) // the DynamoDB table's projection in a service
	placed := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		insert(deadlines.Record{Stream: "order-17", Position: 1, Type: "OrderPlaced", At: placed}, 1),
		insert(deadlines.Record{Stream: "order-18", Position: 1, Type: "OrderPlaced", At: placed.Add(time.Minute)}, 2),
		insert(deadlines.Record{Stream: "order-17", Position: 2, Type: "OrderConfirmed", At: placed.Add(2 * time.Minute)}, 3),
	}}

	handler := awslambda.Projector(projection, decode,
		awslambda.Types("OrderPlaced", "OrderConfirmed", "OrderCancelled"),
		awslambda.Logger(slog.New(slog.DiscardHandler)))
	// In the Lambda's main: lambda.Start(handler).
	resp, err := handler(context.Background(), batch)

	fmt.Println("records to deliver again:", len(resp.BatchItemFailures), err)
	due, _ := deadlines.List(context.Background(), projection, kinds, deadlines.Query{Limit: 10})
	for _, row := range due.Rows {
		fmt.Println(row.Kind, row.Subject, "due", row.Due.Format(time.Kitchen))
	}
	// Output:
	// records to deliver again: 0 <nil>
	// unconfirmed-order order-18 due 9:16AM
}

// The sweep's Lambda, invoked by an EventBridge Scheduler schedule every minute:
// the orders overdue as of the scheduled time are sent their command.
func ExampleSweep() {
	cancel := deadlines.CommandFunc(func(_ context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
		fmt.Println("cancel", row.Subject, "for", cause)
		return deadlines.Acted, nil
	})
	kinds := orderKinds(cancel)
	index := memory.New(kinds, 1) // the DynamoDB table in a service
	placed := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	for _, r := range []deadlines.Record{
		{Stream: "order-18", Position: 1, Type: "OrderPlaced", At: placed},                       // due 9:15
		{Stream: "order-19", Position: 1, Type: "OrderPlaced", At: placed.Add(10 * time.Minute)}, // due 9:25
	} {
		if err := index.Apply(context.Background(), r); err != nil {
			panic(err)
		}
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: index, Kinds: kinds})
	if err != nil {
		panic(err)
	}
	clock := func() time.Time { return placed.Add(30 * time.Minute) }

	handler := awslambda.Sweep(sweeper, awslambda.Clock(clock), awslambda.Logger(slog.New(slog.DiscardHandler)))
	// In the Lambda's main: lambda.Start(handler).
	sum, err := handler(context.Background(), json.RawMessage(`{"scheduledTime": "2026-05-04T09:20:00Z"}`))

	out, _ := json.Marshal(sum)
	fmt.Println(string(out), err)
	// Output:
	// cancel order-18 for sweep:2026-05-04T09:20:00Z
	// {"now":"2026-05-04T09:20:00Z","incomplete":false,"kinds":[{"kind":"unconfirmed-order","found":1,"waiting":0,"acted":1,"declined":0,"nothingToDo":0,"failed":0,"left":0,"itemsRead":1,"oldestOverdueMs":300000}]} <nil>
}

// A table of one item per event, keyed by the order and a sequence number, with
// the time in milliseconds: Items names its attributes, and its decoder reads
// each INSERT of the table's stream as a record. A stream record of another kind
// is no event; an event that does not decode is a corrupt record.
func ExampleItems_Decoder() {
	decode, err := awslambda.Items{Stream: "orderId", Position: "seq", Type: "eventType", At: "atMs", Data: "body"}.Decoder()
	if err != nil {
		fmt.Println(err)
		return
	}
	placed := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{NewImage: map[string]events.DynamoDBAttributeValue{
		"orderId":   events.NewStringAttribute("order-17"),
		"seq":       events.NewNumberAttribute("1"),
		"eventType": events.NewStringAttribute("OrderPlaced"),
		"atMs":      events.NewNumberAttribute("1777885200000"),
		"body":      events.NewStringAttribute(`{"total":1200}`),
	}}}
	r, ok, err := decode(placed)
	fmt.Println(r.Stream, r.Position, r.Type, r.At.Format(time.RFC3339), string(r.Data), ok, err)

	placed.Change.NewImage["seq"] = events.NewStringAttribute("one")
	_, ok, err = decode(placed)
	fmt.Println(ok, errors.Is(err, deadlines.ErrCorruptRecord))
	// Output:
	// order-17 1 OrderPlaced 2026-05-04T09:00:00Z {"total":1200} true <nil>
	// false true
}
