// Package deadline is all the orders need for their deadlines: the two kinds, the
// layout of the Orders table's items its stream is decoded by, and the two Lambda handlers built from
// the environment (ORDERS_TABLE, DEADLINES_TABLE, and the AWS SDK's own).
package deadline

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/examples/orders"
)

// Kinds are the orders' deadlines: an order not confirmed 15 minutes after it was
// placed is cancelled, and an invoice unpaid 7 days after it was issued gets one
// reminder; s receives the commands.
func Kinds(s *orders.Store) deadlines.Kinds {
	order := deadlines.Kind{Name: "unconfirmed-order", After: 15 * time.Minute, Work: deadlines.Send{Command: receiver(s.Cancel)},
		Changes: deadlines.Events{Opens: []string{orders.OrderPlaced}, Settles: []string{orders.OrderConfirmed, orders.OrderCancelled}}}
	invoice := deadlines.Kind{Name: "unpaid-invoice", After: 7 * 24 * time.Hour, Work: deadlines.Send{Command: receiver(s.Remind)},
		Changes: deadlines.Events{Opens: []string{orders.InvoiceIssued}, Settles: []string{orders.InvoicePaid, orders.ReminderSent}}}
	return deadlines.MustKinds(order, invoice)
}

// receiver is a command of the store, given an overdue row's subject: the order's
// or the invoice's id.
type receiver func(ctx context.Context, id, cause string) (deadlines.Outcome, error)

// Send implements deadlines.Command.
func (r receiver) Send(ctx context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
	return r(ctx, row.Subject, cause)
}

// Items is how the Orders table keeps its events, one item each (orders.Store), for
// awslambda.Items to decode its stream.
var Items = awslambda.Items{Stream: orders.AttrID, Position: orders.AttrSeq, Type: orders.AttrType, At: orders.AttrAt, Data: orders.AttrData}

// Handlers are the two Lambda functions' handlers.
type Handlers struct {
	Projector func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	Sweep     func(context.Context, json.RawMessage) (awslambda.Summary, error)
}

// New builds both handlers from the environment, over one Deadlines table whose
// shard count it checks.
func New(ctx context.Context) (Handlers, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	db := dynamodb.NewFromConfig(cfg)
	store, errStore := orders.NewStore(db, os.Getenv("ORDERS_TABLE"))
	kinds := Kinds(store)
	table, errTable := dynamo.New(db, os.Getenv("DEADLINES_TABLE"), kinds)
	decode, errDecode := Items.Decoder()
	if err = errors.Join(err, errStore, errTable, errDecode); err != nil {
		return Handlers{}, err
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: table, Kinds: kinds})
	return Handlers{awslambda.Projector(table, decode), awslambda.Sweep(sweeper)}, errors.Join(err, table.CheckShards(ctx))
}

// Main starts the handler that handler picks, and ends the process if New fails.
func Main(handler func(Handlers) any) {
	h, err := New(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(handler(h))
}
