package deadlines

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Row is one outstanding deadline: a row of a kind, about a subject, due at Due.
type Row struct {
	Kind    string    `json:"kind"`
	Subject string    `json:"subject"`
	Due     time.Time `json:"due"`
}

// Overdue reports whether the row is overdue at now: at its due time exactly it is
// not yet.
func (r Row) Overdue(now time.Time) bool { return r.Due.Before(now) }

// SortRows sorts rows by due time, then by kind and subject: the order of every
// listing and sweep.
func SortRows(rows []Row) { slices.SortFunc(rows, compareRows) }

func compareRows(a, b Row) int {
	return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Subject, b.Subject))
}

// Index is where the outstanding rows are found: each kind's rows in partitions of
// their own, spread over Shards write shards and ordered by due time, so that one
// read of a shard finds a kind's rows due in a span and nothing else. Reads are
// queries, never scans. The memory package has one for tests, the dynamo package
// the DynamoDB table; the deadlinestest package holds both to one contract.
type Index interface {
	// Shards returns how many partitions each kind's rows are spread over.
	Shards() int
	// Rows calls fn with the outstanding rows of span.Kind in span.Shard due in
	// [span.From, span.Before), soonest due first (rows due in the same
	// millisecond in any order), a page at a time, until fn returns false or none
	// are left, and returns how many items it read: it reads nothing but the rows
	// it passes to fn.
	Rows(ctx context.Context, span Span, fn func([]Row) bool) (read int, err error)
	// Row returns the outstanding row of kind k about subject, with a strongly
	// consistent read; ok is false when none is outstanding (never opened, or
	// settled).
	Row(ctx context.Context, k Kind, subject string) (row Row, ok bool, err error)
}

// Span is one read of an Index: the rows of one kind in one shard due in [From,
// Before); a zero bound is no bound.
type Span struct {
	Kind   Kind
	Shard  int
	From   time.Time
	Before time.Time
	// Page is how many items to ask for a page at a time; zero leaves it to the
	// index.
	Page int
}

// Has reports whether a row due at due is in the span's due times.
func (s Span) Has(due time.Time) bool {
	return (s.From.IsZero() || !due.Before(s.From)) && (s.Before.IsZero() || due.Before(s.Before))
}

// A Projection keeps an Index from records: what Apply does with a record follows
// from the kinds it was made with alone, whatever order the records come in and
// however often each comes.
type Projection interface {
	Index
	// Apply projects one record: an opening adds its row (stamped with its due
	// time), a settlement takes it out, leaving a marker, so that a late or replayed
	// opening never brings it back. Records no kind reads change nothing. A
	// record a kind cannot read is an error wrapping ErrCorruptRecord. Safe to
	// call any number of times for the same record.
	Apply(ctx context.Context, r Record) error
}
