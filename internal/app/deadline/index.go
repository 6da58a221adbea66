package deadline

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Index is what the sweep reads: the rows of every kind of deadline, in lanes of
// write-sharded partitions ordered by due time (Lane), queried one by one, never
// scanned. The Deadlines table (package pendingtable) is the service's;
// memindex.Memory is one for tests. indextest holds the contract both keep.
type Index interface {
	// Shards returns how many partitions each lane is read by.
	Shards() int
	// LanePages calls fn with the rows of the lane's shard due before cutoff (the
	// sweep's now; every row for a zero cutoff), soonest due first, a page at a
	// time, until fn returns false or none are left, and returns how many items it
	// read: for a kind's lane, the outstanding rows of that kind (Rows); for
	// OwedLane, the owed cancellations (Owed); for ParkedLane, the parked records
	// (Parked). It reads nothing but the rows it passes to fn.
	LanePages(ctx context.Context, lane Lane, shard int, cutoff time.Time, fn func(LanePage) bool) (int, error)
	// Row returns the outstanding row of kind k about subject, with a strongly
	// consistent read; ok is false when it is not outstanding (never opened, or
	// settled).
	Row(ctx context.Context, k Kind, subject string) (row Row, ok bool, err error)
}

// The lanes of the sweep's own rows, beside the kinds' lanes: the cancellations
// owed to the provider, stamped with the time each is due to be tried again, and
// the parked stream records, stamped with the time each is due for delivery
// again. No kind is named for them.
var (
	OwedLane   = LaneOf("owed")
	ParkedLane = LaneOf("parked")
)

// LanePage is one page of a lane's partition.
type LanePage struct {
	Rows   []Row
	Owed   []OwedCancellation
	Parked []Parked
}

// Backlog is what a look at the open processes' partitions finds.
type Backlog struct {
	Open   []Open
	Owed   []OwedCancellation
	Parked []Parked
}

// Parked is one record of the Events table's stream that a consumer could not
// handle when it came, kept for delivery again to that consumer (Consumer, an
// eventfilter name) by the sweep, from Due on, rather than holding up the records
// behind it (docs/decisions/0017-parked-stream-records.md).
type Parked struct {
	Consumer string    `json:"consumer"`
	StreamID string    `json:"streamId"`
	Version  int64     `json:"version"`
	Due      time.Time `json:"due"`
}

// SortParked sorts parked records by due time, then by consumer, stream and
// version.
func SortParked(rows []Parked) {
	slices.SortFunc(rows, func(a, b Parked) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.StreamID, b.StreamID), cmp.Compare(a.Version, b.Version))
	})
}

// OwedCancellation is one payment cancelled here whose cancellation the provider
// has not confirmed yet (payment.CancellationOwedAtProvider), with the time it was
// found owed. The sweep tries it again, from Due on, until it is settled: by the
// provider's confirmation (payment.CancellationDoneAtProvider) or by a success
// meanwhile (payment.PaymentSucceededAfterCancellation), which is refunded. A retry
// the provider left unanswered (payment.CancellationStillOwed) puts Due off by
// OwedBackoff. The table keeps one time per row: once a retry was put off, OwedAt
// reads as Due from it.
type OwedCancellation struct {
	Reference string    `json:"paymentReference"`
	RentalID  string    `json:"rentalId"`
	OwedAt    time.Time `json:"owedAt"`
	Due       time.Time `json:"due"`
}

// Backoff of an owed cancellation whose retry the provider left unanswered: the
// tries-th such retry puts the next one off by OwedBackoffMin doubled for each try
// before it, at most OwedBackoffMax. With a sweep a minute, a provider that stays
// down is asked about 7 times in its first hour, then once an hour, rather than 60
// times an hour.
const (
	OwedBackoffMin = time.Minute
	OwedBackoffMax = time.Hour
)

// OwedBackoff returns how long after its tries-th unanswered retry an owed
// cancellation is due again: from OwedBackoffMin, doubling, up to OwedBackoffMax.
func OwedBackoff(tries int) time.Duration {
	d := OwedBackoffMin
	for i := 1; i < tries && d < OwedBackoffMax; i++ {
		d *= 2
	}
	return min(d, OwedBackoffMax)
}

// Pending, Open and Backlog are the rows of the first two kinds the service declared
// (deadlinekinds: a payment due, a process stuck) in the shapes the operator API and
// the CLI read them in before kinds existed (GET /payments/pending); the sweep reads
// Row. OwedCancellation and Parked are the backlog the sweep works off besides the
// kinds' rows.

// Pending is one outstanding payment.
type Pending struct {
	Reference  string    `json:"paymentReference"`
	RentalID   string    `json:"rentalId"`
	PreparedAt time.Time `json:"preparedAt"`
}

// Open is one rental whose process has not completed, with the time its bike was
// requested.
type Open struct {
	RentalID    string    `json:"rentalId"`
	RequestedAt time.Time `json:"requestedAt"`
}

// SortOwed sorts owed cancellations oldest first, those found owed in the same
// millisecond by reference.
func SortOwed(rows []OwedCancellation) {
	slices.SortFunc(rows, func(a, b OwedCancellation) int {
		return cmp.Or(a.OwedAt.Compare(b.OwedAt), cmp.Compare(a.Reference, b.Reference))
	})
}
