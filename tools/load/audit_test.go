package load_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/tools/load"
)

// TestALoadRunEndsWithTheAuditor: a small calm load run, once quiet, audits clean
// through Stack.Audit (which loadgen and TestLoadUnderFaults end with); a
// hand-written pair of BikeRequested events that double-books one of its bikes is
// then reported, so a run that meets a broken invariant fails.
func TestALoadRunEndsWithTheAuditor(t *testing.T) {
	srv := emulatortest.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stack, err := load.StartStack(ctx, load.StackConfig{Emulator: srv.Endpoint, PaymentTimeout: 3 * time.Second, SweepInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	cfg := load.Config{BaseURL: stack.BaseURL, WebhookSecret: stack.WebhookSecret,
		Bikes: 2, Renters: 2, Rentals: 6, Wait: 30 * time.Second, Seed: 7}
	rep, err := load.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	end, err := load.Settle(ctx, cfg, rep, 45*time.Second)
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	for _, v := range load.Check(rep, end) {
		t.Error(v)
	}
	if v, err := stack.Audit(ctx, true); err != nil || len(v) != 0 {
		t.Fatalf("the auditor after a clean run: %v, %v", v, err)
	}

	// Double-book a bike by hand: two rentals requested one after the other.
	awsCfg, err := emulator.Config(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(dynamodb.NewFromConfig(awsCfg), stack.EventsTable)
	bike := rep.Bikes[0]
	recs, err := store.Read(ctx, rental.StreamID(bike), 0)
	if err != nil || len(recs) == 0 {
		t.Fatalf("bike %s has %d events, %v", bike, len(recs), err)
	}
	var appended []eventstore.Event
	for _, suffix := range []string{"IntruderAAAAAAAAAAAAAA", "IntruderBBBBBBBBBBBBBB"} {
		data, _ := json.Marshal(rental.BikeRequested{BikeID: bike, Renter: "mallory", RentalID: rental.NewRentalID(bike, suffix)})
		appended = append(appended, eventstore.Event{ID: "intruder-" + suffix, Type: "BikeRequested", Data: data})
	}
	if _, err := store.Append(ctx, rental.StreamID(bike), recs[len(recs)-1].Version, appended...); err != nil {
		t.Fatal(err)
	}
	v, err := stack.Audit(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range v {
		found = found || strings.HasPrefix(line, "audit: "+audit.BikeDoubleBooked+" ")
	}
	if !found {
		t.Fatalf("the auditor missed the double booking: %v", v)
	}
}
