package deadline_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// redeliveries is a Redeliverer that records what it is given and fails for the
// records in failing; each record was recorded at recordedAt.
type redeliveries struct {
	mu         sync.Mutex
	got        []string
	failing    map[string]bool
	recordedAt time.Time
}

func (r *redeliveries) Redeliver(_ context.Context, consumer, stream string, version int64) (time.Time, error) {
	id := fmt.Sprintf("%s:%s@%d", consumer, stream, version)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, id)
	if r.failing[id] {
		return r.recordedAt, errors.New("still waits for another stream's state")
	}
	return r.recordedAt, nil
}

func parkedIDs(t *testing.T, m *serviceMemory) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, p := range m.ParkedRecords() {
		out[fmt.Sprintf("%s:%s@%d", p.Consumer, p.StreamID, p.Version)] = p.Due
	}
	return out
}

// TestTheSweepRedeliversTheDueParkedRecords: a due record is delivered again and
// taken off the index; one that fails again is put off by the backoff, and its
// stream's later parked records wait behind it, due or not, until it is delivered
// (a stream's order is kept among what is parked); a record not due yet is left
// alone.
func TestTheSweepRedeliversTheDueParkedRecords(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m := newServiceMemory(2)
	park := func(consumer, stream string, version int64, due time.Time) {
		if err := m.Park(ctx, consumer, eventstore.Record{StreamID: stream, Version: version}, due); err != nil {
			t.Fatal(err)
		}
	}
	park("process", "payment-a", 3, now.Add(-time.Minute))
	park("process", "payment-a", 4, now.Add(-time.Minute))
	park("process", "payment-b", 3, now.Add(-time.Second))
	park("projector", "payment-b", 3, now)
	park("process", "payment-c", 3, now.Add(time.Minute))
	recordedAt := now.Add(-90 * time.Second)
	r := &redeliveries{failing: map[string]bool{"process:payment-a@3": true}, recordedAt: recordedAt}

	sum, err := over(m, &recording{}, deadline.Policy{Timeout: time.Minute}, nil, sweep.Sweep{Parked: &parked.Redelivery{Redeliverer: r}, Logger: slog.New(slog.DiscardHandler)}).Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	// The sweep reads the four that are due, not payment-c's.
	if sum.Parked.Found != 4 || sum.Parked.Redelivered != 2 || sum.Parked.Left != 2 || sum.Parked.OldestParked != 90*time.Second {
		t.Errorf("summary %+v, want 4 parked and due, 2 redelivered, 2 left, the oldest 90s", sum)
	}
	slices.Sort(r.got)
	if want := []string{"process:payment-a@3", "process:payment-b@3", "projector:payment-b@3"}; !slices.Equal(r.got, want) {
		t.Errorf("redelivered %v, want %v", r.got, want)
	}
	left := parkedIDs(t, m)
	if len(left) != 3 {
		t.Fatalf("left parked %v, want payment-a's two and payment-c's", left)
	}
	if due := left["process:payment-a@3"]; !due.Equal(parked.Backoff(now, recordedAt)) || !due.Equal(now.Add(90*time.Second)) {
		t.Errorf("payment-a@3 due again at %s, want %s: as long again as it has been waiting", due, now.Add(90*time.Second))
	}
	if due := left["process:payment-a@4"]; !due.Equal(now.Add(90 * time.Second)) {
		t.Errorf("payment-a@4 due at %s, want it put off with payment-a@3, which it waits behind", due)
	}
	if due := left["process:payment-c@3"]; !due.Equal(now.Add(time.Minute)) {
		t.Errorf("payment-c@3 due at %s, want it untouched", due)
	}

	// A second later payment-a@3 is not due, and payment-a@4, put off with it,
	// still waits behind it.
	r.got = nil
	sum, err = over(m, &recording{}, deadline.Policy{Timeout: time.Minute}, nil, sweep.Sweep{Parked: &parked.Redelivery{Redeliverer: r}, Logger: slog.New(slog.DiscardHandler)}).Sweep(ctx, now.Add(time.Second))
	if err != nil || sum.Parked.Redelivered != 0 || len(r.got) != 0 {
		t.Errorf("a second later: %+v, %v, redelivered %v; want nothing tried", sum, err, r.got)
	}

	// Without a Redeliverer they are only counted.
	sum, err = over(m, &recording{}, deadline.Policy{Timeout: time.Minute}, nil, sweep.Sweep{Logger: slog.New(slog.DiscardHandler)}).Sweep(ctx, now.Add(time.Hour))
	if err != nil || sum.Parked.Found != 3 || sum.Parked.Redelivered != 0 || sum.Parked.Left != 3 {
		t.Errorf("summary without a Redeliverer %+v, %v; want 3 parked and left", sum, err)
	}
}

func TestParkedBackoffIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		age, want time.Duration
	}{
		{0, parked.BackoffMin},
		{time.Second, parked.BackoffMin},
		{time.Minute, time.Minute},
		{time.Hour, parked.BackoffMax},
	} {
		if got := parked.Backoff(now, now.Add(-c.age)).Sub(now); got != c.want {
			t.Errorf("backoff of a record %s old: %s, want %s", c.age, got, c.want)
		}
	}
}
