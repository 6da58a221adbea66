package ctl

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/parked"
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

// Pending lists the outstanding payments, oldest first, through the payment
// kind's partitions of the Deadlines table's index (a query per shard, never a
// scan), with each one's deadline: its row's due time, which the projector
// stamped with PAYMENT_TIMEOUT after the payment was prepared. The policy's
// timeout must be the projector's: a row's prepared time is read back as its due
// time less the timeout.
func (s *Stack) Pending(ctx context.Context, q PendingQuery) (PendingList, error) {
	listing, err := s.listing()
	if err != nil {
		return PendingList{}, err
	}
	policy, err := s.policy()
	if err != nil {
		return PendingList{}, err
	}
	now := time.Now()
	rows, more, err := payments(ctx, listing, q.Overdue, now, q.Limit)
	if err != nil {
		return PendingList{}, fmt.Errorf("pending: %s: %w", s.deadlinesTable(), err)
	}
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
// would send CancelRentalPayment for: the payment rows due before now, as the
// sweep reads them. It sends nothing.
func (s *Stack) SweepDryRun(ctx context.Context, now time.Time, limit int) (DryRun, error) {
	listing, err := s.listing()
	if err != nil {
		return DryRun{}, err
	}
	policy, err := s.policy()
	if err != nil {
		return DryRun{}, err
	}
	rows, more, err := payments(ctx, listing, true, now, limit)
	if err != nil {
		return DryRun{}, fmt.Errorf("sweep --dry-run: %w", err)
	}
	return DryRun{DryRun: true, Now: now.UTC(), Cutoff: policy.Cutoff(now).UTC(), TimeoutMs: policy.PaymentTimeout().Milliseconds(),
		Payments: rowsOf(rows, now, policy), Count: len(rows), Limit: limit, More: more}, nil
}

// payments lists up to limit outstanding payments, oldest first, those overdue
// at now only if overdue is set, and reports whether more matched.
func payments(ctx context.Context, l *deadlinekinds.Listing, overdue bool, now time.Time, limit int) ([]deadlinekinds.Pending, bool, error) {
	k, ok := l.Kinds.ByName(deadlinekinds.Payment)
	if !ok {
		return nil, false, fmt.Errorf("no %s kind declared", deadlinekinds.Payment)
	}
	q := deadlines.Query{Kind: deadlinekinds.Payment}
	if overdue {
		q.Overdue, q.Now = &overdue, now
	}
	rows, more, err := list(ctx, l, q, limit)
	out := make([]deadlinekinds.Pending, len(rows))
	for i, r := range rows {
		out[i] = deadlinekinds.PendingOf(k, r)
	}
	return out, more, err
}

// list reads up to limit of the rows q asks for (its Limit and Token are set
// here), soonest due first, a page of at most deadlines.MaxLimit at a time
// (deadlines.List: a query per shard of each kind it lists, never a scan), and
// reports whether more matched: it asks for one row more than limit to know.
func list(ctx context.Context, l *deadlinekinds.Listing, q deadlines.Query, limit int) (rows []deadlines.Row, more bool, err error) {
	want := limit + 1
	for {
		q.Limit = min(want-len(rows), deadlines.MaxLimit)
		page, err := deadlines.List(ctx, l.Index, l.Kinds, q)
		if err != nil {
			return nil, false, err
		}
		rows = append(rows, page.Rows...)
		if page.Next == "" || len(rows) >= want {
			break
		}
		q.Token = page.Next
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

func rowsOf(rows []deadlinekinds.Pending, now time.Time, policy deadlinekinds.Policy) []PendingRow {
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

// OwedCancellation is one cancellation owed to the payment provider, with its age
// and when the sweep asks the provider next (Due): at the next sweep, if Due is
// not after the list's now, or at the sweep after Due, where the provider left
// the retries unanswered and the kind's backoff puts the next one off
// (deadlinekinds.CancellationRetry).
type OwedCancellation struct {
	deadlinekinds.OwedCancellation
	Due        time.Time `json:"due"`
	AgeSeconds int64     `json:"ageSeconds"`
}

// CancellationList is what cancellations finds.
type CancellationList struct {
	Now           time.Time          `json:"now"`
	Cancellations []OwedCancellation `json:"cancellations"`
	Count         int                `json:"count"`
}

// Cancellations lists the cancellations owed to the payment provider, oldest
// first: the rows of the cancellation kind, a query per shard of its partitions of
// the index. The sweep interval (SWEEP_RATE) says when the next retry is. It only
// reads.
func (s *Stack) Cancellations(ctx context.Context) (CancellationList, error) {
	listing, err := s.listing()
	if err != nil {
		return CancellationList{}, err
	}
	every, err := wiring.SweepInterval(s.getenv)
	if err != nil {
		return CancellationList{}, settings(err)
	}
	k, ok := listing.Kinds.ByName(deadlinekinds.Cancellation)
	if !ok {
		return CancellationList{}, fmt.Errorf("cancellations: no %s kind declared", deadlinekinds.Cancellation)
	}
	var retry deadlines.Backoff
	if send, ok := k.Work.(deadlines.Send); ok {
		retry = send.Retry
	}
	rows, _, err := listing.OwedCancellations(ctx)
	if err != nil {
		return CancellationList{}, fmt.Errorf("cancellations: %s: %w", s.deadlinesTable(), err)
	}
	now := time.Now()
	list := CancellationList{Now: now.UTC(), Cancellations: make([]OwedCancellation, len(rows)), Count: len(rows)}
	for i, r := range rows {
		list.Cancellations[i] = OwedCancellation{OwedCancellation: r, Due: nextTry(retry, r.OwedAt, now, every).UTC(),
			AgeSeconds: int64(now.Sub(r.OwedAt).Round(time.Second) / time.Second)}
	}
	return list, nil
}

// nextTry is the send time of a row due at due, backing off by b, that the next
// sweep after now acts on, for sweeps every interval: the latest send time in the
// interval before now (which the next sweep sends), or else the first after it.
// Without a backoff every sweep sends: now.
func nextTry(b deadlines.Backoff, due, now time.Time, every time.Duration) time.Time {
	if b.IsZero() {
		return now
	}
	longest := b.Max
	if longest == 0 {
		longest = b.First
	}
	at, wait := due, b.First
	for now.Sub(at) > every {
		at = at.Add(min(wait, longest))
		wait *= 2
	}
	return at
}

// ParkedList is what parked finds.
type ParkedList struct {
	Now    time.Time       `json:"now"`
	Parked []parked.Record `json:"parked"`
	Count  int             `json:"count"`
}

// Parked lists the stream records parked for the sweep to deliver again, soonest
// due first: the rows of the redelivery kind, a query per shard of its partitions
// of the index. It only reads.
func (s *Stack) Parked(ctx context.Context) (ParkedList, error) {
	listing, err := s.listing()
	if err != nil {
		return ParkedList{}, err
	}
	rows, _, err := listing.Parked(ctx)
	if err != nil {
		return ParkedList{}, fmt.Errorf("parked: %s: %w", s.deadlinesTable(), err)
	}
	list := ParkedList{Now: time.Now().UTC(), Parked: rows, Count: len(rows)}
	if list.Parked == nil {
		list.Parked = []parked.Record{}
	}
	return list, nil
}

// Deadline is one row of a kind's to-do list, in the shape GET /deadlines answers
// it (without what a refund row owes, which its payment says): its kind as
// listed, the rental it is about (deadlinekinds.RentalOf), when it falls due, how
// long ago it opened (its due time less its kind's After), and whether it is
// overdue.
type Deadline struct {
	Kind       string    `json:"kind"`
	RentalID   string    `json:"rentalId"`
	DueAt      time.Time `json:"dueAt"`
	AgeSeconds int64     `json:"ageSeconds"`
	Overdue    bool      `json:"overdue"`
}

// DeadlineKinds are the kinds of deadline pending --kind takes: the names the
// declaration lists rows under.
var DeadlineKinds = deadlinekinds.Listed()

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

// Deadlines lists at most q.Limit rows of the kinds listed as kind, soonest due
// (and so the overdue) first, with deadlines.List: a query per shard of each such
// kind's partitions of the index.
func (s *Stack) Deadlines(ctx context.Context, kind string, q PendingQuery) (KindList, error) {
	listing, err := s.listing()
	if err != nil {
		return KindList{}, err
	}
	now := time.Now()
	dq := deadlines.Query{Kind: kind, Now: now}
	if q.Overdue {
		dq.Overdue = &q.Overdue
	}
	rows, more, err := list(ctx, listing, dq, q.Limit)
	if err != nil {
		return KindList{}, fmt.Errorf("pending: %s: %w", s.deadlinesTable(), err)
	}
	out := KindList{Now: now.UTC(), Kind: kind, OverdueOnly: q.Overdue, Deadlines: make([]Deadline, len(rows)), Count: len(rows), Limit: q.Limit, More: more}
	for i, r := range rows {
		opened := r.Due
		if k, ok := listing.Kinds.ByName(r.Kind); ok {
			opened = r.Due.Add(-k.After)
		}
		out.Deadlines[i] = Deadline{Kind: r.Kind, RentalID: deadlinekinds.RentalOf(r.Kind, r.Subject), DueAt: r.Due.UTC(),
			AgeSeconds: int64(now.Sub(opened) / time.Second), Overdue: r.Overdue(now)}
	}
	return out, nil
}
