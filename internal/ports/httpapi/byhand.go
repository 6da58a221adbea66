package httpapi

import (
	"net/http"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// RefundMadeByHandRequest is the body of POST /rentals/{rentalId}/refund-made-by-hand:
// the amount paid back, in minor units of the payment's currency (it must be the
// amount owed), and the operator's own reference of the refund (a bank transfer's
// id, say). Who recorded it is the caller, the token's subject: a body that names
// one is refused as an unknown member.
type RefundMadeByHandRequest struct {
	Amount    int64  `json:"amount"`
	Reference string `json:"reference"`
}

// RefundMadeByHandResult is the answer to POST /rentals/{rentalId}/refund-made-by-hand:
// what was recorded.
type RefundMadeByHandResult struct {
	RentalID         string    `json:"rentalId"`
	PaymentReference string    `json:"paymentReference"`
	Amount           int64     `json:"amount"`
	Currency         string    `json:"currency"`
	Reference        string    `json:"reference"`
	RecordedBy       string    `json:"recordedBy"`
	RecordedAt       time.Time `json:"recordedAt"`
	// Refund is where the payment's refund stands now: "refunded-by-hand".
	Refund string `json:"refund"`
}

// refundMadeByHand records, for an operator, that a rental's refund owed was paid
// back by hand. The refusals change nothing: a rental that does not exist is
// rental-not-found, one that owes no refund refund-not-owed, one whose refund is
// recorded already (a second request included) refund-already-recorded, another
// amount than owed refund-amount-not-owed.
func (a *API) refundMadeByHand(r *request) response {
	id, bad := idParam(r, "rentalId")
	if bad != nil {
		return *bad
	}
	var body RefundMadeByHandRequest
	if bad := decodeJSON(r, &body, false); bad != nil {
		return *bad
	}
	var params []InvalidParam
	if err := payment.CheckAmount(body.Amount); err != nil {
		params = append(params, InvalidParam{Name: "amount", Reason: "required: " + err.Error()})
	}
	if err := payment.CheckText("reference", body.Reference, payment.MaxOperatorReferenceLength); err != nil {
		params = append(params, InvalidParam{Name: "reference", Reason: err.Error()})
	}
	if len(params) > 0 {
		return invalid(params...)
	}
	meta := r.meta()
	meta.CorrelationID = id
	res, err := a.cfg.Commands.RefundMadeByHand(r.ctx, id, body.Amount, body.Reference, r.caller.subject, meta)
	if err != nil {
		return errorResponse(err)
	}
	out := RefundMadeByHandResult{RentalID: id, PaymentReference: res.State.Reference, Amount: body.Amount, Currency: res.State.Currency,
		Reference: body.Reference, RecordedBy: r.caller.subject, Refund: string(res.State.Refund)}
	if len(res.Appended) > 0 {
		out.RecordedAt = res.Appended[0].RecordedAt.UTC()
	}
	return jsonResponse(http.StatusOK, out)
}
