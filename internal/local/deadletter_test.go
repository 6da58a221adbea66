package local_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventfilter"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
	"github.com/bikerental/bikerental/internal/local"
	"github.com/bikerental/bikerental/internal/rental"
	"github.com/bikerental/bikerental/internal/rentalview"
	"github.com/bikerental/bikerental/internal/repair"
	"github.com/bikerental/bikerental/internal/wiring"
)

// down is a process function that is down: every invocation fails.
type down struct{}

func (down) Invoke(context.Context, []byte) ([]byte, error) {
	return nil, errors.New("the process is down")
}

// TestADeadLetteredRentalIsRepairedFromTheEventStore runs the local stack with the
// process down until a rental's BikeRequested is given up on: the on-failure
// destination receives only where the record was, as AWS's does, and the rental,
// stuck requested with its bike held, is repaired from the event store alone.
func TestADeadLetteredRentalIsRepairedFromTheEventStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := emulatortest.Config(t)
	events, pending := emulatortest.TableName(t, "events"), emulatortest.TableName(t, "pending")
	env := map[string]string{wiring.EnvEventsTable: events, wiring.EnvPendingTable: pending, wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	getenv := func(k string) string { return env[k] }
	if err := local.CreateTables(ctx, cfg, events, pending); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	fns, err := local.InProcessFunctions(ctx, cfg, getenv, logger)
	if err != nil {
		t.Fatal(err)
	}
	fns.Process = down{}
	stack := &local.Stack{AWS: cfg, EventsTable: events, PendingTable: pending, SweepInterval: time.Hour, Functions: fns, Logger: logger, MaxRetryAttempts: 1}
	l, err := local.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stack.Run(ctx, l) }()
	defer func() { cancel(); <-done }()

	store := dynamo.New(emulatortest.DynamoDB(t), events)
	commands := command.New(store)
	rentalID := rental.NewRentalID("held", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: "held"}, rental.RequestBike{BikeID: "held", Renter: "renter-held", RentalID: rentalID}} {
		if _, err := commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	var letters []local.DeadLetter
	for len(letters) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("BikeRequested was never given up on")
		}
		time.Sleep(50 * time.Millisecond) // polling the stack's on-failure destination, with a deadline
		letters = stack.DeadLetters()
	}
	dl := letters[0]
	if dl.Function != "process" || dl.StartSequenceNumber == "" || dl.StartSequenceNumber != dl.EndSequenceNumber || dl.BatchSize != 1 ||
		!strings.Contains(dl.StreamARN, events) || dl.Attempts != 2 {
		t.Fatalf("the dead letter: %+v, want only the stream, shard and sequence range of the one record", dl)
	}
	if v, _ := rentalview.Load(ctx, store, rentalID); v.Status != rentalview.StatusRequested {
		t.Fatalf("before the repair the rental is %s", v.Status)
	}

	// The process is back; the record has left the stream's reach for it (its
	// mapping moved past it). The repair works from the event store.
	process, err := wiring.Process(store, commands, getenv, logger)
	if err != nil {
		t.Fatal(err)
	}
	projection, err := wiring.Projection(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	r := &repair.Repairer{Store: store, Consumers: map[string]repair.Handler{eventfilter.Process: process.Handle, eventfilter.Projector: projection.Apply}}
	res, err := r.Repair(ctx, rentalID, false)
	if err != nil || res.Before != rentalview.StatusRequested || res.After != rentalview.StatusAwaitingPayment {
		t.Fatalf("repair: %+v, %v; want the process started and the payment prepared", res, err)
	}
}
