package capacity_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/deadlines/internal/moto"
)

// What a Deadlines table bills for opening a row and settling it (here on moto):
// the counter is installed on a copy of the table's client, and reads what it
// needs through the client it was made with.
func Example() {
	ctx := context.Background()
	client, err := moto.Client() // a *dynamodb.Client
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := dynamo.Create(ctx, client, "capacity-example"); err != nil {
		fmt.Println(err)
		return
	}
	counter := capacity.NewCounter(client)
	counted := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Middleware("projector"))
	})
	loan := deadlines.Kind{Name: "loan", After: 14 * 24 * time.Hour, Work: deadlines.Send{},
		Changes: deadlines.Events{Opens: []string{"BookLent"}, Settles: []string{"BookReturned"}}}
	table, err := dynamo.New(counted, "capacity-example", deadlines.MustKinds(loan))
	if err != nil {
		fmt.Println(err)
		return
	}
	lent := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, r := range []deadlines.Record{
		{Stream: "book-1", Position: 1, Type: "BookLent", At: lent},
		{Stream: "book-1", Position: 2, Type: "BookReturned", At: lent.Add(24 * time.Hour)},
	} {
		if err := table.Apply(ctx, r); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, c := range counter.Calls() {
		u := c.Tables[0]
		fmt.Printf("%s %s: %d bytes, %d write units, %d on the index\n", c.Function, c.Operation, u.BytesWritten, u.WriteUnits, u.IndexWriteUnits)
	}
	total := capacity.Total(counter.Calls())
	fmt.Printf("in all: %d calls, %d write units, %g read units\n", total.Calls, total.AllWriteUnits(), total.ReadUnits)
	// Output:
	// projector UpdateItem: 54 bytes, 1 write units, 1 on the index
	// projector UpdateItem: 72 bytes, 1 write units, 1 on the index
	// in all: 2 calls, 4 write units, 0 read units
}
