// Package memindex is a deadline.Index in memory, projected from event records
// exactly as the Deadlines table is (package indextest holds both to the same
// contract), for tests of the sweep that need no emulator.
package memindex

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Memory is a deadline.Index in memory over a set of kinds. It is safe for
// concurrent use.
type Memory struct {
	shards int
	kinds  deadline.Kinds

	mu     sync.Mutex
	rows   map[string]*memoryRow             // by table key
	owed   map[string]*memoryOwed            // by reference
	parked map[deadline.Parked]*memoryParked // by consumer, stream and version (Due zero)
}

type memoryRow struct {
	kind    deadline.Kind
	subject string
	stamp   int64 // as the table stamps it: Kind.Stamp
	version int64
	settled bool
}

type memoryParked struct {
	due      time.Time
	attempts int
}

type memoryOwed struct {
	row     deadline.OwedCancellation
	settled bool
}

// New returns an empty index of shards partitions (at least 1) over the service's
// kinds under the default policy.
func New(shards int) *Memory {
	return NewWith(shards, deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{}))
}

// NewWith returns an empty index of shards partitions (at least 1) over kinds.
func NewWith(shards int, kinds deadline.Kinds) *Memory {
	return &Memory{shards: max(shards, 1), kinds: kinds, rows: map[string]*memoryRow{},
		owed: map[string]*memoryOwed{}, parked: map[deadline.Parked]*memoryParked{}}
}

var _ deadline.Index = (*Memory)(nil)

// Shards implements deadline.Index.
func (m *Memory) Shards() int { return m.shards }

func (m *Memory) shardOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(m.shards))
}

