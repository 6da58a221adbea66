// Package memindex is the to-do list in memory, beside the machinery: a
// deadline.Index over the kinds it is given, with the owed cancellations' lane
// (owed.Rows) and the parked records' lane (parked.Rows), projected from event
// records exactly as the Deadlines table is (package indextest holds both to the
// same contract), for tests of the sweep that need no emulator. It knows no kind
// of the service: tests that need them declare them (deadlinekinds.Declare) and
// give them to NewWith.
package memindex

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Memory is a deadline.Index in memory over a set of kinds. It is safe for
// concurrent use.
type Memory struct {
	shards int
	kinds  deadline.Kinds

	mu     sync.Mutex
	rows   map[string]*memoryRow           // by table key
	owed   map[string]*memoryOwed          // by reference
	parked map[parked.Record]*memoryParked // by consumer, stream and version (Due zero)
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
	row     owed.Cancellation
	settled bool
}

// NewWith returns an empty index of shards partitions (at least 1) over kinds.
func NewWith(shards int, kinds deadline.Kinds) *Memory {
	return &Memory{shards: max(shards, 1), kinds: kinds, rows: map[string]*memoryRow{},
		owed: map[string]*memoryOwed{}, parked: map[parked.Record]*memoryParked{}}
}

var (
	_ deadline.Index = (*Memory)(nil)
	_ owed.Rows      = (*Memory)(nil)
	_ parked.Rows    = (*Memory)(nil)
)

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
// puts it off (owed.Backoff from the record's time; never earlier). Records of other types change
// nothing. A record of one of those types that does not decode is an error wrapping
// eventstore.ErrCorruptRecord.
func (m *Memory) Apply(_ context.Context, r eventstore.Record) error {
	if cc, ok, err := owed.ChangeOf(r); err != nil || ok {
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
			m.owed[cc.Reference] = &memoryOwed{row: owed.Cancellation{Reference: cc.Reference, RentalID: cc.RentalID}, settled: true}
		case cc.Tries > 0 && exists:
			if due := r.RecordedAt.Add(owed.Backoff(cc.Tries)).Truncate(time.Millisecond).UTC(); due.After(o.row.Due) {
				o.row.Due = due
			}
		case cc.Tries > 0:
		case !exists:
			at := r.RecordedAt.Truncate(time.Millisecond).UTC()
			m.owed[cc.Reference] = &memoryOwed{row: owed.Cancellation{Reference: cc.Reference, RentalID: cc.RentalID, OwedAt: at, Due: at}}
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
		case !c.Settled && row.settled && c.Kind.Ordered && row.kind.Name == c.Kind.Name && row.version < r.Version:
			row.stamp, row.version, row.settled = c.Kind.Stamp(c.Kind.SinceFor(c.Change, r.RecordedAt)), r.Version, false // opened again
		}
	}
	return nil
}

// LanePages implements deadline.Index, in one page.
func (m *Memory) LanePages(_ context.Context, lane deadline.Lane, shard int, cutoff time.Time, fn func([]deadline.Row) bool) (int, error) {
	m.mu.Lock()
	var rows []deadline.Row
	for _, row := range m.rows {
		if !row.settled && row.kind.Lane() == lane && m.shardOf(row.subject) == shard && (cutoff.IsZero() || row.stamp < cutoff.UnixMilli()) {
			since := row.kind.SinceOf(row.stamp)
			rows = append(rows, deadline.Row{Kind: row.kind.Name, Subject: row.subject, Since: since, Due: row.kind.DueAt(since)})
		}
	}
	m.mu.Unlock()
	deadline.SortRows(rows)
	if len(rows) > 0 {
		fn(rows)
	}
	return len(rows), nil
}

// OwedPages implements owed.Rows, limit rows a page, soonest due first.
func (m *Memory) OwedPages(_ context.Context, shard, limit int, fn func([]owed.Cancellation) bool) (int, error) {
	m.mu.Lock()
	var rows []owed.Cancellation
	for _, o := range m.owed {
		if !o.settled && m.shardOf(o.row.Reference) == shard {
			rows = append(rows, o.row)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(rows, func(a, b owed.Cancellation) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Reference, b.Reference))
	})
	read := 0
	for page := range slices.Chunk(rows, max(limit, 1)) {
		read += len(page)
		if !fn(page) {
			break
		}
	}
	return read, nil
}

// ParkedPages implements parked.Rows, in one page.
func (m *Memory) ParkedPages(_ context.Context, shard int, cutoff time.Time, fn func([]parked.Record) bool) (int, error) {
	m.mu.Lock()
	var rows []parked.Record
	for k, row := range m.parked {
		if m.shardOf(k.StreamID) == shard && (cutoff.IsZero() || row.due.Before(cutoff)) {
			k.Due = row.due
			rows = append(rows, k)
		}
	}
	m.mu.Unlock()
	parked.Sort(rows)
	if len(rows) > 0 {
		fn(rows)
	}
	return len(rows), nil
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
			if _, err := m.LanePages(ctx, lane, s, time.Time{}, func(rows []deadline.Row) bool {
				for _, r := range rows {
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

// OwedCancellations returns every cancellation owed to the provider, oldest first.
func (m *Memory) OwedCancellations(context.Context) ([]owed.Cancellation, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []owed.Cancellation
	for _, o := range m.owed {
		if !o.settled {
			out = append(out, o.row)
		}
	}
	owed.Sort(out)
	return out, len(out), nil
}

// ParkedRecords returns every parked record, soonest due first.
func (m *Memory) ParkedRecords() []parked.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []parked.Record
	for k, p := range m.parked {
		k.Due = p.due
		out = append(out, k)
	}
	parked.Sort(out)
	return out
}

// Park keeps r for delivery again to consumer from due on, unless it is kept
// already (then it keeps its due time).
func (m *Memory) Park(_ context.Context, consumer string, r eventstore.Record, due time.Time) error {
	k := parked.Record{Consumer: consumer, StreamID: r.StreamID, Version: r.Version}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.parked[k]; !ok {
		m.parked[k] = &memoryParked{due: due.Truncate(time.Millisecond).UTC()}
	}
	return nil
}

// Unpark implements parked.Rows.
func (m *Memory) Unpark(_ context.Context, p parked.Record) error {
	p.Due = time.Time{}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parked, p)
	return nil
}

// Postpone implements parked.Rows.
func (m *Memory) Postpone(_ context.Context, p parked.Record, due time.Time) error {
	p.Due = time.Time{}
	m.mu.Lock()
	defer m.mu.Unlock()
	if row, ok := m.parked[p]; ok {
		row.due, row.attempts = due.Truncate(time.Millisecond).UTC(), row.attempts+1
	}
	return nil
}
