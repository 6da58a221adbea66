package deadlinekinds

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/parked"
)

// Listing reads the service's to-do list in the shapes its operators read it: the
// deadlines module's Index of the service's kinds. Each listing is a query per
// shard of a kind's rows (deadlines.List, Index.Rows), never a scan, and reads about
// what it returns.
type Listing struct {
	Index deadlines.Index
	Kinds deadlines.Kinds
}

// kind returns the declared kind named name.
func (l Listing) kind(name string) (deadlines.Kind, error) {
	k, ok := l.Kinds.ByName(name)
	if !ok {
		return deadlines.Kind{}, fmt.Errorf("deadlinekinds: no %s kind declared", name)
	}
	return k, nil
}

// Payments returns up to limit outstanding payments, oldest first, those overdue at
// now only if overdue is set; more reports that more matched.
func (l Listing) Payments(ctx context.Context, overdue bool, now time.Time, limit int) (rows []Pending, more bool, err error) {
	k, err := l.kind(Payment)
	if err != nil {
		return nil, false, err
	}
	q := deadlines.Query{Kind: Payment, Limit: limit}
	if overdue {
		q.Overdue, q.Now = &overdue, now
	}
	page, err := deadlines.List(ctx, l.Index, l.Kinds, q)
	for _, r := range page.Rows {
		rows = append(rows, PendingOf(k, r))
	}
	return rows, page.Next != "", err
}

// PendingOf is the outstanding payment of a row of the payment kind k.
func PendingOf(k deadlines.Kind, r deadlines.Row) Pending {
	return Pending{Reference: k.Key(r.Subject), RentalID: r.Subject, PreparedAt: r.Due.Add(-k.After)}
}

// all reads every outstanding row of the kind named name due before before (every
// one for a zero time), from every shard, soonest due first, and how many items it
// read.
func (l Listing) all(ctx context.Context, name string, before time.Time) ([]deadlines.Row, int, error) {
	k, err := l.kind(name)
	if err != nil {
		return nil, 0, err
	}
	var rows []deadlines.Row
	read := 0
	for shard := range l.Index.Shards() {
		n, err := l.Index.Rows(ctx, deadlines.Span{Kind: k, Shard: shard, Before: before}, func(page []deadlines.Row) bool {
			rows = append(rows, page...)
			return true
		})
		read += n
		if err != nil {
			return nil, read, err
		}
	}
	deadlines.SortRows(rows)
	return rows, read, nil
}

// OwedCancellations returns every cancellation owed to the provider, oldest first,
// and how many items it read.
func (l Listing) OwedCancellations(ctx context.Context) ([]OwedCancellation, int, error) {
	rows, read, err := l.all(ctx, Cancellation, time.Time{})
	out := make([]OwedCancellation, len(rows))
	for i, r := range rows {
		out[i] = OwedCancellationOf(r)
	}
	return out, read, err
}

// Parked returns every parked stream record, soonest due first, and how many items
// it read.
func (l Listing) Parked(ctx context.Context) ([]parked.Record, int, error) {
	rows, read, err := l.all(ctx, Redelivery, time.Time{})
	out := make([]parked.Record, 0, len(rows))
	for _, r := range rows {
		if p, ok := ParkedOf(r); ok {
			out = append(out, p)
		}
	}
	parked.Sort(out)
	return out, read, err
}

// Backlog returns the open processes stuck before cutoff (the process-stuck rows
// opened before it), every cancellation owed to the provider and every parked
// record, each list oldest (or soonest due) first, and how many items it read.
func (l Listing) Backlog(ctx context.Context, cutoff time.Time) (Backlog, int, error) {
	stuck, err := l.kind(Stuck)
	if err != nil {
		return Backlog{}, 0, err
	}
	var b Backlog
	rows, read, err := l.all(ctx, Stuck, stuck.DueAt(deadlines.Change{}, cutoff))
	for _, r := range rows {
		b.Open = append(b.Open, Open{RentalID: r.Subject, RequestedAt: r.Due.Add(-stuck.After)})
	}
	if err == nil {
		var n int
		b.Owed, n, err = l.OwedCancellations(ctx)
		read += n
	}
	if err == nil {
		var n int
		b.Parked, n, err = l.Parked(ctx)
		read += n
	}
	SortOpen(b.Open)
	return b, read, err
}
