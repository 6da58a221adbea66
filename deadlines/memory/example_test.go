package memory_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"
)

// serviceKinds is how a service declares its kinds: from its commands, so that a
// test can give it commands of its own.
func serviceKinds(cancel, remind deadlines.Command) deadlines.Kinds {
	return deadlines.MustKinds(
		deadlines.Kind{
			Name:    "unconfirmed-order",
			After:   15 * time.Minute,
			Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}},
			Work:    deadlines.Send{Command: cancel},
		},
		deadlines.Kind{
			Name:    "unpaid-invoice",
			After:   7 * 24 * time.Hour,
			Changes: deadlines.Events{Opens: []string{"InvoiceIssued"}, Settles: []string{"InvoicePaid", "ReminderSent"}},
			Work:    deadlines.Send{Command: remind},
		},
	)
}

// receiver stands in for the service's command handlers in a test: it notes each
// command and writes the record the handler would, which the projector applies.
type receiver struct {
	mu    sync.Mutex
	index *memory.Index
	sent  []string
}

func (r *receiver) command(name, records string) deadlines.Command {
	return deadlines.CommandFunc(func(ctx context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sent = append(r.sent, name+" "+row.Subject)
		settled := deadlines.Record{Stream: row.Subject, Position: 99, Type: records, At: row.Due}
		return deadlines.Acted, r.index.Apply(ctx, settled)
	})
}

// Testing a service's kinds without AWS: the index in memory projects records
// exactly as the DynamoDB table does, so a unit test can feed it the service's
// events and sweep at the times it chooses. Here: an order confirmed in time is
// never cancelled, one that is not is cancelled once, and an invoice gets its
// reminder once, after seven days.
func Example_testingAServicesKinds() {
	ctx := context.Background()
	got := &receiver{}
	kinds := serviceKinds(got.command("CancelOrder", "OrderCancelled"), got.command("SendReminder", "ReminderSent"))
	index := memory.New(kinds, 4)
	got.index = index
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, r := range []deadlines.Record{
		{Stream: "order-1", Position: 1, Type: "OrderPlaced", At: day},
		{Stream: "order-1", Position: 2, Type: "OrderConfirmed", At: day.Add(14 * time.Minute)},
		{Stream: "order-2", Position: 1, Type: "OrderPlaced", At: day},
		{Stream: "invoice-1", Position: 1, Type: "InvoiceIssued", At: day},
	} {
		if err := index.Apply(ctx, r); err != nil {
			fmt.Println(err)
			return
		}
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: index, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, after := range []time.Duration{15 * time.Minute, 16 * time.Minute, 7*24*time.Hour + time.Second, 8 * 24 * time.Hour} {
		if _, err := sweeper.Sweep(ctx, day.Add(after), "test"); err != nil {
			fmt.Println(err)
			return
		}
		got.mu.Lock()
		fmt.Printf("after %v: %v\n", after, slices.Clone(got.sent))
		got.sent = nil
		got.mu.Unlock()
	}
	// Output:
	// after 15m0s: []
	// after 16m0s: [CancelOrder order-2]
	// after 168h0m1s: [SendReminder invoice-1]
	// after 192h0m0s: []
}
