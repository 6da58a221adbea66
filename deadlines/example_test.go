package deadlines_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"
)

// An order not confirmed within 15 minutes is cancelled by CancelOrder, which may
// decline; an invoice unpaid 7 days after issue gets a reminder, which the
// reminder's own record settles. The records are the service's own events, read
// as deadlines.Record.
func Example() {
	cancelOrder := deadlines.CommandFunc(func(_ context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
		fmt.Printf("CancelOrder %s (%s)\n", row.Subject, cause)
		return deadlines.Acted, nil // the service records OrderCancelled
	})
	remind := deadlines.CommandFunc(func(_ context.Context, row deadlines.Row, _ string) (deadlines.Outcome, error) {
		fmt.Printf("SendReminder %s\n", row.Subject)
		return deadlines.Acted, nil // the service records ReminderSent
	})
	kinds, err := deadlines.NewKinds(
		deadlines.Kind{
			Name:    "unconfirmed-order",
			After:   15 * time.Minute,
			Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}},
			Work:    deadlines.Send{Command: cancelOrder},
		},
		deadlines.Kind{
			Name:    "unpaid-invoice",
			After:   7 * 24 * time.Hour,
			Changes: deadlines.Events{Opens: []string{"InvoiceIssued"}, Settles: []string{"InvoicePaid", "ReminderSent"}},
			Work:    deadlines.Send{Command: remind},
		},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	list := memory.New(kinds, 4) // the DynamoDB table in a deployment: package dynamo
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, r := range []deadlines.Record{
		{Stream: "order-17", Position: 1, Type: "OrderPlaced", At: day},
		{Stream: "order-18", Position: 1, Type: "OrderPlaced", At: day},
		{Stream: "order-18", Position: 2, Type: "OrderConfirmed", At: day.Add(3 * time.Minute)},
		{Stream: "invoice-4", Position: 1, Type: "InvoiceIssued", At: day.Add(-8 * 24 * time.Hour)},
	} {
		if err := list.Apply(ctx, r); err != nil { // the projector, for each record
			fmt.Println(err)
			return
		}
	}

	page, _ := deadlines.List(ctx, list, kinds, deadlines.Query{Limit: 10})
	for _, row := range page.Rows {
		fmt.Printf("due %s: %s %s\n", row.Due.Format(time.DateTime), row.Kind, row.Subject)
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: list, Kinds: kinds})
	if err != nil {
		fmt.Println(err)
		return
	}
	sums, _ := sweeper.Sweep(ctx, day.Add(20*time.Minute), "sweep") // every minute, on a schedule
	for _, s := range sums {
		fmt.Printf("%s: %d overdue, %d acted\n", s.Kind, s.Found, s.Acted)
	}
	// Output:
	// due 2026-02-28 09:00:00: unpaid-invoice invoice-4
	// due 2026-03-01 09:15:00: unconfirmed-order order-17
	// CancelOrder order-17 (sweep)
	// SendReminder invoice-4
	// unconfirmed-order: 1 overdue, 1 acted
	// unpaid-invoice: 1 overdue, 1 acted
}
