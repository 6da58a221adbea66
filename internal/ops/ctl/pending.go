package ctl

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
)

// PendingQuery is what pending lists: at most Limit payments, the oldest, and with
// Overdue only those past their deadline.
type PendingQuery struct {
	Overdue bool
	Limit   int
}

// PendingRow is one payment in the lists of pending and sweep --dry-run; its first
// four fields are those of GET /payments/pending.
type PendingRow struct {
	PaymentReference string    `json:"paymentReference"`
	RentalID         string    `json:"rentalId"`
	PreparedAt       time.Time `json:"preparedAt"`
	AgeSeconds       int64     `json:"ageSeconds"`
	Deadline         time.Time `json:"deadline"`
	Overdue          bool      `json:"overdue"`
	OverdueSeconds   int64     `json:"overdueSeconds,omitempty"`
}

// PendingList is what pending finds.
type PendingList struct {
	Now         time.Time    `json:"now"`
	TimeoutMs   int64        `json:"timeoutMs"`
	OverdueOnly bool         `json:"overdueOnly"`
	Payments    []PendingRow `json:"payments"`
	Count       int          `json:"count"`
	Limit       int          `json:"limit"`
	// More reports that more payments than Limit matched.
	More bool `json:"more"`
}

// Pending lists the outstanding payments, oldest first, through the
// to-do table index (a query per shard, never a scan), with each one's
// deadline as the sweep has it.
func (s *Stack) Pending(ctx context.Context, q PendingQuery) (PendingList, error) {
	projection, err := s.pendingReader()
	if err != nil {
		return PendingList{}, err
	}
	policy, err := s.policy()
	if err != nil {
		return PendingList{}, err
	}
	now := time.Now()
	var rows []deadlinekinds.Pending
	if q.Overdue {
		rows, err = projection.Overdue(ctx, policy.Cutoff(now), q.Limit+1)
	} else {
		rows, err = projection.List(ctx, q.Limit+1)
	}
	if err != nil {
		return PendingList{}, fmt.Errorf("pending: %s: %w", s.deadlinesTable(), err)
	}
	rows, more := limited(rows, q.Limit)
	return PendingList{Now: now.UTC(), TimeoutMs: policy.PaymentTimeout().Milliseconds(), OverdueOnly: q.Overdue,
		Payments: rowsOf(rows, now, policy), Count: len(rows), Limit: q.Limit, More: more}, nil
}

// DryRun is what sweep --dry-run finds: the payments a sweep as of Now would send
// CancelRentalPayment for.
type DryRun struct {
	DryRun    bool         `json:"dryRun"`
	Now       time.Time    `json:"now"`
	Cutoff    time.Time    `json:"cutoff"`
	TimeoutMs int64        `json:"timeoutMs"`
	Payments  []PendingRow `json:"payments"`
	Count     int          `json:"count"`
	Limit     int          `json:"limit"`
	More      bool         `json:"more"`
}

// SweepDryRun lists, at most limit and the oldest first, what a sweep as of now
// would send CancelRentalPayment for. It sends nothing.
func (s *Stack) SweepDryRun(ctx context.Context, now time.Time, limit int) (DryRun, error) {
	projection, err := s.pendingReader()
	if err != nil {
		return DryRun{}, err
	}
	policy, err := s.policy()
	if err != nil {
		return DryRun{}, err
	}
	cutoff := policy.Cutoff(now)
	rows, err := projection.Overdue(ctx, cutoff, limit+1)
	if err != nil {
		return DryRun{}, fmt.Errorf("sweep --dry-run: %w", err)
	}
	rows, more := limited(rows, limit)
	return DryRun{DryRun: true, Now: now.UTC(), Cutoff: cutoff.UTC(), TimeoutMs: policy.PaymentTimeout().Milliseconds(),
		Payments: rowsOf(rows, now, policy), Count: len(rows), Limit: limit, More: more}, nil
}

