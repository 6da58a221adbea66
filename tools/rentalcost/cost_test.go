package rentalcost_test

import (
	"math"
	"testing"
	"time"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

func call(function, op, table, index string, w, iw int, r float64) capacity.Call {
	return capacity.Call{Function: function, Service: "DynamoDB", Operation: op, Attempts: 1,
		Tables: []capacity.Usage{{Table: table, Index: index, WriteUnits: w, IndexWriteUnits: iw, ReadUnits: r}}}
}

// timedOut is a timed-out rental shaped like the measured one: 7 events, one API
// request (reading the bike's stream and the renter's, appending to both in one
// two-item transaction), the sweep's search of 4 shards and its cancellation.
func timedOut() rentalcost.Measurement {
	m := rentalcost.Measurement{Path: rentalcost.TimedOut, HTTPRequests: 1}
	// The 7 events; the process is woken for 2 of them, the projector for 4.
	for _, typ := range []string{"BikeRequested", "RentalRequested", "PaymentPrepared", "RentalPaymentRequested",
		"PaymentCancelled", "RequestRejected", "RentalPaymentProcessCompleted"} {
		m.Events = append(m.Events, eventstore.Record{Event: eventstore.Event{Type: typ}})
	}
	m.Calls = append(m.Calls, call("command", "Query", "events", "", 0, 0, 1), call("command", "Query", "events", "", 0, 0, 1),
		call("command", "TransactWriteItems", "events", "", 4, 0, 0))
	for range 2 {
		m.Calls = append(m.Calls, call("process", "Query", "events", "", 0, 0, 1), call("process", "Query", "events", "", 0, 0, 1),
			call("process", "PutItem", "events", "", 1, 0, 0), call("process", "PutItem", "events", "", 1, 0, 0),
			call("projector", "UpdateItem", "deadlines", "", 1, 1, 0), call("projector", "UpdateItem", "deadlines", "", 1, 1, 0))
	}
	for range 4 {
		m.Calls = append(m.Calls, call("sweep", "Query", "deadlines", *deadlinetable.Definition("deadlines").GlobalSecondaryIndexes[0].IndexName, 0, 0, 0.5))
	}
	m.Calls = append(m.Calls, call("sweep", "Query", "events", "", 0, 0, 1), call("sweep", "Query", "events", "", 0, 0, 1),
		call("sweep", "PutItem", "events", "", 1, 0, 0))
	return m
}

func TestUsageOfEachDesign(t *testing.T) {
	a := rentalcost.Assumed
	m := timedOut()
	for _, c := range []struct {
		design rentalcost.Design
		want   rentalcost.Usage
	}{
		// The API request, the process's 2 records and the projector's 4 (the
		// payment's and the process's).
		{rentalcost.Sweep, rentalcost.Usage{WriteUnits: 17, ReadUnits: 8, HTTPRequests: 1, Invocations: 7,
			Duration: 7*a.Overhead + 18*a.DynamoDBCall}},
		{rentalcost.StepFunctions, rentalcost.Usage{WriteUnits: 9, ReadUnits: 8, HTTPRequests: 1, Invocations: 4,
			Duration: 4*a.Overhead + 14*a.DynamoDBCall + 2*a.OtherCall, StateTransitions: 2}},
		{rentalcost.OneTimeSchedule, rentalcost.Usage{WriteUnits: 9, ReadUnits: 8, HTTPRequests: 1, Invocations: 6,
			Duration: 6*a.Overhead + 14*a.DynamoDBCall + 2*a.OtherCall, SchedulerInvocations: 1}},
	} {
		if got := rentalcost.UsageOf(m, c.design, a); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.design, got, c.want)
		}
	}
	if got, want := rentalcost.SweepRun(m, a), (rentalcost.Usage{ReadUnits: 2, Invocations: 1, SchedulerInvocations: 1, Duration: a.Overhead + 4*a.DynamoDBCall}); got != want {
		t.Errorf("SweepRun = %+v, want %+v", got, want)
	}
}

func TestPrice(t *testing.T) {
	p, a := rentalcost.USEast1, rentalcost.Assumed
	u := rentalcost.Usage{WriteUnits: 11, ReadUnits: 7, HTTPRequests: 3, Invocations: 17, Duration: 1024 * time.Millisecond,
		SchedulerInvocations: 1, StateTransitions: 2}
	c := u.Price(p, a, 1e6)
	for _, x := range []struct {
		name      string
		got, want float64
	}{
		{"writes", c.DynamoDBWrites, 6.875},
		{"reads", c.DynamoDBReads, 0.875},
		{"API", c.APIGateway, 3},
		{"Lambda requests", c.LambdaRequests, 3.4},
		// 1.024 s at 256 MB is 0.256 GB-s per rental.
		{"Lambda duration", c.LambdaDuration, 0.256 * 0.0000133334 * 1e6},
		{"Scheduler", c.Scheduler, 1},
		{"Step Functions", c.StepFunctions, 50},
	} {
		if math.Abs(x.got-x.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", x.name, x.got, x.want)
		}
	}
}

