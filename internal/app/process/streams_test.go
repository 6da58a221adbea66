package process_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestDrivenByRealStreamRecords runs the process the way Lambda does: from the
// Events table's DynamoDB stream in the local emulator (GetShardIterator and
// GetRecords), through the same batch handler the process function runs
// (awslambda.Stream over dynamo.StreamRecord, the process's handler given the
// event store's record by wiring.Handle).
func TestDrivenByRealStreamRecords(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		client, table := emulatortest.EventsTable(t)
		desc, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		store := dynamo.New(client, table)
		commands := command.New(store, command.WithProvider(generic.Provider{}))
		process, err := process.New(process.Config{Store: store, Commands: commands, Mode: mode, Price: price})
		if err != nil {
			t.Fatal(err)
		}
		logger := slog.New(slog.DiscardHandler)
		poller := &streampoll.Poller{
			Client:    dynamodbstreams.NewFromConfig(emulatortest.Config(t)),
			StreamARN: aws.ToString(desc.Table.LatestStreamArn),
			Handler:   awslambda.Stream(dynamo.StreamRecord, streamfn.Handle(process.Handle), awslambda.Logger(logger)),
		}
		pollUntil := func(what string, cond func() bool) {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for !cond() {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for %s", what)
				}
				if _, err := poller.Poll(context.Background()); err != nil {
					t.Logf("poll: %v", err)
				}
			}
		}
		read := func(id string) []string {
			recs, err := store.Read(context.Background(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			return types(recs)
		}

		rentalID := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")
		ref := payment.ReferenceFor(rentalID)
		for _, c := range []rental.Command{rental.RegisterBike{BikeID: "b1"}, rental.RequestBike{BikeID: "b1", Renter: "alice", RentalID: rentalID}} {
			if _, err := commands.Bike(context.Background(), c, command.Meta{}); err != nil {
				t.Fatal(err)
			}
		}
		pollUntil("the process to start", func() bool { return slices.Equal(read(rentalpayment.StreamID(rentalID)), started) })
		if got := read(payment.StreamID(ref)); !slices.Equal(got, prepared) {
			t.Fatalf("payment stream = %v, want %v", got, prepared)
		}
		if _, err := commands.Payment(context.Background(), payment.ConfirmPayment{Reference: ref}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		pollUntil("the process to end", func() bool { return slices.Equal(read(rentalpayment.StreamID(rentalID)), ended) })
		if got := read(rental.StreamID("b1")); !slices.Equal(got, bikeRented) {
			t.Errorf("bike stream = %v, want %v", got, bikeRented)
		}
		// The stream holds the process's own events too; handling them changes nothing.
		for range 3 {
			poller.Poll(context.Background())
		}
		if got := read(rentalpayment.StreamID(rentalID)); !slices.Equal(got, ended) {
			t.Errorf("process stream after more polls = %v", got)
		}
	})
}
