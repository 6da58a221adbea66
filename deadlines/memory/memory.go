// Package memory is a deadlines.Projection in memory: an Index over the kinds it
// is made with, projected from records exactly as the DynamoDB table is (package
// deadlinestest holds both to one contract), for tests and examples that need no
// AWS.
package memory

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// Index is a deadlines.Projection in memory. It is safe for concurrent use.
type Index struct {
	shards int
	kinds  deadlines.Kinds

	mu   sync.Mutex
	rows map[string]*row // by key
}

type row struct {
	kind     deadlines.Kind
	subject  string
	due      time.Time // to the millisecond, as a table keeps it
	position int64
	settled  bool
}

var _ deadlines.Projection = (*Index)(nil)

// New returns an empty index over kinds, its rows spread over shards partitions (at
// least 1).
func New(kinds deadlines.Kinds, shards int) *Index {
	return &Index{shards: max(shards, 1), kinds: kinds, rows: map[string]*row{}}
}

// Shards implements deadlines.Index.
func (m *Index) Shards() int { return m.shards }

func (m *Index) shardOf(subject string) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(m.shards))
}

// Apply implements deadlines.Projection: a row a kind opens is outstanding until
// it settles; a settlement is final, but for an ordered kind, whose rows follow
// their stream's positions: a later opening opens a settled row again or moves an
// outstanding one's due time, and a record older than what the row reflects
// changes nothing. A kind that takes another over moves that kind's outstanding
// row at the same key into its own.
func (m *Index) Apply(_ context.Context, r deadlines.Record) error {
	changes, err := m.kinds.Changes(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range changes {
		k := c.Kind
		due := k.DueAt(c.Change, r.At).Truncate(time.Millisecond)
		key := k.Key(c.Subject)
		cur, exists := m.rows[key]
		later := exists && cur.position < r.Position
		switch {
		case !exists:
			m.rows[key] = &row{kind: k, subject: c.Subject, due: due, position: r.Position, settled: c.Settled}
		case c.Settled && (!k.Ordered || later):
			cur.kind, cur.position, cur.settled = k, r.Position, true
		case c.Settled:
		case !cur.settled && k.Takes != "" && cur.kind.Name == k.Takes:
			cur.kind, cur.due = k, due // taken over
		case k.Ordered && later && cur.kind.Name == k.Name:
			cur.due, cur.position, cur.settled = due, r.Position, false // opened again, or put off
		}
	}
	return nil
}

// Rows implements deadlines.Index, in pages of span.Page rows (all in one for 0).
func (m *Index) Rows(_ context.Context, span deadlines.Span, fn func([]deadlines.Row) bool) (int, error) {
	m.mu.Lock()
	var rows []deadlines.Row
	for _, r := range m.rows {
		if !r.settled && r.kind.Name == span.Kind.Name && m.shardOf(r.subject) == span.Shard && span.Has(r.due) {
			rows = append(rows, deadlines.Row{Kind: r.kind.Name, Subject: r.subject, Due: r.due})
		}
	}
	m.mu.Unlock()
	// Rows due in the same millisecond come in an order of the index's own, as a
	// table's may: here the reverse of their subjects'.
	slices.SortFunc(rows, func(a, b deadlines.Row) int { return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(b.Subject, a.Subject)) })
	page := span.Page
	if page <= 0 {
		page = max(len(rows), 1)
	}
	read := 0
	for len(rows) > 0 {
		n := min(page, len(rows))
		read += n
		if !fn(rows[:n]) {
			break
		}
		rows = rows[n:]
	}
	return read, nil
}

// Row implements deadlines.Index.
func (m *Index) Row(_ context.Context, k deadlines.Kind, subject string) (deadlines.Row, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[k.Key(subject)]
	if !ok || r.settled || r.kind.Name != k.Name {
		return deadlines.Row{}, false, nil
	}
	return deadlines.Row{Kind: k.Name, Subject: subject, Due: r.due}, true, nil
}
