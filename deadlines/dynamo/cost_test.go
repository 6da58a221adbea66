package dynamo_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
)

// costed returns a table of kinds over a fresh Deadlines table whose every call
// counter records.
func costed(t *testing.T, kinds deadlines.Kinds, opts ...dynamo.Option) (*dynamo.Table, *capacity.Counter) {
	t.Helper()
	client, name := newTable(t)
	counter := capacity.NewCounter(client)
	counted := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Middleware("test"))
	})
	tb, err := dynamo.New(counted, name, kinds, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tb, counter
}

// cost is what a step's calls cost on the table: calls, read units, and write
// units on the table and on its index.
type cost struct {
	calls      int
	read       float64
	write, idx int
}

// measure runs step and returns what its calls cost, failing the test if any unit
// is an estimate.
func measure(t *testing.T, counter *capacity.Counter, step func()) cost {
	t.Helper()
	counter.Reset()
	step()
	calls := counter.Calls()
	if a := capacity.Approximations(calls); len(a) > 0 {
		t.Errorf("approximate units: %q", a)
	}
	tot := capacity.Total(calls)
	return cost{calls: tot.Calls, read: tot.ReadUnits, write: tot.WriteUnits, idx: tot.IndexWriteUnits}
}

// What a row costs on the Deadlines table, in request units as DynamoDB bills
// them: a write of a row (under 1 KB) is one write unit, and one more for the
// index when the row enters or leaves it, two when it moves in it; a repeated
// record is still one write, refused by its condition. A sweep of a kind reads
// one page of each shard's partition of the index, half a unit each (eventually
// consistent, under 4 KB), whether it finds the row or nothing; a row's own
// deadline reads the row strongly, one unit.
func TestWhatARowCostsInRequestUnits(t *testing.T) {
	ctx := context.Background()
	send := deadlines.Send{Command: deadlines.CommandFunc(func(context.Context, deadlines.Row, string) (deadlines.Outcome, error) {
		return deadlines.Acted, nil
	})}
	inv, rem := invoice, reminder
	inv.Work, rem.Work = send, send
	kinds := deadlines.MustKinds(inv, rem)
	const shards = 4
	tb, counter := costed(t, kinds, dynamo.WithShards(shards))
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: tb, Kinds: deadlines.MustKinds(inv),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sweep := func(now time.Time, found int) func() {
		return func() {
			sums, err := sweeper.Sweep(ctx, now, "test")
			if err != nil || len(sums) != 1 || sums[0].Found != found {
				t.Fatalf("sweep: %+v, %v; want %d found", sums, err, found)
			}
		}
	}
	step := func(recs ...deadlines.Record) func() { return func() { apply(t, tb, recs...) } }
	sent := rec("InvoiceSent", "inv-1", 1, t0)
	overdue := t0.Add(8 * 24 * time.Hour)
	for _, c := range []struct {
		name string
		step func()
		want cost
	}{
		{"a sweep that finds nothing", sweep(overdue, 0), cost{calls: shards, read: shards * 0.5}},
		{"an opening", step(sent), cost{calls: 1, write: 1, idx: 1}},
		{"the opening delivered again", step(sent), cost{calls: 1, write: 1}},
		{"a sweep before it is due", sweep(t0.Add(time.Hour), 0), cost{calls: shards, read: shards * 0.5}},
		{"a sweep that finds it overdue", sweep(overdue, 1), cost{calls: shards, read: shards * 0.5}},
		{"its own deadline", func() {
			if one, err := sweeper.SweepOne(ctx, "invoice", "invoice#inv-1", overdue, time.Second); err != nil || one.Kind.Acted != 1 {
				t.Fatalf("SweepOne: %+v, %v", one, err)
			}
		}, cost{calls: 1, read: 1}},
		{"its settlement", step(rec("InvoicePaid", "inv-1", 2, t0.Add(time.Hour))), cost{calls: 1, write: 1, idx: 1}},
		{"a sweep after it settled", sweep(overdue, 0), cost{calls: shards, read: shards * 0.5}},
		{"an ordered kind's opening", step(rec("ReminderSet", "r-1", 1, t0)), cost{calls: 1, write: 1, idx: 1}},
		{"a later opening that moves it", step(rec("ReminderSet", "r-1", 2, t0.Add(time.Hour))), cost{calls: 1, write: 1, idx: 2}},
		{"its settlement", step(rec("ReminderDone", "r-1", 3, t0.Add(2*time.Hour))), cost{calls: 1, write: 1, idx: 1}},
	} {
		if got := measure(t, counter, c.step); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
