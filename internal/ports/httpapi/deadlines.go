package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bikerental/bikerental/deadlines"

	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// DeadlineKinds are the kinds GET /deadlines takes in kind, and lists when it is
// given none: the operators' to-do list (deadlinekinds.Listed).
var DeadlineKinds = deadlinekinds.Listed()

// Deadline is one outstanding row in GET /deadlines: its kind, the rental it is
// about, when it falls due, and how long ago it opened; a refund owed's row also
// says which refund it is (a rental may owe more than one).
type Deadline struct {
	Kind       string    `json:"kind"`
	RentalID   string    `json:"rentalId"`
	DueAt      time.Time `json:"dueAt"`
	AgeSeconds int64     `json:"ageSeconds"`
	Overdue    bool      `json:"overdue"`
	// Refund is what a row of the refund kind owes, read from its payment; nil for
	// the other kinds (and for a refund row its payment does not record).
	Refund *RefundDebt `json:"refund,omitempty"`
}

// RefundDebt is what one refund owed is: the provider payment the money was taken
// on (what POST /rentals/{id}/refund-made-by-hand names it by), what was taken,
// and why it is owed.
type RefundDebt struct {
	PaymentID string `json:"paymentId"`
	// Amount and Currency are what the provider said it took; left out where it
	// did not say.
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	// Cause is deadlinekinds.CauseLateSuccess or deadlinekinds.CauseOtherPayment.
	Cause string `json:"cause"`
	// Reason is what the provider refused, for one that can refund; left out for
	// one that cannot refund at all.
	Reason string `json:"reason,omitempty"`
}

