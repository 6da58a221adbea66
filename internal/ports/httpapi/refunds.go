package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
)

// RefundLister lists the refunds the service owes from the to-do table's index,
// oldest first; *pendingtable.Projection is one.
type RefundLister interface {
	RefundsOwed(ctx context.Context) ([]deadline.RefundOwed, int, error)
}

// RefundOwed is one refund in GET /refunds/owed.
type RefundOwed struct {
	PaymentReference string    `json:"paymentReference"`
	RentalID         string    `json:"rentalId"`
	OwedSince        time.Time `json:"owedSince"`
	AgeSeconds       int64     `json:"ageSeconds"`
}

// RefundsOwed is the answer to GET /refunds/owed.
type RefundsOwed struct {
	Now     time.Time    `json:"now"`
	Refunds []RefundOwed `json:"refunds"`
	Count   int          `json:"count"`
}

// refundsOwed answers GET /refunds/owed: money a provider that cannot refund took
// for a rental that did not get its bike, not refunded since, oldest first; a
// query per shard of the index, never a scan of the Events table.
func (a *API) refundsOwed(r *request) response {
	if a.cfg.Refunds == nil {
		return blank(http.StatusNotImplemented, "the to-do table is not available in this deployment")
	}
	rows, _, err := a.cfg.Refunds.RefundsOwed(r.ctx)
	if err != nil {
		return errorResponse(err)
	}
	now := a.cfg.Now()
	out := RefundsOwed{Now: now.UTC(), Refunds: make([]RefundOwed, len(rows)), Count: len(rows)}
	for i, o := range rows {
		out.Refunds[i] = RefundOwed{PaymentReference: o.Reference, RentalID: o.RentalID, OwedSince: o.OwedSince.UTC(), AgeSeconds: ageSeconds(now, o.OwedSince)}
	}
	return jsonResponse(http.StatusOK, out)
}
