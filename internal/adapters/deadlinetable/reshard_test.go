package deadlinetable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// oneTable returns projections of one new Deadlines table on the emulator, one
// for each shard count given: the table's rows written under one count and read, or
// resharded, under another.
func oneTable(t *testing.T, counts ...int) []*deadlinetable.Projection {
	t.Helper()
	client := emulatortest.DynamoDB(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "deadlines")
	out := make([]*deadlinetable.Projection, len(counts))
	for i, n := range counts {
		p, err := deadlinetable.New(client, table, n, deadlinetable.DefaultMarkerTTL)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// TestReshardKeepsATakenRowInItsLane: resharding replays a row's opening records;
// the opening of a kind whose row another kind took over must not move the row back
// into its own lane, and the taker's moves it to its shard under the new count,
// where the sweep's query of shard 0 finds it.
func TestReshardKeepsATakenRowInItsLane(t *testing.T) {
	ctx := context.Background()
	p := oneTable(t, 16, 1)
	before, after := p[0], p[1]
	before, after = before.WithKinds(indextest.TestKinds), after.WithKinds(indextest.TestKinds)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(typ string, v int64) eventstore.Record {
		return eventstore.Record{StreamID: "things-x", Version: v, Event: eventstore.Event{ID: typ, Type: typ, Data: []byte("subject:x"), RecordedAt: at}}
	}
	for _, r := range []eventstore.Record{rec("Held", 1), rec("Handed", 2)} {
		if err := before.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(kind string) []deadline.Row {
		t.Helper()
		k, ok := indextest.TestKinds.ByName(kind)
		if !ok {
			t.Fatalf("no kind %s", kind)
		}
		var out []deadline.Row
		if _, err := after.LanePages(ctx, k.Lane(), 0, time.Time{}, func(p []deadline.Row) bool { out = append(out, p...); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The hold's opening last, as after a rebuild interrupted and run again.
	for _, r := range []eventstore.Record{rec("Handed", 2), rec("Held", 1)} {
		if err := after.Reshard(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := rows("hold"); len(got) != 0 {
		t.Errorf("the holds' lane after resharding: %+v, want nothing: the hold was taken over", got)
	}
	if got := rows("handover"); len(got) != 1 || got[0].Kind != "handover" || got[0].Subject != "x" {
		t.Errorf("the handovers' lane after resharding: %+v, want the handover on shard 0", got)
	}
}

// TestParkedRecordsMoveWithTheShards: parked records come from no event, so the
// rebuild's replay never moves them; ReshardParked moves every one still parked to
// its shard under the new count, where the sweep's query of that shard finds it,
// with its due time, and leaves a redelivered one's marker where it is.
func TestParkedRecordsMoveWithTheShards(t *testing.T) {
	ctx := context.Background()
	p := oneTable(t, 16, 2)
	before, after := p[0], p[1]
	due := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var records []eventstore.Record
	for i := range 12 {
		r := eventstore.Record{StreamID: fmt.Sprintf("bike-parked-%d", i), Version: 2, Event: eventstore.Event{ID: fmt.Sprint(i), Type: "BikeRequested", RecordedAt: due}}
		if err := before.Park(ctx, eventfilter.Process, r, due); err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	// One was redelivered before the reshard: its marker is no parked record.
	if err := before.Unpark(ctx, parked.Record{Consumer: eventfilter.Process, StreamID: records[0].StreamID, Version: 2}); err != nil {
		t.Fatal(err)
	}
	found := func(p *deadlinetable.Projection, shards int) map[string]time.Time {
		t.Helper()
		out := map[string]time.Time{}
		for s := range shards {
			if _, err := p.ParkedPages(ctx, s, time.Time{}, func(page []parked.Record) bool {
				for _, r := range page {
					out[r.StreamID] = r.Due
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	if got := found(after, 2); len(got) == 11 {
		t.Fatalf("all %d parked records are on the two shards already: the test moves nothing", len(got))
	}
	moved, err := after.ReshardParked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := found(after, 2)
	if len(got) != 11 || moved == 0 || moved > 11 {
		t.Fatalf("after the reshard %d parked records on the two shards (%d moved), want the 11 still parked", len(got), moved)
	}
	for _, r := range records[1:] {
		if d, ok := got[r.StreamID]; !ok || !d.Equal(due) {
			t.Errorf("%s: due %v, found %v; want it parked, due %v", r.StreamID, d, ok, due)
		}
	}
	if _, ok := got[records[0].StreamID]; ok {
		t.Errorf("the redelivered record is parked again")
	}
	if again, err := after.ReshardParked(ctx); err != nil || again != 0 {
		t.Errorf("a second ReshardParked moved %d, %v; want none", again, err)
	}
}
