package deadlines_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"
)

// placedAt is when the examples' first order was placed.
var placedAt = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// unconfirmed declares the examples' kind: an order not confirmed within 15
// minutes of being placed is cancelled by cancel.
func unconfirmed(cancel deadlines.Command) deadlines.Kind {
	return deadlines.Kind{
		Name:    "unconfirmed-order",
		After:   15 * time.Minute,
		Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}},
		Work:    deadlines.Send{Command: cancel},
	}
}

// Declaring kinds: each says which records open its rows and which settle them,
// how long after its opening a row falls due, and what is sent once it is overdue.
// NewKinds checks them together and says what is wrong with each.
func ExampleNewKinds() {
	cancel := deadlines.CommandFunc(func(context.Context, deadlines.Row, string) (deadlines.Outcome, error) {
		return deadlines.Acted, nil
	})
	kinds, err := deadlines.NewKinds(unconfirmed(cancel))
	fmt.Println(kinds.Names(), err)

	_, err = deadlines.NewKinds(
		unconfirmed(cancel),
		deadlines.Kind{Name: "Unpaid Invoice", After: -time.Hour, Changes: deadlines.Events{Opens: []string{"InvoiceIssued"}}},
	)
	fmt.Println(err)
	// Output:
	// [unconfirmed-order] <nil>
	// deadlines: kind "Unpaid Invoice": want a name of lower-case ASCII letters, digits and hyphens, starting with a letter, at most 64
	// deadlines: kind "Unpaid Invoice": After -1h0m0s: want a positive duration, or zero for a row due as soon as it opens
	// deadlines: kind "Unpaid Invoice": no Work: want Send or ByHand
}

// A kind whose records are not in the stream of the subject they are about names
// the subject from the record's data: here an invoice's events are in its
// customer's stream. Data that does not decode is the record's error.
func ExampleEvents() {
	issued := deadlines.Events{
		Opens:   []string{"InvoiceIssued"},
		Settles: []string{"InvoicePaid", "ReminderSent"},
		Subject: func(r deadlines.Record) (string, error) {
			var body struct {
				Invoice string `json:"invoice"`
			}
			if err := json.Unmarshal(r.Data, &body); err != nil {
				return "", fmt.Errorf("%w: %v", deadlines.ErrCorruptRecord, err)
			}
			return body.Invoice, nil
		},
	}
	for _, r := range []deadlines.Record{
		{Stream: "customer-9", Position: 4, Type: "InvoiceIssued", Data: []byte(`{"invoice":"inv-31"}`)},
		{Stream: "customer-9", Position: 5, Type: "InvoicePaid", Data: []byte(`{"invoice":"inv-31"}`)},
		{Stream: "customer-9", Position: 6, Type: "AddressChanged"},
		{Stream: "customer-9", Position: 7, Type: "InvoiceIssued", Data: []byte(`{`)},
	} {
		c, ok, err := issued.Change(r)
		fmt.Printf("%s: %+v %v %v\n", r.Type, c, ok, errors.Is(err, deadlines.ErrCorruptRecord))
	}
	// Output:
	// InvoiceIssued: {Subject:inv-31 Settled:false How: Due:0001-01-01 00:00:00 +0000 UTC} true false
	// InvoicePaid: {Subject:inv-31 Settled:true How:InvoicePaid Due:0001-01-01 00:00:00 +0000 UTC} true false
	// AddressChanged: {Subject: Settled:false How: Due:0001-01-01 00:00:00 +0000 UTC} false false
	// InvoiceIssued: {Subject: Settled:false How: Due:0001-01-01 00:00:00 +0000 UTC} false true
}

