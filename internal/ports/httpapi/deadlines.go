package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
)

// The to-do list: every outstanding deadline, of every kind the index holds, due
// soonest first (so the overdue ones lead), read from the PendingPayments table's
// index, never a scan.

// Deadline kinds of GET /deadlines.
const (
	// KindPayment is a payment waiting for its provider: due PAYMENT_TIMEOUT after
	// it was prepared; the sweep then gives up on it (CancelRentalPayment).
	KindPayment = "payment"
	// KindStuck is a rental whose process has not completed: due PAYMENT_TIMEOUT
	// plus STUCK_GRACE after its bike was requested; the sweep then reports it stuck
	// and repairs it.
	KindStuck = "stuck"
)

// DeadlineKinds lists the kinds GET /deadlines knows, in the order of its kind
// parameter's documentation.
func DeadlineKinds() []string { return []string{KindPayment, KindStuck} }

// Deadline-list limits.
const (
	DefaultDeadlinesLimit = 100
	MaxDeadlinesLimit     = 1000
)

// DeadlineIndex is what the to-do list and the stuck rentals are read from: the
// index of outstanding work; *pendingtable.Projection is one.
type DeadlineIndex interface {
	// List returns outstanding payments, oldest first, at most limit.
	List(ctx context.Context, limit int) ([]deadline.Pending, error)
	// Overdue returns the outstanding payments prepared before cutoff, oldest
	// first, at most limit.
	Overdue(ctx context.Context, cutoff time.Time, limit int) ([]deadline.Pending, error)
	// OpenBefore returns every rental whose process has been open since before the
	// cutoff, oldest first, and how many items it read.
	OpenBefore(ctx context.Context, cutoff time.Time) ([]deadline.Open, int, error)
}

// DeadlineRow is one outstanding deadline in GET /deadlines.
type DeadlineRow struct {
	Kind     string    `json:"kind"`
	RentalID string    `json:"rentalId"`
	DueAt    time.Time `json:"dueAt"`
	// AgeSeconds is how long ago the work began: the payment was prepared, the bike
	// requested.
	AgeSeconds int64 `json:"ageSeconds"`
}

// DeadlineList is the answer to GET /deadlines.
type DeadlineList struct {
	// Now is the time the list was read at, which the due times compare with.
	Now       time.Time     `json:"now"`
	Deadlines []DeadlineRow `json:"deadlines"`
	Count     int           `json:"count"`
	Limit     int           `json:"limit"`
	// More reports that more deadlines than Limit matched.
	More bool `json:"more"`
}

// deadlineQuery is what GET /deadlines was asked.
type deadlineQuery struct {
	kinds   []string
	overdue bool
	limit   int
}

func parseDeadlineQuery(r *request) (deadlineQuery, *response) {
	q := deadlineQuery{kinds: DeadlineKinds(), limit: DefaultDeadlinesLimit}
	var params []InvalidParam
	qs := r.raw.QueryStringParameters
	if v, ok := qs["kind"]; ok {
		if !slices.Contains(DeadlineKinds(), v) {
			params = append(params, InvalidParam{Name: "kind", Reason: fmt.Sprintf("one of %v", DeadlineKinds())})
		}
		q.kinds = []string{v}
	}
	if v, ok := qs["overdue"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil || (v != "true" && v != "false") {
			params = append(params, InvalidParam{Name: "overdue", Reason: "true or false"})
		}
		q.overdue = b
	}
	if v, ok := qs["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxDeadlinesLimit {
			params = append(params, InvalidParam{Name: "limit", Reason: fmt.Sprintf("a whole number from 1 to %d", MaxDeadlinesLimit)})
		}
		q.limit = n
	}
	if len(params) > 0 {
		resp := invalid(params...)
		return q, &resp
	}
	return q, nil
}