func TestPreciseExtra(t *testing.T) {
	p, a := rentalcost.USEast1, rentalcost.Assumed
	none := rentalcost.PreciseExtra(0, 200, a).Price(p, a, 1e6)
	if none.Scheduler != 0 || none.LambdaRequests != 0 || none.DynamoDBReads != 0 {
		t.Errorf("no timeouts: %+v, want Lambda duration only", none)
	}
	// Two Scheduler calls of 20 ms in the projector at 256 MB, per payment.
	if want := 0.040 * 0.25 * p.LambdaGBSecond * 1e6; math.Abs(none.Total()-want) > 1e-9 {
		t.Errorf("no timeouts: %g, want %g", none.Total(), want)
	}
	some := rentalcost.PreciseExtra(0.05, 200, a).Price(p, a, 1e6)
	for _, x := range []struct {
		name      string
		got, want float64
	}{
		{"Scheduler", some.Scheduler, 0.05},
		{"Lambda requests", some.LambdaRequests, 0.01},
		// One strongly consistent GetItem of 200 bytes: one read unit.
		{"reads", some.DynamoDBReads, 0.05 * 0.125},
		{"duration", some.LambdaDuration, (0.040 + 0.05*0.008) * 0.25 * p.LambdaGBSecond * 1e6},
	} {
		if math.Abs(x.got-x.want) > 1e-9 {
			t.Errorf("5%% timeouts, %s = %g, want %g", x.name, x.got, x.want)
		}
	}
}

// TestBatchingAtLoad: at 100 rentals a second on 4 shards polled 4 times a second,
// each consumer is invoked 0.16 times per rental; the timed-out rental's process
// records (2) and projector records (4) shrink to that, the API request stays.
func TestBatchingAtLoad(t *testing.T) {
	a := rentalcost.Assumed
	m := timedOut()
	one := rentalcost.UsageOf(m, rentalcost.Sweep, a)
	got := rentalcost.Batched(one, m, a, rentalcost.AtHundredPerSecond)
	if want := 1 + 0.16 + 0.16; math.Abs(got.Invocations-want) > 1e-9 {
		t.Errorf("batched invocations %g, want %g", got.Invocations, want)
	}
	if saved := one.Duration - got.Duration; saved != time.Duration((6-0.32)*float64(a.Overhead)) {
		t.Errorf("duration saved %s, want the overhead of the invocations saved", saved)
	}
	if got.WriteUnits != one.WriteUnits || got.ReadUnits != one.ReadUnits || got.HTTPRequests != one.HTTPRequests {
		t.Errorf("batching changed the DynamoDB or API usage: %+v, was %+v", got, one)
	}
	// A trickle batches nothing: one record per invocation is the most there is.
	slow := rentalcost.Batched(one, m, a, rentalcost.Load{RentalsPerSecond: 1, Shards: 4, PollsPerSecond: 4})
	if slow != one {
		t.Errorf("at one rental a second: %+v, want %+v", slow, one)
	}
}

// A rental of 21 write and 9 read units at 100 rentals a second needs 2,100 and 900
// units a second: 3,000 WCU and 1,286 RCU at a 70% target, for the 2.78 hours a
// million rentals take.
func TestProvisionedCapacityForTheMeasuredUnits(t *testing.T) {
	m := rentalcost.Measurement{Path: rentalcost.Approved, Calls: []capacity.Call{call("command", "PutItem", "events", "", 21, 0, 9)}}
	pv := rentalcost.USEast1Provisioned
	c := rentalcost.ProvisionedFor(m, pv, rentalcost.USEast1, rentalcost.Assumed, rentalcost.AtHundredPerSecond)
	hours := 1e6 / 100.0 / 3600
	if c.WritesPerSecond != 2100 || c.ReadsPerSecond != 900 || c.WCU != 3000 || c.RCU != 1286 {
		t.Errorf("%+v: want 2,100 and 900 units a second, 3,000 WCU and 1,286 RCU", c)
	}
	if want := 3000 * pv.WCUHour * hours; math.Abs(c.Writes-want) > 1e-9 {
		t.Errorf("writes cost %v, want %v", c.Writes, want)
	}
	if want := (2100*pv.WCUHour + 900*pv.RCUHour) * hours; math.Abs(c.AtFull-want-(c.Total()-c.Writes-c.Reads)) > 1e-9 {
		t.Errorf("at 100%%: %v, want %v and the rest", c.AtFull, want)
	}
}
