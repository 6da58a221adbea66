// Package parked is the part of the sweep that delivers the parked stream records
// again (docs/decisions/0017-parked-stream-records.md): a record of the Events
// table's stream that a consumer could not handle when it came is kept as a row of
// the to-do table's parked lane (deadline.ParkedLane), due for delivery again, so
// that the records behind it are not held up. Redelivery reads the rows that are
// due (Rows), delivers each to its consumer again through the Redeliverer
// (repair.Repairer.Redeliver), each stream's in version order, takes the delivered
// ones off the lane and puts the ones that fail again off by Backoff.
package parked

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Record is one parked record of the Events table's stream, kept for delivery
// again to one consumer (Consumer, an eventfilter name) from Due on.
type Record struct {
	Consumer string    `json:"consumer"`
	StreamID string    `json:"streamId"`
	Version  int64     `json:"version"`
	Due      time.Time `json:"due"`
}

// Sort sorts parked records by due time, then by consumer, stream and version.
func Sort(rows []Record) {
	slices.SortFunc(rows, func(a, b Record) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.StreamID, b.StreamID), cmp.Compare(a.Version, b.Version))
	})
}

// Backoff of a parked record whose redelivery failed: it is due again after as long
// as it has been since it was recorded, at least BackoffMin and at most BackoffMax,
// so that the waits about double from one attempt to the next.
const (
	BackoffMin = 5 * time.Second
	BackoffMax = 5 * time.Minute
)

// Backoff returns when a parked record recorded at recordedAt whose redelivery
// failed at now is due again.
func Backoff(now, recordedAt time.Time) time.Time {
	return now.Add(min(max(now.Sub(recordedAt), BackoffMin), BackoffMax))
}

// Rows is the parked lane as Redelivery reads and settles it:
// deadlinetable.Projection and memindex.Memory are.
type Rows interface {
	// Shards returns how many partitions the lane is read by.
	Shards() int
	// ParkedPages calls fn with the parked records of the lane's shard due before
	// cutoff (every one for a zero cutoff), soonest due first, a page at a time,
	// until fn returns false or none are left, and returns how many items it read:
	// every one it passes to fn.
	ParkedPages(ctx context.Context, shard int, cutoff time.Time, fn func([]Record) bool) (int, error)
	// Unpark takes a redelivered record off the lane. Safe to call twice.
	Unpark(ctx context.Context, p Record) error
	// Postpone moves a parked record's due time to due and counts the attempt;
	// it does nothing to a record that is no longer parked.
	Postpone(ctx context.Context, p Record, due time.Time) error
}

// Redeliverer delivers one stored record again to one stream consumer's handler;
// *repair.Repairer is one. It returns when the record was recorded.
type Redeliverer interface {
	Redeliver(ctx context.Context, consumer, streamID string, version int64) (recordedAt time.Time, err error)
}