// Apply projects one record: a row a kind opens is outstanding until it settles,
// and a settlement is final (for an ordered kind, unless a later record settles it
// again), whatever order they come in; a cancellation owed to the provider stays
// owed until it is settled, which is final too, and a retry of it left unanswered
// puts it off (deadline.OwedBackoff from the record's time; never earlier). Records of other types change
// nothing. A record of one of those types that does not decode is an error wrapping
// eventstore.ErrCorruptRecord.
func (m *Memory) Apply(_ context.Context, r eventstore.Record) error {
	if cc, ok, err := deadlinekinds.CancellationChangeOf(r); err != nil || ok {
		if err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		o, exists := m.owed[cc.Reference]
		switch {
		case cc.Settled && exists:
			o.settled = true
		case cc.Settled:
			m.owed[cc.Reference] = &memoryOwed{row: deadline.OwedCancellation{Reference: cc.Reference, RentalID: cc.RentalID}, settled: true}
		case cc.Tries > 0 && exists:
			if due := r.RecordedAt.Add(deadline.OwedBackoff(cc.Tries)).Truncate(time.Millisecond).UTC(); due.After(o.row.Due) {
				o.row.Due = due
			}
		case cc.Tries > 0:
		case !exists:
			at := r.RecordedAt.Truncate(time.Millisecond).UTC()
			m.owed[cc.Reference] = &memoryOwed{row: deadline.OwedCancellation{Reference: cc.Reference, RentalID: cc.RentalID, OwedAt: at, Due: at}}
		}
		return nil
	}
	changes, err := m.kinds.Changes(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range changes {
		key := c.Kind.Key(c.Subject)
		row, exists := m.rows[key]
		switch {
		case !exists:
			m.rows[key] = &memoryRow{kind: c.Kind, subject: c.Subject, stamp: c.Kind.Stamp(c.Kind.SinceFor(c.Change, r.RecordedAt)), version: r.Version, settled: c.Settled}
		case !c.Settled && !row.settled && c.Kind.Takes != "" && row.kind.Name == c.Kind.Takes:
			row.kind, row.stamp = c.Kind, c.Kind.Stamp(c.Kind.SinceFor(c.Change, r.RecordedAt)) // taken over
		case c.Settled && (!c.Kind.Ordered || row.version < r.Version):
			row.kind, row.version, row.settled = c.Kind, r.Version, true
		}
	}
	return nil
}

// LanePages implements deadline.Index, in one page.
func (m *Memory) LanePages(_ context.Context, lane deadline.Lane, shard int, cutoff time.Time, fn func(deadline.LanePage) bool) (int, error) {
	m.mu.Lock()
	var p deadline.LanePage
	for _, row := range m.rows {
		if !row.settled && row.kind.Lane() == lane && m.shardOf(row.subject) == shard && (cutoff.IsZero() || row.stamp < cutoff.UnixMilli()) {
			since := row.kind.SinceOf(row.stamp)
			p.Rows = append(p.Rows, deadline.Row{Kind: row.kind.Name, Subject: row.subject, Since: since, Due: row.kind.DueAt(since)})
		}
	}
	before := func(t time.Time) bool { return cutoff.IsZero() || t.Before(cutoff) }
	switch lane {
	case deadline.OwedLane:
		for _, o := range m.owed {
			if !o.settled && m.shardOf(o.row.Reference) == shard && before(o.row.Due) {
				p.Owed = append(p.Owed, o.row)
			}
		}
	case deadline.ParkedLane:
		for k, row := range m.parked {
			if m.shardOf(k.StreamID) == shard && before(row.due) {
				k.Due = row.due
				p.Parked = append(p.Parked, k)
			}
		}
	}
	m.mu.Unlock()
	deadline.SortRows(p.Rows)
	deadline.SortOwed(p.Owed)
	deadline.SortParked(p.Parked)
	n := len(p.Rows) + len(p.Owed) + len(p.Parked)
	if n > 0 {
		fn(p)
	}
	return n, nil
}

// Row implements deadline.Index.
func (m *Memory) Row(_ context.Context, k deadline.Kind, subject string) (deadline.Row, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	row, ok := m.rows[k.Key(subject)]
	if !ok || row.settled || row.kind.Name != k.Name {
		return deadline.Row{}, false, nil
	}
	since := k.SinceOf(row.stamp)
	return deadline.Row{Kind: k.Name, Subject: subject, Since: since, Due: k.DueAt(since)}, true, nil
}

// Deadlines implements deadline.Lister.
func (m *Memory) Deadlines(ctx context.Context, q deadline.Query) ([]deadline.Row, error) {
	var out []deadline.Row
	for _, lane := range m.kinds.Lanes() {
		for s := range m.shards {
			if _, err := m.LanePages(ctx, lane, s, time.Time{}, func(p deadline.LanePage) bool {
				for _, r := range p.Rows {
					if k, ok := m.kinds.ByName(r.Kind); ok {
						r.Kind = k.Listed()
					}
					if (q.Kind == "" || r.Kind == q.Kind) && (q.Overdue == nil || *q.Overdue == r.Due.Before(q.Now)) {
						out = append(out, r)
					}
				}
				return true
			}); err != nil {
				return nil, err
			}
		}
	}
	deadline.OverdueFirst(out, q.Now)
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// rowsOf returns the outstanding rows of the kind named name whose opening time is
// before cutoff (all of them for a zero cutoff), in shard (every shard if -1).
func (m *Memory) rowsOf(name string, shard int, cutoff time.Time) []deadline.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []deadline.Row
	for _, row := range m.rows {
		if row.settled || row.kind.Name != name || (shard >= 0 && m.shardOf(row.subject) != shard) {
			continue
		}
		since := row.kind.SinceOf(row.stamp)
		if cutoff.IsZero() || since.Before(cutoff) {
			out = append(out, deadline.Row{Kind: name, Subject: row.subject, Since: since, Due: row.kind.DueAt(since)})
		}
	}
	slices.SortFunc(out, func(a, b deadline.Row) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Subject, b.Subject))
	})
	return out
}

