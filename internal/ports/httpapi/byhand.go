package httpapi

import (
	"net/http"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// RefundMadeByHandRequest is the body of POST /rentals/{rentalId}/refund-made-by-hand:
// the amount paid back, in minor units of the currency owed (it must be the amount
// owed), and the operator's own reference of the refund (a bank transfer's id,
// say). PaymentID names the refund owed by the provider payment it is owed on, as
// GET /refunds/owed lists it: left out, or the payment recorded, for the refund of
// the rental's own payment (what every body said before a rental could owe two);
// another provider payment for the refund owed on that one. Currency, where given,
// must be the currency owed; it is required only for money a provider took
// without saying in which currency. Who recorded it is the caller, the token's
// subject: a body that names one is refused as an unknown member.
type RefundMadeByHandRequest struct {
	Amount    int64                       `json:"amount"`
	Reference string                      `json:"reference"`
	PaymentID strictjson.Optional[string] `json:"paymentId,omitzero"`
	Currency  strictjson.Optional[string] `json:"currency,omitzero"`
}

// RefundMadeByHandResult is the answer to POST /rentals/{rentalId}/refund-made-by-hand:
// what was recorded.
type RefundMadeByHandResult struct {
	RentalID         string `json:"rentalId"`
	PaymentReference string `json:"paymentReference"`
	// PaymentID is the provider payment the refund was owed on.
	PaymentID  string    `json:"paymentId"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	Reference  string    `json:"reference"`
	RecordedBy string    `json:"recordedBy"`
	RecordedAt time.Time `json:"recordedAt"`
	// Refund is where that refund stands now: "refunded-by-hand".
	Refund string `json:"refund"`
}

// refundMadeByHand records, for an operator, that one of a rental's refunds owed
// was paid back by hand. The refusals change nothing: a rental that does not exist
// is rental-not-found, a refund not owed (none on the provider payment named)
// refund-not-owed, one recorded already (a second request included)
// refund-already-recorded, another amount or currency than owed
// refund-amount-not-owed.
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
	if body.PaymentID.Present {
		if err := payment.CheckText("paymentId", body.PaymentID.Value, payment.MaxEventIDLength); err != nil {
			params = append(params, InvalidParam{Name: "paymentId", Reason: err.Error()})
		}
	}
	if body.Currency.Present {
		if err := payment.CheckCurrency(body.Currency.Value); err != nil {
			params = append(params, InvalidParam{Name: "currency", Reason: err.Error()})
		}
	}
	if len(params) > 0 {
		return invalid(params...)
	}
	meta := r.meta()
	meta.CorrelationID = id
	c := payment.RecordRefundMadeByHand{PaymentID: body.PaymentID.Value, Amount: body.Amount, Currency: body.Currency.Value,
		OperatorReference: body.Reference, RecordedBy: r.caller.subject}
	res, err := a.cfg.Commands.RefundMadeByHand(r.ctx, id, c, meta)
	if err != nil {
		return errorResponse(err)
	}
	return jsonResponse(http.StatusOK, RefundMadeByHandResult{RentalID: id, PaymentReference: res.Payment.Reference, PaymentID: res.PaymentID,
		Amount: res.Amount, Currency: res.Currency, Reference: body.Reference, RecordedBy: r.caller.subject,
		RecordedAt: res.Recorded.RecordedAt.UTC(), Refund: string(res.Refund)})
}
