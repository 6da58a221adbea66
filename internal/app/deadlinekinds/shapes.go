package deadlinekinds

import (
	"cmp"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/app/parked"
)

// Pending and Open are the rows of the first two kinds the service declared (a
// payment due, a process stuck) in the shapes the operator API and the CLI read
// them in (GET /payments/pending, GET /processes/stuck); the sweep reads
// deadlines.Row.

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

// SortOpen sorts open processes oldest first, rentals requested in the same
// millisecond by id.
func SortOpen(rows []Open) {
	slices.SortFunc(rows, func(a, b Open) int {
		return cmp.Or(a.RequestedAt.Compare(b.RequestedAt), cmp.Compare(a.RentalID, b.RentalID))
	})
}

// Backlog is what a look at the open processes', the owed cancellations' and the
// parked records' rows finds (rentalctl pending's backlog).
type Backlog struct {
	Open   []Open
	Owed   []OwedCancellation
	Parked []parked.Record
}
