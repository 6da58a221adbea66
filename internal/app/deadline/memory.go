package deadline

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Memory is an Index in memory, projected from event records by Apply exactly as the
// PendingPayments table is (package indextest holds both to the same contract), for
// tests of the sweep that need no emulator. It is safe for concurrent use.
type Memory struct {
	shards int

	mu       sync.Mutex
	payments map[string]*memoryPayment // by reference
	open     map[string]*memoryOpen    // by rental id
	owed     map[string]*memoryOwed    // by reference
	parked   map[Parked]*memoryParked  // by consumer, stream and version (Due zero)
}

type memoryParked struct {
	due      time.Time
	attempts int
}

type memoryOwed struct {
	row     OwedCancellation
	settled bool
}

type memoryPayment struct {
	row     Pending
	version int64
	settled bool
}

type memoryOpen struct {
	row       Open
	completed bool
}

// NewMemory returns an empty index of shards partitions (at least 1).
func NewMemory(shards int) *Memory {
	return &Memory{shards: max(shards, 1), payments: map[string]*memoryPayment{}, open: map[string]*memoryOpen{}, owed: map[string]*memoryOwed{}, parked: map[Parked]*memoryParked{}}
}

var _ Index = (*Memory)(nil)

// Shards implements Index.
func (m *Memory) Shards() int { return m.shards }

func (m *Memory) shardOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(m.shards))
}

