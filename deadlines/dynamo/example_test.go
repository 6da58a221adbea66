package dynamo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/internal/moto"
)

// A library's loans, due two weeks after the book is lent, kept in a Deadlines
// table (here on moto; a deployment declares the table with CloudFormation).
func Example() {
	ctx := context.Background()
	client, err := moto.Client() // a *dynamodb.Client
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := dynamo.Create(ctx, client, "library-deadlines"); err != nil {
		fmt.Println(err)
		return
	}
	loan := deadlines.Kind{
		Name:    "loan",
		After:   14 * 24 * time.Hour,
		Changes: deadlines.Events{Opens: []string{"BookLent"}, Settles: []string{"BookReturned"}},
		Work:    deadlines.Send{},
	}
	kinds, err := deadlines.NewKinds(loan)
	if err != nil {
		fmt.Println(err)
		return
	}
	table, err := dynamo.New(client, "library-deadlines", kinds, dynamo.WithShards(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := table.CheckShards(ctx); err != nil {
		fmt.Println(err)
		return
	}
	lent := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, r := range []deadlines.Record{
		{Stream: "book-1", Position: 1, Type: "BookLent", At: lent},
		{Stream: "book-2", Position: 1, Type: "BookLent", At: lent.Add(time.Hour)},
		{Stream: "book-3", Position: 1, Type: "BookLent", At: lent.Add(3 * 24 * time.Hour)},
		{Stream: "book-1", Position: 2, Type: "BookReturned", At: lent.Add(24 * time.Hour)},
		{Stream: "book-1", Position: 1, Type: "BookLent", At: lent}, // delivered again: changes nothing
	} {
		if err := table.Apply(ctx, r); err != nil {
			fmt.Println(err)
			return
		}
	}
	overdue := true
	page, err := deadlines.List(ctx, table, kinds, deadlines.Query{Overdue: &overdue, Now: lent.Add(15 * 24 * time.Hour), Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range page.Rows {
		fmt.Println(r.Kind, r.Subject, "due", r.Due.Format(time.RFC3339))
	}
	// Output:
	// loan book-2 due 2026-03-16T11:00:00Z
}
