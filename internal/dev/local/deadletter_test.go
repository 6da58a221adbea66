package local_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
)

// runStack runs the local stack on fresh tables until the test ends, with settings
// over the defaults, sweeping every interval, its stream mappings giving up after
// one retry, and its functions changed by replace. It returns the stack and the
// functions' environment.
func runStack(t *testing.T, interval time.Duration, settings map[string]string, replace func(*local.Functions)) (*local.Stack, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	events, pending := emulatortest.TableName(t, "events"), emulatortest.TableName(t, "pending")
	env := map[string]string{wiring.EnvEventsTable: events, wiring.EnvDeadlinesTable: pending, wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	maps.Copy(env, settings)
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: interval, Logger: slog.New(slog.DiscardHandler), MaxRetryAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	replace(&up.Functions)
	serve(t, ctx, cancel, up)
	return up.Stack, env
}

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
	ctx := context.Background()
	stack, env := runStack(t, time.Hour, nil, func(fns *local.Functions) { fns.Process = down{} })
	events := env[wiring.EnvEventsTable]
	getenv := func(k string) string { return env[k] }
	cfg, logger := stack.AWS, stack.Logger

	store := dynamo.New(emulatortest.DynamoDB(t), events)
	commands := command.New(store, command.WithProvider(generic.Provider{}))
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
	projection, err := wiring.DeadlineProjection(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	r := &repair.Repairer{Store: store, Consumers: map[string]repair.Handler{eventfilter.Process: process.Handle,
		eventfilter.Projector: func(ctx context.Context, r eventstore.Record) error { return projection.Apply(ctx, dynamo.RecordOf(r)) }}}
	res, err := r.Repair(ctx, rentalID, false)
	if err != nil || res.Before != rentalview.StatusRequested || res.After != rentalview.StatusAwaitingPayment {
		t.Fatalf("repair: %+v, %v; want the process started and the payment prepared", res, err)
	}
}

// refusing is a process function that fails every batch holding a record of one
// event type, and handles the others.
type refusing struct {
	local.Invoker
	eventType string
}

func (r refusing) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if bytes.Contains(payload, []byte(`"S":"`+r.eventType+`"`)) {
		return nil, errors.New("the process refuses " + r.eventType)
	}
	return r.Invoker.Invoke(ctx, payload)
}

// TestADeadLetteredRentalIsFoundAndRepairedByTheSweep runs the local stack with a
// process that refuses every PaymentConfirmed until the record is given up on: the
// rental is paid but stuck awaiting payment, its bike held. Nobody runs the auditor
// or rentalctl: the sweep finds the rental through the index once its process has
// been open for the timeout plus the grace, and repairs it (its payment settled, so
// the repair only finishes what the confirmation decided), while the process
// function is still refusing.
func TestADeadLetteredRentalIsFoundAndRepairedByTheSweep(t *testing.T) {
	ctx := context.Background()
	stack, env := runStack(t, 500*time.Millisecond, map[string]string{wiring.EnvPaymentTimeout: "3s", wiring.EnvStuckGrace: "1s"},
		func(fns *local.Functions) {
			fns.Process = refusing{Invoker: fns.Process, eventType: "PaymentConfirmed"}
		})
	events := env[wiring.EnvEventsTable]
	getenv := func(k string) string { return env[k] }
	cfg := stack.AWS

	store := dynamo.New(emulatortest.DynamoDB(t), events)
	commands := command.New(store, command.WithProvider(generic.Provider{}))
	rentalID := rental.NewRentalID("paid", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: "paid"}, rental.RequestBike{BikeID: "paid", Renter: "renter-paid", RentalID: rentalID}} {
		if _, err := commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func() rentalview.Status {
		v, err := rentalview.Load(ctx, store, rentalID)
		if err != nil {
			t.Fatal(err)
		}
		return v.Status
	}
	waitFor := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (the rental is %s)", what, status())
			}
			time.Sleep(50 * time.Millisecond) // polling the tables, with a deadline
		}
	}
	waitFor("the payment to be prepared", 10*time.Second, func() bool { return status() == rentalview.StatusAwaitingPayment })
	if _, err := commands.Payment(ctx, payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the confirmation to be given up on", 10*time.Second, func() bool { return len(stack.DeadLetters()) > 0 })
	if dl := stack.DeadLetters()[0]; dl.Function != "process" {
		t.Fatalf("dead letter %+v, want the process's", dl)
	}
	if s := status(); s != rentalview.StatusAwaitingPayment {
		t.Fatalf("after the dead letter the rental is %s, want it stuck awaiting payment", s)
	}

	waitFor("the sweep to repair the rental", 30*time.Second, func() bool { return status() == rentalview.StatusApproved })
	bike, _, err := commands.LoadBike(ctx, "paid")
	if err != nil || bike.Status != rental.StatusRented || bike.RentalID != rentalID {
		t.Errorf("the bike after the repair: %+v, %v; want it rented to %s", bike, err, rentalID)
	}
	projection, err := wiring.DeadlinesReader(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	waitFor("the process's open row to close", 10*time.Second, func() bool {
		backlog, _, err := projection.Backlog(ctx, time.Now().Add(24*time.Hour))
		return err == nil && len(backlog.Open) == 0
	})
}