// limited trims rows read with a limit of limit+1 to limit, and reports whether
// there were more.
func limited[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

func rowsOf(rows []deadlinekinds.Pending, now time.Time, policy deadline.Policy) []PendingRow {
	out := make([]PendingRow, len(rows))
	for i, r := range rows {
		due := policy.Deadline(r.PreparedAt)
		out[i] = PendingRow{PaymentReference: r.Reference, RentalID: r.RentalID, PreparedAt: r.PreparedAt,
			AgeSeconds: int64(now.Sub(r.PreparedAt).Round(time.Second) / time.Second), Deadline: due.UTC()}
		// Overdue as the sweep has it.
		if policy.Overdue(r.PreparedAt, now) {
			out[i].Overdue = true
			out[i].OverdueSeconds = int64(now.Sub(due).Round(time.Second) / time.Second)
		}
	}
	return out
}

// OwedCancellation is one cancellation owed to the payment provider, with its age.
type OwedCancellation struct {
	owed.Cancellation
	AgeSeconds int64 `json:"ageSeconds"`
}

// CancellationList is what cancellations finds.
type CancellationList struct {
	Now           time.Time          `json:"now"`
	Cancellations []OwedCancellation `json:"cancellations"`
	Count         int                `json:"count"`
}

// Cancellations lists the cancellations owed to the payment provider, oldest
// first, through the to-do table index. It only reads.
func (s *Stack) Cancellations(ctx context.Context) (CancellationList, error) {
	projection, err := s.pendingReader()
	if err != nil {
		return CancellationList{}, err
	}
	rows, _, err := projection.OwedCancellations(ctx)
	if err != nil {
		return CancellationList{}, fmt.Errorf("cancellations: %s: %w", s.deadlinesTable(), err)
	}
	now := time.Now()
	list := CancellationList{Now: now.UTC(), Cancellations: make([]OwedCancellation, len(rows)), Count: len(rows)}
	for i, r := range rows {
		list.Cancellations[i] = OwedCancellation{Cancellation: r, AgeSeconds: int64(now.Sub(r.OwedAt).Round(time.Second) / time.Second)}
	}
	return list, nil
}

// ParkedList is what parked finds.
type ParkedList struct {
	Now    time.Time       `json:"now"`
	Parked []parked.Record `json:"parked"`
	Count  int             `json:"count"`
}

// Parked lists the stream records parked for the sweep to deliver again, soonest
// due first, through the to-do table index. It only reads.
func (s *Stack) Parked(ctx context.Context) (ParkedList, error) {
	projection, err := s.pendingReader()
	if err != nil {
		return ParkedList{}, err
	}
	// The rows stamped below 0 of the open processes' partitions: the owed
	// cancellations and the parked records, no open process.
	backlog, _, err := projection.Backlog(ctx, time.UnixMilli(0))
	if err != nil {
		return ParkedList{}, fmt.Errorf("parked: %s: %w", s.deadlinesTable(), err)
	}
	list := ParkedList{Now: time.Now().UTC(), Parked: backlog.Parked, Count: len(backlog.Parked)}
	if list.Parked == nil {
		list.Parked = []parked.Record{}
	}
	return list, nil
}

// Deadline is one row of a kind's to-do list, as GET /deadlines answers it.
type Deadline = httpapi.Deadline

// DeadlineKinds are the kinds of deadline pending --kind takes.
var DeadlineKinds = httpapi.DeadlineKinds

// KindList is what pending --kind lists: GET /deadlines's rows of one kind.
type KindList struct {
	Now         time.Time  `json:"now"`
	Kind        string     `json:"kind"`
	OverdueOnly bool       `json:"overdueOnly"`
	Deadlines   []Deadline `json:"deadlines"`
	Count       int        `json:"count"`
	Limit       int        `json:"limit"`
	More        bool       `json:"more"`
}

// Deadlines lists at most q.Limit rows of one kind of deadline, the overdue first,
// through the to-do table index (a query per shard of the kind's lane).
func (s *Stack) Deadlines(ctx context.Context, kind string, q PendingQuery) (KindList, error) {
	projection, err := s.pendingReader()
	if err != nil {
		return KindList{}, err
	}
	kinds, err := wiring.DeadlineKinds(s.getenv, deadlinekinds.Receivers{})
	if err != nil {
		return KindList{}, settings(err)
	}
	now := time.Now()
	dq := deadline.Query{Kind: kind, Now: now, Limit: q.Limit + 1}
	if q.Overdue {
		dq.Overdue = &q.Overdue
	}
	rows, err := projection.WithKinds(kinds).Deadlines(ctx, dq)
	if err != nil {
		return KindList{}, fmt.Errorf("pending: %s: %w", s.deadlinesTable(), err)
	}
	rows, more := limited(rows, q.Limit)
	list := KindList{Now: now.UTC(), Kind: kind, OverdueOnly: q.Overdue, Deadlines: make([]Deadline, len(rows)), Count: len(rows), Limit: q.Limit, More: more}
	for i, r := range rows {
		list.Deadlines[i] = httpapi.DeadlineOf(r, now)
	}
	return list, nil
}
