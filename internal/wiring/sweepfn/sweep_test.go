package sweepfn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

// overdueWorld is fresh tables holding one rental whose payment is outstanding and,
// once the returned time has passed, overdue; the stream's work is done by hand.
func overdueWorld(t *testing.T) (wiring.Getenv, string, time.Time) {
	t.Helper()
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	client, events := emulatortest.EventsTable(t)
	pending := emulatortest.CreateTable(t, client, schema.Deadlines, "deadlines")
	getenv := env(map[string]string{
		wiring.EnvEventsTable: events, wiring.EnvDeadlinesTable: pending, wiring.EnvPaymentTimeout: "1s",
	})
	logger := slog.New(slog.DiscardHandler)
	s, err := paymentfn.Core(cfg, getenv, logger)
	if err != nil {
		t.Fatal(err)
	}
	projection, err := wiring.DeadlineProjection(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	rentalID := rental.NewRentalID("trigger-bike", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: "trigger-bike"}, rental.RequestBike{BikeID: "trigger-bike", Renter: "alice", RentalID: rentalID}} {
		if _, err := s.Commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	// What the stream consumers would do: the process prepares the payment, the
	// projector records it.
	for _, stream := range []string{rental.StreamID("trigger-bike"), rentalpayment.StreamID(rentalID), payment.StreamID(payment.ReferenceFor(rentalID))} {
		records, err := s.Store.Read(ctx, stream, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records {
			if err := s.Process.Handle(ctx, r); err != nil {
				t.Fatal(err)
			}
			if err := projection.Apply(ctx, dynamo.RecordOf(r)); err != nil {
				t.Fatal(err)
			}
		}
	}
	kinds, err := wiring.DeadlineKinds(getenv, deadlinekinds.Receivers{})
	if err != nil {
		t.Fatal(err)
	}
	paymentKind, _ := kinds.ByName(deadlinekinds.Payment)
	row, ok, err := projection.Row(ctx, paymentKind, rentalID)
	if err != nil || !ok {
		t.Fatalf("the payment is not outstanding: %v", err)
	}
	return getenv, rentalID, row.Due
}

// TestEveryTriggerShapeSendsTheSameSweep feeds the sweep function what EventBridge
// Scheduler sends, the exact event an EventBridge rule delivers, and a payment's own
// one-time schedule's input: each calls off the overdue payment the same way.
func TestEveryTriggerShapeSendsTheSameSweep(t *testing.T) {
	shapes := []struct {
		name  string
		input func(at time.Time, rentalID string) string
	}{
		{"EventBridge Scheduler", func(at time.Time, _ string) string {
			return `{"scheduledTime": "` + at.Format(time.RFC3339) + `"}`
		}},
		{"EventBridge rule", func(at time.Time, _ string) string {
			return `{"version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event",
				"source": "aws.events", "account": "123456789012", "time": "` + at.Format(time.RFC3339) + `",
				"region": "us-east-1", "resources": ["arn:aws:events:us-east-1:123456789012:rule/bikerental-dev-sweep"],
				"detail": {}}`
		}},
		{"payment's one-time schedule", func(_ time.Time, rentalID string) string {
			return `{"kind": "` + deadlinekinds.Payment + `", "key": "` + payment.ReferenceFor(rentalID) + `"}`
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			getenv, rentalID, due := overdueWorld(t)
			time.Sleep(time.Until(due.Add(time.Second))) // the payment falls due
			at := time.Now().UTC().Truncate(time.Second)
			h, err := sweepfn.SweepFunction(context.Background(), emulatortest.Config(t), getenv, slog.New(slog.DiscardHandler), discard{})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := h.(sweepfn.Handler)(context.Background(), json.RawMessage(shape.input(at, rentalID)))
			if err != nil {
				t.Fatal(err)
			}
			payments, _ := sum.Kind(deadlinekinds.Payment)
			if payments.Found != 1 || payments.Acted != 1 || payments.Failed != 0 || sum.Incomplete {
				t.Errorf("summary %+v: want the overdue payment found and cancelled", sum)
			}
			if sum.Subject == "" && !sum.Now.Equal(at) {
				t.Errorf("the sweep ran as of %v, want the trigger's time %v", sum.Now, at)
			}
		})
	}
}

// TestAnInputTheSweepCannotReadChangesNothing feeds the sweep function a one-time
// schedule's input naming its row by rentalId and paymentReference, members the
// trigger does not have: the function refuses it, naming the member, rather than
// sweeping every row, and the overdue payment's streams are left as they were.
func TestAnInputTheSweepCannotReadChangesNothing(t *testing.T) {
	getenv, rentalID, due := overdueWorld(t)
	time.Sleep(time.Until(due.Add(time.Second))) // the payment falls due
	ctx, cfg := context.Background(), emulatortest.Config(t)
	s, err := paymentfn.Core(cfg, getenv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	streams := []string{rental.StreamID("trigger-bike"), rentalpayment.StreamID(rentalID), payment.StreamID(payment.ReferenceFor(rentalID))}
	recorded := func() (n int) {
		for _, stream := range streams {
			records, err := s.Store.Read(ctx, stream, 0)
			if err != nil {
				t.Fatal(err)
			}
			n += len(records)
		}
		return n
	}
	before := recorded()
	h, err := sweepfn.SweepFunction(ctx, cfg, getenv, slog.New(slog.DiscardHandler), discard{})
	if err != nil {
		t.Fatal(err)
	}
	input := `{"rentalId": "` + rentalID + `", "paymentReference": "` + payment.ReferenceFor(rentalID) + `"}`
	sum, err := h.(sweepfn.Handler)(ctx, json.RawMessage(input))
	if err == nil || !strings.Contains(err.Error(), `unknown field "rentalId"`) {
		t.Errorf("the sweep answered %+v, %v; want the input refused for its unknown member rentalId", sum, err)
	}
	if after := recorded(); after != before {
		t.Errorf("the streams hold %d records after the refused input, %d before: the overdue payment was acted on", after, before)
	}
}

func TestMain(m *testing.M) { emulatortest.Main(m) }

func env(vars map[string]string) wiring.Getenv { return func(k string) string { return vars[k] } }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