// OverduePages calls fn with the outstanding payments of shard prepared before
// cutoff, oldest first, in one page.
func (m *Memory) OverduePages(_ context.Context, shard int, cutoff time.Time, fn func([]deadline.Pending) bool) (int, error) {
	rows := m.rowsOf(deadlinekinds.Payment, shard, cutoff)
	var out []deadline.Pending
	for _, r := range rows {
		out = append(out, deadline.Pending{Reference: deadlinekinds.PaymentPrefix + r.Subject, RentalID: r.Subject, PreparedAt: r.Since})
	}
	if len(out) > 0 {
		fn(out)
	}
	return len(out), nil
}

// OpenBefore returns every rental whose process has been open since before the
// cutoff, oldest first.
func (m *Memory) OpenBefore(_ context.Context, cutoff time.Time) ([]deadline.Open, int, error) {
	var out []deadline.Open
	for _, r := range m.rowsOf(deadlinekinds.Stuck, -1, cutoff) {
		out = append(out, deadline.Open{RentalID: r.Subject, RequestedAt: r.Since})
	}
	return out, len(out), nil
}

// Get returns the outstanding payment with the given reference.
func (m *Memory) Get(ctx context.Context, reference string) (deadline.Pending, bool, error) {
	k, subject, ok := m.kinds.OfKey(reference)
	if !ok || k.Name != deadlinekinds.Payment {
		return deadline.Pending{}, false, nil
	}
	row, ok, err := m.Row(ctx, k, subject)
	if !ok || err != nil {
		return deadline.Pending{}, false, err
	}
	return deadline.Pending{Reference: reference, RentalID: subject, PreparedAt: row.Since}, true, nil
}

// OpenAndOwed returns OpenBefore and OwedCancellations.
func (m *Memory) OpenAndOwed(ctx context.Context, cutoff time.Time) ([]deadline.Open, []deadline.OwedCancellation, int, error) {
	open, n, _ := m.OpenBefore(ctx, cutoff)
	owed, k, _ := m.OwedCancellations(ctx)
	return open, owed, n + k, nil
}

// OwedCancellations returns every cancellation owed to the provider, oldest first.
func (m *Memory) OwedCancellations(context.Context) ([]deadline.OwedCancellation, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []deadline.OwedCancellation
	for _, o := range m.owed {
		if !o.settled {
			out = append(out, o.row)
		}
	}
	deadline.SortOwed(out)
	return out, len(out), nil
}

// Backlog returns OpenAndOwed and the parked records.
func (m *Memory) Backlog(ctx context.Context, cutoff time.Time) (deadline.Backlog, int, error) {
	open, owed, n, _ := m.OpenAndOwed(ctx, cutoff)
	m.mu.Lock()
	defer m.mu.Unlock()
	b := deadline.Backlog{Open: open, Owed: owed}
	for k, p := range m.parked {
		k.Due = p.due
		b.Parked = append(b.Parked, k)
	}
	deadline.SortParked(b.Parked)
	return b, n + len(b.Parked), nil
}

// Park keeps r for delivery again to consumer from due on, unless it is kept
// already (then it keeps its due time).
func (m *Memory) Park(_ context.Context, consumer string, r eventstore.Record, due time.Time) error {
	k := deadline.Parked{Consumer: consumer, StreamID: r.StreamID, Version: r.Version}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.parked[k]; !ok {
		m.parked[k] = &memoryParked{due: due.Truncate(time.Millisecond).UTC()}
	}
	return nil
}

// Unpark implements deadline.ParkedRows.
func (m *Memory) Unpark(_ context.Context, p deadline.Parked) error {
	p.Due = time.Time{}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parked, p)
	return nil
}

// Postpone implements deadline.ParkedRows.
func (m *Memory) Postpone(_ context.Context, p deadline.Parked, due time.Time) error {
	p.Due = time.Time{}
	m.mu.Lock()
	defer m.mu.Unlock()
	if row, ok := m.parked[p]; ok {
		row.due, row.attempts = due.Truncate(time.Millisecond).UTC(), row.attempts+1
	}
	return nil
}