// Projecting records: the projector applies every record of the service, in
// whatever order and however often its stream delivers them. A row is due at its
// opening record's own time plus After, so a record delivered again, or late, or
// replayed into an empty table, gives the same due time; a settled row stays
// settled when its opening comes again.
func ExampleProjection() {
	ctx := context.Background()
	kinds := deadlines.MustKinds(unconfirmed(nil))
	var list deadlines.Projection = memory.New(kinds, 1) // dynamo.New in a deployment
	placed17 := deadlines.Record{Stream: "order-17", Position: 1, Type: "OrderPlaced", At: placedAt}
	placed18 := deadlines.Record{Stream: "order-18", Position: 1, Type: "OrderPlaced", At: placedAt.Add(time.Minute)}
	confirmed18 := deadlines.Record{Stream: "order-18", Position: 2, Type: "OrderConfirmed", At: placedAt.Add(2 * time.Minute)}
	for _, r := range []deadlines.Record{
		confirmed18, placed17, placed18, // out of order
		placed17, confirmed18, placed18, // delivered again
		{Stream: "order-18", Position: 3, Type: "OrderShipped", At: placedAt.Add(time.Hour)}, // read by no kind
	} {
		if err := list.Apply(ctx, r); err != nil {
			fmt.Println(err)
		}
	}
	for _, order := range []string{"order-17", "order-18"} {
		row, ok, _ := list.Row(ctx, kinds.All()[0], order)
		fmt.Println(order, ok, row.Due.Format(time.Kitchen))
	}
	// Output:
	// order-17 true 9:15AM
	// order-18 false 12:00AM
}

// Sweeping at a given now: a sweep finds the rows overdue at now and sends each its
// kind's command. The receiver decides: here it declines an order whose
// confirmation it has recorded but the projection has not yet applied. The sweep
// writes nothing: each row stays until a record settles it, so a sweep that runs
// twice sends twice, and the receiver answers from its own records.
func ExampleSweeper_Sweep() {
	ctx := context.Background()
	confirmed := map[string]bool{"order-18": true} // the receiver's own records
	cancel := deadlines.CommandFunc(func(_ context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
		if confirmed[row.Subject] {
			return deadlines.Declined, nil
		}
		fmt.Println("cancel", row.Subject, "for", cause)
		return deadlines.Acted, nil // and records OrderCancelled, which settles the row
	})
	kinds := deadlines.MustKinds(unconfirmed(cancel))
	index := memory.New(kinds, 2)
	for i, order := range []string{"order-17", "order-18", "order-19"} {
		r := deadlines.Record{Stream: order, Position: 1, Type: "OrderPlaced", At: placedAt.Add(time.Duration(i) * 10 * time.Minute)}
		if err := index.Apply(ctx, r); err != nil {
			fmt.Println(err)
			return
		}
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: index, Kinds: kinds,
		Logger: slog.New(slog.DiscardHandler)}) // logs each declined, failed and unsent row
	if err != nil {
		fmt.Println(err)
		return
	}
	now := placedAt.Add(30 * time.Minute) // order-19 is due at 9:35
	sums, err := sweeper.Sweep(ctx, now, "sweep:"+now.Format(time.RFC3339))
	for _, s := range sums {
		fmt.Printf("%s: found %d, acted %d, declined %d, read %d, oldest overdue %v\n",
			s.Kind, s.Found, s.Acted, s.Declined, s.ItemsRead, s.OldestOverdue)
	}
	fmt.Println(err)
	// Output:
	// cancel order-17 for sweep:2026-03-01T09:30:00Z
	// unconfirmed-order: found 2, acted 1, declined 1, read 2, oldest overdue 15m0s
	// <nil>
}

// Listing what is due, as operators read it: a page at a time, soonest due first,
// overdue or not at a given now; Next continues the listing.
func ExampleList() {
	ctx := context.Background()
	kinds := deadlines.MustKinds(unconfirmed(nil))
	index := memory.New(kinds, 4)
	for i := range 5 {
		r := deadlines.Record{Stream: fmt.Sprintf("order-%d", 20+i), Position: 1, Type: "OrderPlaced", At: placedAt.Add(time.Duration(i) * 5 * time.Minute)}
		if err := index.Apply(ctx, r); err != nil {
			fmt.Println(err)
			return
		}
	}
	overdue := true
	q := deadlines.Query{Kind: "unconfirmed-order", Overdue: &overdue, Now: placedAt.Add(32 * time.Minute), Limit: 2}
	for {
		page, err := deadlines.List(ctx, index, kinds, q)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, row := range page.Rows {
			fmt.Println(row.Subject, "due", row.Due.Format(time.Kitchen))
		}
		if page.Next == "" {
			break
		}
		fmt.Println("--", "next page")
		q.Token = page.Next
	}
	// Output:
	// order-20 due 9:15AM
	// order-21 due 9:20AM
	// -- next page
	// order-22 due 9:25AM
	// order-23 due 9:30AM
}