// refundDebts reads, for each refund row among rows, what it owes from its
// payment's stream (deadlinekinds.RefundOf): one read per rental listed, a few at
// a time, so that a listing reads about what it returns. A row whose payment
// records no refund for it is left out of the map.
func (a *API) refundDebts(ctx context.Context, rows []deadlines.Row) (map[string]RefundDebt, error) {
	bySubject := map[string]RefundDebt{}
	subjects := map[string][]string{} // by rental
	for _, row := range rows {
		if row.Kind == deadlinekinds.Refund {
			id := deadlinekinds.RefundRental(row.Subject)
			subjects[id] = append(subjects[id], row.Subject)
		}
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(refundReads)
	for id, list := range subjects {
		g.Go(func() error {
			_, records, err := a.cfg.Commands.LoadPayment(gctx, payment.ReferenceFor(id))
			if err != nil {
				return err
			}
			for _, subject := range list {
				o, ok, err := deadlinekinds.RefundOf(subject, records)
				if err != nil || !ok {
					if err != nil {
						return err
					}
					continue
				}
				d := RefundDebt{PaymentID: o.PaymentID, Amount: o.Amount, Currency: o.Currency, Cause: o.Cause, Reason: o.Reason}
				mu.Lock()
				bySubject[subject] = d
				mu.Unlock()
			}
			return nil
		})
	}
	return bySubject, g.Wait()
}

// refundReads is how many payments a listing reads at once.
const refundReads = 8

// Deadlines is the answer to GET /deadlines: a page of the to-do list.
type Deadlines struct {
	// Now is the time the list was read at, which its rows are overdue or not by.
	Now       time.Time  `json:"now"`
	Deadlines []Deadline `json:"deadlines"`
	Count     int        `json:"count"`
	Limit     int        `json:"limit"`
	// NextCursor continues the list after this page's last row (GET
	// /deadlines?cursor=, with the same kind and overdue); absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// MaxCursorLength is the longest cursor GET /deadlines takes: several times the
// longest it gives out.
const MaxCursorLength = 512

// deadlines answers GET /deadlines?kind=&overdue=&limit=&cursor=: up to limit
// outstanding rows, of one kind or every kind of the to-do list, overdue or not or
// both, soonest due first (so the overdue first), from the start or after the row
// the cursor of an earlier page names (deadlines.List).
func (a *API) deadlines(r *request) response {
	q, bad := deadlineQuery(r.raw.QueryStringParameters)
	if len(bad) > 0 {
		return invalid(bad...)
	}
	q.Now = a.cfg.Now()
	page, resp, ok := a.listDeadlines(r, q)
	if !ok {
		return resp
	}
	debts, err := a.refundDebts(r.ctx, page.Rows)
	if err != nil {
		return errorResponse(err)
	}
	out := Deadlines{Now: q.Now.UTC(), Deadlines: make([]Deadline, len(page.Rows)), Count: len(page.Rows), Limit: q.Limit, NextCursor: page.Next}
	for i, row := range page.Rows {
		out.Deadlines[i] = DeadlineOf(a.toDo, row, q.Now)
		if d, ok := debts[row.Subject]; ok && row.Kind == deadlinekinds.Refund {
			out.Deadlines[i].Refund = &d
		}
	}
	return jsonResponse(http.StatusOK, out)
}

// DeadlineOf is row, named by the kind of kinds it lists as, as GET /deadlines
// answers it at now, without what a refund row owes (which its payment says): it
// opened its kind's After before it falls due (OpenedAt).
func DeadlineOf(kinds deadlines.Kinds, row deadlines.Row, now time.Time) Deadline {
	return Deadline{Kind: row.Kind, RentalID: deadlinekinds.RentalOf(row.Kind, row.Subject), DueAt: row.Due.UTC(),
		AgeSeconds: ageSeconds(now, OpenedAt(kinds, row)), Overdue: row.Overdue(now)}
}

// OpenedAt returns when row, named by the kind of kinds it lists as, opened: its
// due time less that kind's After (a kind listed as another carries on from it,
// due as long after its opening). A row of no kind of kinds opened when it falls
// due.
func OpenedAt(kinds deadlines.Kinds, row deadlines.Row) time.Time {
	k, ok := kinds.ByName(row.Kind)
	if !ok {
		return row.Due
	}
	return row.Due.Add(-k.After)
}

// deadlineQuery reads the query string of GET /deadlines: kind, overdue, limit
// and cursor.
func deadlineQuery(params map[string]string) (deadlines.Query, []InvalidParam) {
	q := deadlines.Query{Limit: DefaultPendingLimit}
	var bad []InvalidParam
	if v, ok := params["kind"]; ok {
		if !slices.Contains(DeadlineKinds, v) {
			bad = append(bad, InvalidParam{Name: "kind", Reason: "one of " + strings.Join(DeadlineKinds, ", ")})
		}
		q.Kind = v
	}
	if v, ok := params["overdue"]; ok {
		switch v {
		case "true", "false":
			overdue := v == "true"
			q.Overdue = &overdue
		default:
			bad = append(bad, InvalidParam{Name: "overdue", Reason: "true or false"})
		}
	}
	if v, ok := params["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPendingLimit {
			bad = append(bad, InvalidParam{Name: "limit", Reason: fmt.Sprintf("a whole number from 1 to %d", MaxPendingLimit)})
		}
		q.Limit = n
	}
	if v, ok := params["cursor"]; ok {
		if v == "" || len(v) > MaxCursorLength {
			bad = append(bad, badCursor)
		}
		q.Token = v
	}
	return q, bad
}

// badCursor is the refusal of a cursor GET /deadlines did not give out for the
// query it comes with: forged, altered, or another kind's or overdue's.
var badCursor = InvalidParam{Name: "cursor", Reason: "not a cursor this API gave out for this kind and overdue"}

// listDeadlines reads the page q asks for of the to-do list's kinds, at the API's
// now (set in q); ok is false with the answer to give when it cannot be read. A
// cursor the listing refuses (deadlines.ErrBadQuery) is a 400 naming it.
func (a *API) listDeadlines(r *request, q deadlines.Query) (page deadlines.Page, resp response, ok bool) {
	switch {
	case a.cfg.Deadlines == nil:
		return page, blank(http.StatusNotImplemented, "the to-do list is not available in this deployment"), false
	case a.toDoErr != nil:
		return page, internalError(a.toDoErr), false
	}
	page, err := deadlines.List(r.ctx, a.cfg.Deadlines.Index, a.toDo, q)
	switch {
	case q.Token != "" && errors.Is(err, deadlines.ErrBadQuery):
		return page, invalid(badCursor), false
	case err != nil:
		return page, errorResponse(err), false
	}
	return page, response{}, true
}

// toDoKinds returns the kinds of l whose rows GET /deadlines lists: those listed
// as one of DeadlineKinds.
func toDoKinds(l *deadlinekinds.Listing) (deadlines.Kinds, error) {
	var ks []deadlines.Kind
	for _, k := range l.Kinds.All() {
		if slices.Contains(DeadlineKinds, k.Listed()) {
			ks = append(ks, k)
		}
	}
	return deadlines.NewKinds(ks...)
}

// kindQuery is the query of a route that lists one kind's rows (GET
// /processes/stuck, GET /refunds/owed): its limit parameter, as GET /deadlines
// reads it.
func (a *API) kindQuery(r *request, kind string, overdue *bool) (deadlines.Query, []InvalidParam) {
	params := map[string]string{}
	if v, ok := r.raw.QueryStringParameters["limit"]; ok {
		params["limit"] = v
	}
	q, bad := deadlineQuery(params)
	q.Kind, q.Overdue, q.Now = kind, overdue, a.cfg.Now()
	return q, bad
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
	Limit   int           `json:"limit"`
}

// stuckRentals answers GET /processes/stuck?limit=: the rentals whose process is
// still open past the payment timeout plus the stuck grace, the stuck kind's
// overdue rows as the sweep finds them, oldest first, each requested its kind's
// After before it fell due.
func (a *API) stuckRentals(r *request) response {
	overdue := true
	q, bad := a.kindQuery(r, deadlinekinds.Stuck, &overdue)
	if len(bad) > 0 {
		return invalid(bad...)
	}
	page, resp, ok := a.listDeadlines(r, q)
	if !ok {
		return resp
	}
	out := StuckRentals{Now: q.Now.UTC(), Rentals: make([]StuckRental, len(page.Rows)), Count: len(page.Rows), Limit: q.Limit}
	for i, row := range page.Rows {
		requested := OpenedAt(a.toDo, row)
		out.Rentals[i] = StuckRental{RentalID: row.Subject, RequestedAt: requested.UTC(), StuckSince: row.Due.UTC(),
			AgeSeconds: ageSeconds(q.Now, requested)}
	}
	return jsonResponse(http.StatusOK, out)
}

// RefundOwed is one refund in GET /refunds/owed: a rental that owes two lists
// two, each named by its provider payment (RefundDebt.PaymentID).
type RefundOwed struct {
	PaymentReference string    `json:"paymentReference"`
	RentalID         string    `json:"rentalId"`
	OwedSince        time.Time `json:"owedSince"`
	AgeSeconds       int64     `json:"ageSeconds"`
	// RefundDebt is what is owed, read from the payment; empty for a row its
	// payment does not record (which the auditor reports stale).
	*RefundDebt
}

// RefundsOwed is the answer to GET /refunds/owed.
type RefundsOwed struct {
	Now     time.Time    `json:"now"`
	Refunds []RefundOwed `json:"refunds"`
	Count   int          `json:"count"`
	Limit   int          `json:"limit"`
}

// refundsOwed answers GET /refunds/owed?limit=: money a provider took for a rental
// that did not get its bike and did not refund (it cannot, or refused for good),
// not paid back since, oldest first, each refund on its own: the refund kind's
// rows, a query per shard of its lane, never a scan, and what each owes, read
// from its payment (refundDebts).
func (a *API) refundsOwed(r *request) response {
	q, bad := a.kindQuery(r, deadlinekinds.Refund, nil)
	if len(bad) > 0 {
		return invalid(bad...)
	}
	page, resp, ok := a.listDeadlines(r, q)
	if !ok {
		return resp
	}
	debts, err := a.refundDebts(r.ctx, page.Rows)
	if err != nil {
		return errorResponse(err)
	}
	out := RefundsOwed{Now: q.Now.UTC(), Refunds: make([]RefundOwed, len(page.Rows)), Count: len(page.Rows), Limit: q.Limit}
	for i, row := range page.Rows {
		rentalID := deadlinekinds.RefundRental(row.Subject)
		owed := OpenedAt(a.toDo, row)
		out.Refunds[i] = RefundOwed{PaymentReference: payment.ReferenceFor(rentalID), RentalID: rentalID,
			OwedSince: owed.UTC(), AgeSeconds: ageSeconds(q.Now, owed)}
		if d, ok := debts[row.Subject]; ok {
			out.Refunds[i].RefundDebt = &d
		}
	}
	return jsonResponse(http.StatusOK, out)
}
