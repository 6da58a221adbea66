package projectorfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/deadlines/schedules"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// lambdaRecord is a record of the Events table as Lambda delivers it.
func lambdaRecord(_ *testing.T, r eventstore.Record) events.DynamoDBEventRecord {
	return dynamo.EventRecord(r, "100")
}

// TestASchedulerFailureDoesNotHoldTheProjectionBack runs the projector in precise
// mode against a schedule group that does not exist, so that every CreateSchedule
// fails: the payment's row is still projected, the record is reported handled, and
// the failure is logged for the sweep to make up for.
func TestASchedulerFailureDoesNotHoldTheProjectionBack(t *testing.T) {
	cfg := emulatortest.Config(t)
	pending := emulatortest.CreateTable(t, emulatortest.DynamoDB(t), schema.Deadlines, "deadlines")
	_, eventsTable := emulatortest.EventsTable(t)
	env := map[string]string{
		wiring.EnvEventsTable: eventsTable, wiring.EnvDeadlinesTable: pending, wiring.EnvDeadlineMode: wiring.ModePrecise,
		wiring.EnvDeadlineGroup:  "no-such-group", // never created: every schedule is refused
		wiring.EnvDeadlineTarget: "arn:aws:lambda:us-east-1:000000000000:function:sweep",
		wiring.EnvDeadlineRole:   "arn:aws:iam::000000000000:role/scheduler",
		wiring.EnvDeadlineDLQ:    "arn:aws:sqs:us-east-1:000000000000:deadline-dlq",
	}
	var logs strings.Builder
	h, err := projectorfn.ProjectorFunction(context.Background(), cfg, func(k string) string { return env[k] },
		slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := payment.ReferenceFor("bike-1_AAAAAAAAAAAAAAAAAAAAAA")
	data, _ := json.Marshal(payment.PaymentPrepared{PaymentID: "p", Reference: ref, Amount: 1500, Currency: "EUR"})
	rec := eventstore.Record{StreamID: payment.StreamID(ref), Version: 1, Event: eventstore.Event{
		ID: "e1", Type: "PaymentPrepared", Data: data, RecordedAt: time.Now(),
	}}
	resp, err := h.(wiring.StreamHandler)(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{lambdaRecord(t, rec)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %+v, %v; want the record handled", resp, err)
	}
	listing, err := wiring.DeadlinesReader(cfg, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	paymentKind, _ := listing.Kinds.ByName(deadlinekinds.Payment)
	if _, ok, err := listing.Index.Row(context.Background(), paymentKind, "bike-1_AAAAAAAAAAAAAAAAAAAAAA"); err != nil || !ok {
		t.Errorf("the payment's row: outstanding %v, %v; want it projected", ok, err)
	}
	if !strings.Contains(logs.String(), "precise deadline not kept") || !strings.Contains(logs.String(), ref) {
		t.Errorf("the failure was not logged: %s", logs.String())
	}
}

// TestALatePreparedArmsNoScheduleForASettledPayment delivers a payment's settlement
// before its PaymentPrepared, as a replay or a reordered delivery can: the
// projection ignores the late PaymentPrepared, and so do precise deadlines, which
// would otherwise arm a schedule for a payment that settled.
func TestALatePreparedArmsNoScheduleForASettledPayment(t *testing.T) {
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	pending := emulatortest.CreateTable(t, emulatortest.DynamoDB(t), schema.Deadlines, "deadlines")
	_, eventsTable := emulatortest.EventsTable(t)
	group := emulatortest.TableName(t, "deadlines")
	client := scheduler.NewFromConfig(cfg)
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		wiring.EnvEventsTable: eventsTable, wiring.EnvDeadlinesTable: pending, wiring.EnvDeadlineMode: wiring.ModePrecise, wiring.EnvDeadlineGroup: group,
		wiring.EnvDeadlineTarget: "arn:aws:lambda:us-east-1:000000000000:function:sweep",
		wiring.EnvDeadlineRole:   "arn:aws:iam::000000000000:role/scheduler",
		wiring.EnvDeadlineDLQ:    "arn:aws:sqs:us-east-1:000000000000:deadline-dlq",
	}
	h, err := projectorfn.ProjectorFunction(ctx, cfg, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(r eventstore.Record) {
		t.Helper()
		resp, err := h.(wiring.StreamHandler)(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{lambdaRecord(t, r)}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch: %+v, %v", resp, err)
		}
	}
	record := func(ref string, version int64, e payment.Event) eventstore.Record {
		data, _ := json.Marshal(e)
		return eventstore.Record{StreamID: payment.StreamID(ref), Version: version, Event: eventstore.Event{
			ID: fmt.Sprintf("%s-%d", ref, version), Type: e.EventType(), Data: data, RecordedAt: time.Now()}}
	}
	settled := payment.ReferenceFor("bike-1_AAAAAAAAAAAAAAAAAAAAAA")
	deliver(record(settled, 2, payment.PaymentConfirmed{Reference: settled, PaymentID: "p"}))
	deliver(record(settled, 1, payment.PaymentPrepared{Reference: settled, PaymentID: "p", Amount: 1500, Currency: "EUR"}))
	outstanding := payment.ReferenceFor("bike-2_AAAAAAAAAAAAAAAAAAAAAA")
	prepared := record(outstanding, 1, payment.PaymentPrepared{Reference: outstanding, PaymentID: "q", Amount: 1500, Currency: "EUR"})
	deliver(prepared)
	deliver(prepared) // a redelivery of an outstanding payment's arms it again, harmlessly

	out, err := client.ListSchedules(ctx, &scheduler.ListSchedulesInput{GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range out.Schedules {
		names = append(names, aws.ToString(s.Name))
	}
	if len(names) != 1 || names[0] != schedules.Name(outstanding) {
		t.Errorf("schedules %v, want only %s's", names, outstanding)
	}
}