// Apply projects one record: a payment prepared is outstanding until it settles,
// and a settlement is final, whatever order they come in; a request opens a rental's
// process until its completion, which is final too; a cancellation owed to the
// provider stays owed until it is settled, which is final too. Records of other types, and
// payments that belong to no rental, change nothing. A record of one of those types
// that does not decode is an error wrapping eventstore.ErrCorruptRecord.
func (m *Memory) Apply(_ context.Context, r eventstore.Record) error {
	if pc, ok, err := ProcessChangeOf(r); err != nil || ok {
		if err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		o, exists := m.open[pc.RentalID]
		switch {
		case pc.Completed && exists:
			o.completed = true
		case pc.Completed:
			m.open[pc.RentalID] = &memoryOpen{row: Open{RentalID: pc.RentalID}, completed: true}
		case !exists:
			m.open[pc.RentalID] = &memoryOpen{row: Open{RentalID: pc.RentalID, RequestedAt: r.RecordedAt.Truncate(time.Millisecond).UTC()}}
		}
		return nil
	}
	if cc, ok, err := CancellationChangeOf(r); err != nil || ok {
		if err != nil {
			return err
		}
		rentalID, _ := payment.RentalIDFor(cc.Reference)
		m.mu.Lock()
		defer m.mu.Unlock()
		o, exists := m.owed[cc.Reference]
		switch {
		case cc.Settled && exists:
			o.settled = true
		case cc.Settled:
			m.owed[cc.Reference] = &memoryOwed{row: OwedCancellation{Reference: cc.Reference, RentalID: rentalID}, settled: true}
		case !exists:
			m.owed[cc.Reference] = &memoryOwed{row: OwedCancellation{Reference: cc.Reference, RentalID: rentalID, OwedAt: r.RecordedAt.Truncate(time.Millisecond).UTC()}}
		}
		return nil
	}
	c, ok, err := PaymentChangeOf(r)
	if err != nil || !ok {
		return err
	}
	rentalID, err := payment.RentalIDFor(c.Reference)
	if err != nil {
		return nil // not a rental's payment: nothing will ever sweep it
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, exists := m.payments[c.Reference]
	switch {
	case c.Settled == "" && !exists:
		m.payments[c.Reference] = &memoryPayment{row: Pending{Reference: c.Reference, RentalID: rentalID,
			PreparedAt: r.RecordedAt.Truncate(time.Millisecond).UTC()}, version: r.Version}
	case c.Settled != "" && !exists:
		m.payments[c.Reference] = &memoryPayment{row: Pending{Reference: c.Reference, RentalID: rentalID}, version: r.Version, settled: true}
	case c.Settled != "" && p.version < r.Version:
		p.version, p.settled = r.Version, true
	}
	return nil
}

// OverduePages implements Index, in one page.
func (m *Memory) OverduePages(_ context.Context, shard int, cutoff time.Time, fn func([]Pending) bool) (int, error) {
	m.mu.Lock()
	var rows []Pending
	for ref, p := range m.payments {
		if !p.settled && m.shardOf(ref) == shard && (cutoff.IsZero() || p.row.PreparedAt.Before(cutoff)) {
			rows = append(rows, p.row)
		}
	}
	m.mu.Unlock()
	slices.SortStableFunc(rows, func(a, b Pending) int {
		return cmp.Or(a.PreparedAt.Compare(b.PreparedAt), cmp.Compare(a.Reference, b.Reference))
	})
	if len(rows) > 0 {
		fn(rows)
	}
	return len(rows), nil
}

// OpenBefore implements Index.
func (m *Memory) OpenBefore(_ context.Context, cutoff time.Time) ([]Open, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Open
	for _, o := range m.open {
		if !o.completed && o.row.RequestedAt.Before(cutoff) {
			out = append(out, o.row)
		}
	}
	slices.SortFunc(out, func(a, b Open) int {
		return cmp.Or(a.RequestedAt.Compare(b.RequestedAt), cmp.Compare(a.RentalID, b.RentalID))
	})
	return out, len(out), nil
}

// Get implements Index.
func (m *Memory) Get(_ context.Context, reference string) (Pending, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.payments[reference]
	if !ok || p.settled {
		return Pending{}, false, nil
	}
	return p.row, true, nil
}

// OpenAndOwed implements Index.
func (m *Memory) OpenAndOwed(ctx context.Context, cutoff time.Time) ([]Open, []OwedCancellation, int, error) {
	open, n, _ := m.OpenBefore(ctx, cutoff)
	owed, k, _ := m.OwedCancellations(ctx)
	return open, owed, n + k, nil
}

// OwedCancellations implements Index.
func (m *Memory) OwedCancellations(context.Context) ([]OwedCancellation, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []OwedCancellation
	for _, o := range m.owed {
		if !o.settled {
			out = append(out, o.row)
		}
	}
	SortOwed(out)
	return out, len(out), nil
}

// SortOwed sorts owed cancellations oldest first, those found owed in the same
// millisecond by reference.
func SortOwed(rows []OwedCancellation) {
	slices.SortFunc(rows, func(a, b OwedCancellation) int {
		return cmp.Or(a.OwedAt.Compare(b.OwedAt), cmp.Compare(a.Reference, b.Reference))
	})
}

// Backlog implements Index.
func (m *Memory) Backlog(ctx context.Context, cutoff time.Time) (Backlog, int, error) {
	open, owed, n, _ := m.OpenAndOwed(ctx, cutoff)
	m.mu.Lock()
	defer m.mu.Unlock()
	b := Backlog{Open: open, Owed: owed}
	for k, p := range m.parked {
		k.Due = p.due
		b.Parked = append(b.Parked, k)
	}
	SortParked(b.Parked)
	return b, n + len(b.Parked), nil
}

// Park keeps r for delivery again to consumer from due on, unless it is kept
// already (then it keeps its due time).
func (m *Memory) Park(_ context.Context, consumer string, r eventstore.Record, due time.Time) error {
	k := Parked{Consumer: consumer, StreamID: r.StreamID, Version: r.Version}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.parked[k]; !ok {
		m.parked[k] = &memoryParked{due: due.Truncate(time.Millisecond).UTC()}
	}
	return nil
}

// Unpark implements ParkedRows.
func (m *Memory) Unpark(_ context.Context, p Parked) error {
	p.Due = time.Time{}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parked, p)
	return nil
}

// Postpone implements ParkedRows.
func (m *Memory) Postpone(_ context.Context, p Parked, due time.Time) error {
	p.Due = time.Time{}
	m.mu.Lock()
	defer m.mu.Unlock()
	if row, ok := m.parked[p]; ok {
		row.due, row.attempts = due.Truncate(time.Millisecond).UTC(), row.attempts+1
	}
	return nil
}

// Row implements Index: the payments' lane holds the outstanding payments, by key,
// the others the open processes, by subject.
func (m *Memory) Row(_ context.Context, k Kind, subject string) (Row, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var since time.Time
	if k.Lane.Prefix == "" {
		p, ok := m.payments[k.Key(subject)]
		if !ok || p.settled {
			return Row{}, false, nil
		}
		since = p.row.PreparedAt
	} else {
		o, ok := m.open[subject]
		if !ok || o.completed {
			return Row{}, false, nil
		}
		since = o.row.RequestedAt
	}
	return Row{Kind: k.Name, Subject: subject, Since: since, Due: k.DueAt(since)}, true, nil
}
