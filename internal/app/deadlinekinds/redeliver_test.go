package deadlinekinds_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// redeliveries is a Redeliverer that records what it is given and fails for the
// records in failing.
type redeliveries struct {
	mu      sync.Mutex
	got     []string
	failing map[string]bool
}

func (r *redeliveries) Redeliver(_ context.Context, consumer, stream string, version int64) (time.Time, error) {
	id := fmt.Sprintf("%s:%s@%d", consumer, stream, version)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, id)
	if r.failing[id] {
		return time.Time{}, errors.New("still waits for another stream's state")
	}
	return time.Time{}, nil
}

func (r *redeliveries) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// parkings is a service in memory that parks stream records as the stream
// functions do (parked.Parker on the event store) and projects its parking streams
// into an index as the projector does.
type parkings struct {
	t     *testing.T
	clock time.Time
	store *eventstore.Memory
	index *memory.Index
	seen  map[string]int64 // the parking streams' records projected, by stream
}

func newParkings(t *testing.T) *parkings {
	p := &parkings{t: t, index: memory.New(serviceKinds, 2), seen: map[string]int64{}}
	p.store = eventstore.NewMemoryWithClock(func() time.Time { return p.clock })
	return p
}

// park parks consumer's record of stream at version at the time at.
func (p *parkings) park(consumer, stream string, version int64, at time.Time) {
	p.t.Helper()
	p.clock = at
	if err := (&parked.Parker{Store: p.store, Consumer: consumer, NewID: ident.UUID, Known: eventfilter.Known}).Park(ctx, eventstore.Record{StreamID: stream, Version: version}); err != nil {
		p.t.Fatal(err)
	}
	p.project(parked.StreamOf(consumer, stream))
}

// project applies the records of the parking streams not yet projected.
func (p *parkings) project(streams ...string) {
	p.t.Helper()
	for _, s := range streams {
		records, err := p.store.Read(ctx, s, p.seen[s]+1)
		if err != nil {
			p.t.Fatal(err)
		}
		applyTo(p.t, p.index, records...)
		if len(records) > 0 {
			p.seen[s] = records[len(records)-1].Version
		}
	}
}

// parked returns what the index lists parked, as "consumer:stream@version".
func (p *parkings) parked() []string {
	p.t.Helper()
	records, _, err := listing(p.index).Parked(ctx)
	if err != nil {
		p.t.Fatal(err)
	}
	var out []string
	for _, r := range records {
		out = append(out, fmt.Sprintf("%s:%s@%d", r.Consumer, r.StreamID, r.Version))
	}
	slices.Sort(out)
	return out
}

// TestTheSweepRedeliversTheDueParkedRecords: the parked records' rows are sent
// one at a time, soonest due first: one delivered again is recorded redelivered,
// which takes its row off; one that fails again stays, and its stream's later
// parked record waits behind it (its row's redelivery tries the earlier one first,
// and stops there), so that a stream's order is kept among what is parked; both
// are sent again at their next send time and held back between; a record parked
// after now is left alone, and without a redeliverer they are only counted.
func TestTheSweepRedeliversTheDueParkedRecords(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := newParkings(t)
	p.park("process", "payment-a", 3, now.Add(-time.Minute))
	p.park("process", "payment-a", 4, now.Add(-time.Minute))
	p.park("process", "payment-b", 3, now.Add(-time.Second))
	p.park("projector", "payment-b", 3, now.Add(-30*time.Second))
	p.park("process", "payment-c", 3, now.Add(5*time.Minute))
	r := &redeliveries{failing: map[string]bool{"process:payment-a@3": true}}
	send := parked.Redeliver{Store: p.store, Redeliverer: r, NewID: ident.UUID, Known: eventfilter.Known}
	s := newSweeper(t, p.index, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}, Redeliverer: send}, 0)

	sum, err := sweepAt(s, now)
	// The sweep finds the four parked before now, not payment-c's.
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 4 || k.Acted != 2 || k.Failed != 2 || k.OldestOverdue != time.Minute {
		t.Errorf("summary %+v, %v; want 4 parked and due, 2 redelivered, 2 failed, the oldest a minute", k, err)
	}
	want := []string{"process:payment-a@3", "process:payment-a@3", "projector:payment-b@3", "process:payment-b@3"}
	if got := r.taken(); !slices.Equal(got, want) {
		t.Errorf("redelivered %v, want %v: one at a time, soonest due first, payment-a@4 behind payment-a@3", got, want)
	}
	p.project(parked.StreamOf("process", "payment-a"), parked.StreamOf("process", "payment-b"), parked.StreamOf("projector", "payment-b"))
	if got, want := p.parked(), []string{"process:payment-a@3", "process:payment-a@4", "process:payment-c@3"}; !slices.Equal(got, want) {
		t.Fatalf("left parked %v, want %v", got, want)
	}

	// A minute later both of payment-a's are sent again; a minute after that,
	// between their send times, nothing is tried.
	sum, err = sweepAt(s, now.Add(every))
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 2 || k.Failed != 2 {
		t.Errorf("a minute later: %+v, %v; want payment-a's two sent again and failed", k, err)
	}
	if got := r.taken(); !slices.Equal(got, []string{"process:payment-a@3", "process:payment-a@3"}) {
		t.Errorf("a minute later redelivered %v, want payment-a@3 for each", got)
	}
	sum, err = sweepAt(s, now.Add(2*every))
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 2 || k.Waiting != 2 || len(r.taken()) != 0 {
		t.Errorf("two minutes later: %+v, %v; want payment-a's two found and waiting, nothing tried", k, err)
	}

	// Without a Redeliverer they are only counted.
	none := newSweeper(t, p.index, deadlinekinds.Policy{}, deadlinekinds.Receivers{Canceller: &recording{}}, 0)
	sum, err = sweepAt(none, now.Add(time.Hour))
	if k := of(sum, deadlinekinds.Redelivery); err != nil || k.Found != 3 || k.Left+k.Waiting != 3 || k.Acted+k.Failed != 0 || len(r.taken()) != 0 {
		t.Errorf("summary without a Redeliverer %+v, %v; want 3 parked, none sent", k, err)
	}
}

// TestParkedBackoffIsBounded: a parked record that keeps failing is sent when it
// is parked, a minute later, and then after waits that double, never more than
// five minutes apart, for as long as it is parked: sweeps a minute apart send it
// at those minutes alone.
func TestParkedBackoffIsBounded(t *testing.T) {
	parkedAt := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var sent []int
	for minute := range 60 {
		if deadlinekinds.RedeliveryRetry.Sends(parkedAt, parkedAt.Add(time.Duration(minute)*every+time.Millisecond), every) {
			sent = append(sent, minute)
		}
	}
	if want := []int{0, 1, 3, 7, 12, 17, 22, 27, 32, 37, 42, 47, 52, 57}; !slices.Equal(sent, want) {
		t.Errorf("sent at the minutes %v after it was parked, want %v", sent, want)
	}
}