// deadlines answers GET /deadlines: the outstanding payments (the index's payment
// partitions, oldest first, at most limit+1) and the open processes (the open
// partitions, one query per shard), each with its due time by the deadline policy,
// merged due soonest first.
func (a *API) deadlines(r *request) response {
	q, bad := parseDeadlineQuery(r)
	if bad != nil {
		return *bad
	}
	if a.cfg.Deadlines == nil {
		return blank(http.StatusNotImplemented, "the deadline index is not available in this deployment")
	}
	now := a.cfg.Now()
	policy := a.cfg.Policy
	var rows []DeadlineRow
	for _, kind := range q.kinds {
		switch kind {
		case KindPayment:
			var pending []deadline.Pending
			var err error
			if q.overdue {
				pending, err = a.cfg.Deadlines.Overdue(r.ctx, policy.Cutoff(now), q.limit+1)
			} else {
				pending, err = a.cfg.Deadlines.List(r.ctx, q.limit+1)
			}
			if err != nil {
				return errorResponse(err)
			}
			for _, p := range pending {
				rows = append(rows, DeadlineRow{Kind: KindPayment, RentalID: p.RentalID, DueAt: policy.Deadline(p.PreparedAt).UTC(),
					AgeSeconds: ageSeconds(now, p.PreparedAt)})
			}
		case KindStuck:
			cutoff := now.Add(MaxDeadlineHorizon)
			if q.overdue {
				cutoff = policy.StuckCutoff(now)
			}
			open, _, err := a.cfg.Deadlines.OpenBefore(r.ctx, cutoff)
			if err != nil {
				return errorResponse(err)
			}
			for _, o := range open {
				rows = append(rows, DeadlineRow{Kind: KindStuck, RentalID: o.RentalID, DueAt: stuckDue(policy, o.RequestedAt).UTC(),
					AgeSeconds: ageSeconds(now, o.RequestedAt)})
			}
		}
	}
	slices.SortStableFunc(rows, func(x, y DeadlineRow) int {
		return cmp.Or(x.DueAt.Compare(y.DueAt), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.RentalID, y.RentalID))
	})
	out := DeadlineList{Now: now.UTC(), Deadlines: rows, Limit: q.limit}
	if len(rows) > q.limit {
		out.Deadlines, out.More = rows[:q.limit], true
	}
	if out.Deadlines == nil {
		out.Deadlines = []DeadlineRow{}
	}
	out.Count = len(out.Deadlines)
	return jsonResponse(http.StatusOK, out)
}

// MaxDeadlineHorizon bounds how far ahead of now a row's opening may be stamped
// and still be listed: the index is stamped with the events' own times, which are
// never in the future by more than the clocks' skew.
const MaxDeadlineHorizon = 24 * time.Hour

// stuckDue is when a rental whose bike was requested at requestedAt counts as stuck
// if its process is still open: the sweep's rule (deadline.Policy.StuckCutoff).
func stuckDue(p deadline.Policy, requestedAt time.Time) time.Time {
	return requestedAt.Add(p.PaymentTimeout() + p.StuckGrace())
}

func ageSeconds(now, since time.Time) int64 { return int64(now.Sub(since) / time.Second) }

// StuckRental is one rental in GET /processes/stuck.
type StuckRental struct {
	RentalID    string    `json:"rentalId"`
	RequestedAt time.Time `json:"requestedAt"`
	// StuckSince is when the process's time to complete ran out.
	StuckSince time.Time `json:"stuckSince"`
	AgeSeconds int64     `json:"ageSeconds"`
}

// StuckRentals is the answer to GET /processes/stuck.
type StuckRentals struct {
	Now     time.Time     `json:"now"`
	Rentals []StuckRental `json:"rentals"`
	Count   int           `json:"count"`
}

// stuckRentals answers GET /processes/stuck: the rentals whose process is still
// open past the payment timeout plus the stuck grace, as the sweep finds them (one
// query per shard of the index), oldest first.
func (a *API) stuckRentals(r *request) response {
	if a.cfg.Deadlines == nil {
		return blank(http.StatusNotImplemented, "the deadline index is not available in this deployment")
	}
	now := a.cfg.Now()
	open, _, err := a.cfg.Deadlines.OpenBefore(r.ctx, a.cfg.Policy.StuckCutoff(now))
	if err != nil {
		return errorResponse(err)
	}
	out := StuckRentals{Now: now.UTC(), Rentals: make([]StuckRental, len(open)), Count: len(open)}
	for i, o := range open {
		out.Rentals[i] = StuckRental{RentalID: o.RentalID, RequestedAt: o.RequestedAt.UTC(), StuckSince: stuckDue(a.cfg.Policy, o.RequestedAt).UTC(),
			AgeSeconds: ageSeconds(now, o.RequestedAt)}
	}
	return jsonResponse(http.StatusOK, out)
}
