package deadline

import (
	"context"
	"time"
)

// Index is what the sweep reads: the rows of every kind of deadline, in lanes of
// write-sharded partitions ordered by due time (Lane), queried one by one, never
// scanned. The Deadlines table (package deadlinetable) is the service's;
// memindex.Memory is one for tests. indextest holds the contract both keep.
type Index interface {
	// Shards returns how many partitions each lane is read by.
	Shards() int
	// LanePages calls fn with the outstanding rows of the kind whose lane lane is,
	// from the lane's shard, due before cutoff (the sweep's now; every row for a
	// zero cutoff), soonest due first, a page at a time, until fn returns false or
	// none are left, and returns how many items it read. It reads nothing but the
	// rows it passes to fn.
	LanePages(ctx context.Context, lane Lane, shard int, cutoff time.Time, fn func([]Row) bool) (int, error)
	// Row returns the outstanding row of kind k about subject, with a strongly
	// consistent read; ok is false when it is not outstanding (never opened, or
	// settled).
	Row(ctx context.Context, k Kind, subject string) (row Row, ok bool, err error)
}

// The lanes of the sweep's other parts, beside the kinds' lanes: the cancellations
// owed to the provider (package owed), stamped with the time each is due to be
// tried again, and the parked stream records (package parked), stamped with the
// time each is due for delivery again. No kind is named for them (NewKinds).
var (
	OwedLane   = LaneOf("owed")
	ParkedLane = LaneOf("parked")
)
