package deadlinekinds_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring/streamfn"
)

// parked returns the records parked in w's Events table, as the redelivery
// kind's rows list them.
func (w *world) parked() []parked.Record {
	w.t.Helper()
	records, _, err := w.listing.Parked(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return records
}

// parkingPollers returns w's pollers as the functions' event source mappings with
// two records a batch, each function parking what it cannot handle in its parking
// stream of the Events table (wiring.Park), the process's handler being process.
func (w *world) parkingPollers(process func(context.Context, eventstore.Record) error) []*streampoll.Poller {
	return w.streamPollers(map[string]awslambda.Handler{eventfilter.Process: streamfn.Handle(process)}, 2, true)
}

// TestAPoisonRecordHoldsUpNoOtherRental is RELIABILITY.md's test of what a record
// that keeps failing can hold up. The process fails on one rental's request, every
// time, until its cause goes away; the stream pollers (streampoll, which the local
// stack runs) play the event source mappings with two records a batch as read
// from the shard, so that the records of the other rentals, written after the
// failing one in the same shard, come in batches after its own, which a failing
// record used to keep from ever being read (Lambda delivers again from the
// earliest failed record, a batch at a time, for up to MaximumRecordAgeInSeconds).
// They are all handled, those written before the first poll and those written
// after it; the failing record is parked in the process's parking stream of its
// stream, which opens a row of the redelivery kind that the sweep finds (and
// counts), sends at its send times while the cause lasts, and holds back between
// them; once the cause is gone the sweep's redelivery completes it: its payment is
// prepared, and nothing is parked any more.
func TestAPoisonRecordHoldsUpNoOtherRental(t *testing.T) {
	w := newWorld(t, 2)
	var poisoned atomic.Bool
	poisoned.Store(true)
	poison := rental.StreamID("poison")
	var poisonTries atomic.Int64
	process := func(ctx context.Context, r eventstore.Record) error {
		if r.StreamID == poison && r.Type == (rental.BikeRequested{}).EventType() && poisoned.Load() {
			poisonTries.Add(1)
			return errors.New("the rental's state is not there yet")
		}
		return w.process.Handle(ctx, r)
	}
	pollers := w.parkingPollers(process)
	pumpUntil := func(what string, cond func() bool) { t.Helper(); pump(t, pollers, 20*time.Second, what, cond) }

	poisonRental := w.request("poison")
	first := w.request("other1") // right behind it in the shard
	pumpUntil("the rental right behind the failing record", func() bool { return w.listed(first) })
	later := []string{w.request("other2"), w.request("other3"), w.request("other4")} // written after the failing record was first tried
	pumpUntil("the rentals written after the failing record was tried", func() bool {
		return w.listed(later[0]) && w.listed(later[1]) && w.listed(later[2])
	})
	if w.listed(poisonRental) {
		t.Fatal("the poisoned rental's payment was prepared")
	}
	pumpUntil("the failing record parked", func() bool { return len(w.parked()) > 0 })
	p := w.parked()
	if len(p) != 1 || p[0].Consumer != eventfilter.Process || p[0].StreamID != poison || p[0].Version != 2 {
		t.Fatalf("parked %+v, want the process's record of %s version 2", p, poison)
	}
	parkedAt := p[0].Due

	s := w.sweeper(deadlinekinds.Receivers{Redeliverer: w.redeliverer(w.repairer(process))})
	// While the cause lasts, the redelivery fails at each of its send times (when
	// it was parked, a minute later, ...), and is held back between them.
	tries := poisonTries.Load()
	sum, err := sweepAt(s, parkedAt.Add(time.Millisecond))
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 1 || k.Failed != 1 || k.Acted != 0 || poisonTries.Load() != tries+1 {
		t.Fatalf("sweep while the cause lasts: %+v, %v (tried %d more); want it found, tried once, failed", sum, err, poisonTries.Load()-tries)
	}
	if k := of(sum, deadlinekinds.Redelivery); k.OldestOverdue <= 0 {
		t.Errorf("oldest overdue %s, want the time since it was parked", k.OldestOverdue)
	}
	// Two minutes on the next send time (a minute after it was parked) has passed
	// and the one after (three minutes) has not come: it is not tried.
	sum, err = sweepAt(s, parkedAt.Add(2*every+time.Millisecond))
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 1 || k.Waiting != 1 || poisonTries.Load() != tries+1 {
		t.Fatalf("sweep between its send times: %+v, %v; want the record found, waiting, not tried", sum, err)
	}
	if p := w.parked(); len(p) != 1 || !p[0].Due.Equal(parkedAt) {
		t.Fatalf("parked %+v while put off; want it still parked, due since it was parked", p)
	}

	poisoned.Store(false)
	sum, err = sweepAt(s, parkedAt.Add(3*every+time.Millisecond))
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 1 || k.Acted != 1 || k.Failed != 0 {
		t.Fatalf("sweep after the cause went away: %+v, %v; want the record redelivered", sum, err)
	}
	pumpUntil("the poisoned rental's payment, after its redelivery", func() bool { return w.listed(poisonRental) })
	pumpUntil("nothing parked after the redelivery", func() bool { return len(w.parked()) == 0 })
}
