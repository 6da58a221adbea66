package httpapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bikerental/bikerental/deadlines"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// BikeView is the JSON form of a bike as operators see it.
type BikeView struct {
	BikeID   string `json:"bikeId"`
	Status   string `json:"status"`
	RentalID string `json:"rentalId,omitempty"`
	Renter   string `json:"renter,omitempty"`
}

// BikeAvailability is the public JSON form of a bike, GET /bikes/{bikeId}: whether
// it can be requested, and nothing about who has it.
type BikeAvailability struct {
	BikeID    string `json:"bikeId"`
	Available bool   `json:"available"`
}

func bikeView(b rental.Bike) BikeView {
	return BikeView{BikeID: b.ID, Status: string(b.Status), RentalID: b.RentalID, Renter: b.Renter}
}

// ReturnRequest is the optional body of POST /bikes/{bikeId}/return: naming the
// rental makes the return happen at most once, so that a retry after a lost answer
// cannot end the next renter's rental.
type ReturnRequest struct {
	RentalID string `json:"rentalId,omitempty"`
}

// RentalRequest is the body of POST /rentals. The renter is the caller, the token's
// subject: a body that names one is refused as an unknown field.
type RentalRequest struct {
	BikeID string `json:"bikeId"`
}

// RentalAccepted is the answer to POST /rentals.
type RentalAccepted struct {
	RentalID         string `json:"rentalId"`
	BikeID           string `json:"bikeId"`
	Renter           string `json:"renter"`
	Status           string `json:"status"`
	PaymentReference string `json:"paymentReference"`
}

// CancelPaymentResult is the answer to POST /rentals/{rentalId}/cancel-payment.
type CancelPaymentResult struct {
	RentalID string          `json:"rentalId"`
	Outcome  process.Outcome `json:"outcome"`
}

// MaxIdempotencyKeyLength bounds the Idempotency-Key header.
const MaxIdempotencyKeyLength = 255

func (r *request) meta() command.Meta { return command.Meta{CausationID: "request:" + r.requestID} }

func bikeParam(r *request) (string, *response) {
	id := r.param("bikeId")
	if !rental.ValidBikeID(id) {
		resp := invalid(InvalidParam{Name: "bikeId", Reason: fmt.Sprintf("must be 1 to %d characters of A-Z, a-z, 0-9, _ or -", rental.MaxBikeIDLength)})
		return "", &resp
	}
	return id, nil
}

func idParam(r *request, name string) (string, *response) {
	id := r.param(name)
	if !ident.Valid(id) {
		resp := invalid(InvalidParam{Name: name, Reason: "must match " + ident.Pattern})
		return "", &resp
	}
	return id, nil
}

func (a *API) registerBike(r *request) response {
	id, bad := bikeParam(r)
	if bad != nil {
		return *bad
	}
	if bad := decodeJSON(r, &struct{}{}, true); bad != nil {
		return *bad
	}
	res, err := a.cfg.Commands.Bike(r.ctx, rental.RegisterBike{BikeID: id}, r.meta())
	if err != nil {
		return errorResponse(err)
	}
	if len(res.Appended) == 0 {
		return jsonResponse(http.StatusOK, bikeView(res.State))
	}
	resp := jsonResponse(http.StatusCreated, bikeView(res.State))
	resp.headers["Location"] = "/bikes/" + id
	return resp
}

func (a *API) getBike(r *request) response {
	id, bad := bikeParam(r)
	if bad != nil {
		return *bad
	}
	bike, _, err := a.cfg.Commands.LoadBike(r.ctx, id)
	if err != nil {
		return errorResponse(err)
	}
	if !bike.Registered {
		return errorResponse(rental.ErrBikeNotRegistered)
	}
	return jsonResponse(http.StatusOK, BikeAvailability{BikeID: bike.ID, Available: bike.Status == rental.StatusAvailable})
}

func (a *API) returnBike(r *request) response {
	id, bad := bikeParam(r)
	if bad != nil {
		return *bad
	}
	var body ReturnRequest
	if bad := decodeJSON(r, &body, true); bad != nil {
		return *bad
	}
	if body.RentalID != "" {
		if owner, err := rental.BikeIDOf(body.RentalID); err != nil || owner != id {
			return invalid(InvalidParam{Name: "rentalId", Reason: "must be a rental id of bike " + id})
		}
	}
	res, err := a.cfg.Commands.Bike(r.ctx, rental.ReturnBike{BikeID: id, RentalID: body.RentalID}, r.meta())
	if err != nil {
		return errorResponse(err)
	}
	return jsonResponse(http.StatusOK, bikeView(res.State))
}

func (a *API) requestBike(r *request) response {
	var body RentalRequest
	if bad := decodeJSON(r, &body, false); bad != nil {
		return *bad
	}
	var params []InvalidParam
	if !rental.ValidBikeID(body.BikeID) {
		params = append(params, InvalidParam{Name: "bikeId", Reason: fmt.Sprintf("required, 1 to %d characters of A-Z, a-z, 0-9, _ or -", rental.MaxBikeIDLength)})
	}
	key := r.header("Idempotency-Key")
	if key != "" && !validKey(key) {
		params = append(params, InvalidParam{Name: "Idempotency-Key", Reason: fmt.Sprintf("must be 1 to %d printable ASCII characters", MaxIdempotencyKeyLength)})
	}
	if len(params) > 0 {
		return invalid(params...)
	}
	renter := r.caller.subject
	// With an Idempotency-Key the rental id is derived from it, so a retry asks for
	// the same rental and the decider recognises it: the first answer comes back.
	var suffix string
	if key != "" {
		suffix = ident.Derived(rental.RentalSuffixLength, body.BikeID, renter, key)
	} else {
		suffix = ident.Random(rental.RentalSuffixLength)
	}
	rentalID := rental.NewRentalID(body.BikeID, suffix)
	meta := r.meta()
	meta.CorrelationID = rentalID
	if _, err := a.cfg.Commands.Bike(r.ctx, rental.RequestBike{BikeID: body.BikeID, Renter: renter, RentalID: rentalID}, meta); err != nil {
		return errorResponse(err)
	}
	resp := jsonResponse(http.StatusAccepted, RentalAccepted{
		RentalID: rentalID, BikeID: body.BikeID, Renter: renter,
		Status: string(rentalview.StatusRequested), PaymentReference: payment.ReferenceFor(rentalID),
	})
	resp.headers["Location"] = "/rentals/" + rentalID
	return resp
}

func validKey(k string) bool {
	if len(k) > MaxIdempotencyKeyLength {
		return false
	}
	for _, c := range k {
		if c > unicode.MaxASCII || !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// getRental answers a rental's view to its renter and to operators. Another
// renter's rental answers exactly as one that does not exist.
func (a *API) getRental(r *request) response {
	id, bad := idParam(r, "rentalId")
	if bad != nil {
		return *bad
	}
	view, err := rentalview.Load(r.ctx, a.cfg.Commands.Store(), id)
	if errors.Is(err, rental.ErrInvalidRentalID) || errors.Is(err, rentalview.ErrNotFound) ||
		err == nil && !r.caller.operator && view.Renter != r.caller.subject {
		return errorResponse(fmt.Errorf("%w: %s", rentalview.ErrNotFound, id))
	}
	if err != nil {
		return errorResponse(err)
	}
	switch {
	case view.Renter != r.caller.subject: // an operator: what pays is the renter's alone
		view = view.WithoutSecrets()
	case !r.caller.operator: // the renter: what operators recorded for themselves is theirs
		view = view.ForRenter()
	}
	return jsonResponse(http.StatusOK, view)
}

// Rental-list paging limits.
const (
	DefaultRentalsLimit = 20
	MaxRentalsLimit     = command.MaxRentalsPage
)

// RentalSummary is one rental in GET /rentals.
type RentalSummary struct {
	RentalID    string    `json:"rentalId"`
	BikeID      string    `json:"bikeId"`
	RequestedAt time.Time `json:"requestedAt"`
}

// RentalList is the answer to GET /rentals: the caller's rentals, newest first, and
// the cursor of the next page, absent on the last.
type RentalList struct {
	Rentals    []RentalSummary `json:"rentals"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// listRentals answers the caller's own rentals a page at a time, from the caller's
// renter stream alone. The cursor is opaque to clients; it is the place in that
// stream to continue from, so a cursor can only ever page through the caller's own.
func (a *API) listRentals(r *request) response {
	var params []InvalidParam
	limit := DefaultRentalsLimit
	if v, ok := r.raw.QueryStringParameters["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxRentalsLimit {
			params = append(params, InvalidParam{Name: "limit", Reason: fmt.Sprintf("a whole number from 1 to %d", MaxRentalsLimit)})
		}
		limit = n
	}
	var before int64
	if v, ok := r.raw.QueryStringParameters["cursor"]; ok {
		var err error
		if before, err = decodeCursor(v); err != nil {
			params = append(params, InvalidParam{Name: "cursor", Reason: "not a cursor this API gave out"})
		}
	}
	if len(params) > 0 {
		return invalid(params...)
	}
	rentals, err := a.cfg.Commands.RenterRentals(r.ctx, r.caller.subject, before, limit)
	if err != nil {
		return errorResponse(err)
	}
	out := RentalList{Rentals: make([]RentalSummary, len(rentals))}
	for i, x := range rentals {
		out.Rentals[i] = RentalSummary{RentalID: x.RentalID, BikeID: x.BikeID, RequestedAt: x.RequestedAt}
	}
	if n := len(rentals); n == limit && rentals[n-1].Version > 1 {
		out.NextCursor = encodeCursor(rentals[n-1].Version)
	}
	return jsonResponse(http.StatusOK, out)
}

// encodeCursor and decodeCursor turn a place in a renter's stream into the opaque
// cursor of GET /rentals and back.
func encodeCursor(version int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v" + strconv.FormatInt(version, 10)))
}

func decodeCursor(s string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 2 || raw[0] != 'v' {
		return 0, errors.New("malformed cursor")
	}
	v, err := strconv.ParseInt(string(raw[1:]), 10, 64)
	if err != nil || v < 2 {
		return 0, errors.New("malformed cursor")
	}
	return v, nil
}

func (a *API) cancelPayment(r *request) response {
	id, bad := idParam(r, "rentalId")
	if bad != nil {
		return *bad
	}
	if bad := decodeJSON(r, &struct{}{}, true); bad != nil {
		return *bad
	}
	if a.cfg.Canceller == nil {
		return blank(http.StatusNotImplemented, "the rental-payment process is not available in this deployment")
	}
	outcome, err := a.cfg.Canceller.CancelRentalPayment(r.ctx, id, r.meta())
	if err != nil {
		return errorResponse(err)
	}
	return jsonResponse(http.StatusOK, CancelPaymentResult{RentalID: id, Outcome: outcome})
}

// WebhookAnswer is the answer to an authentic provider event.
type WebhookAnswer struct {
	EventID          string `json:"eventId,omitempty"`
	PaymentReference string `json:"paymentReference,omitempty"`
	// Status is the payment's after the event; Refund where its money stands when
	// it arrived after the payment was given up on.
	Status string `json:"status,omitempty"`
	Refund string `json:"refund,omitempty"`
	// Duplicate is true when this delivery repeated an event already applied.
	Duplicate bool `json:"duplicate,omitempty"`
	// Ignored is true for an event that is not about one of our payments.
	Ignored bool `json:"ignored,omitempty"`
	// Mismatch is true for an event that names one of our payments but not the
	// provider payment, amount or currency recorded for it: it changed nothing
	// (Status is the payment's, unchanged), operators see it (rentalctl
	// mismatches), and money it reports taken on another provider payment is
	// refunded there or owed.
	Mismatch bool `json:"mismatch,omitempty"`
}

func (a *API) genericWebhook(r *request) response {
	return a.providerWebhook(r, generic.Provider{Verifier: a.cfg.Webhook}, false)
}

func (a *API) stripeWebhook(r *request) response {
	if a.cfg.Stripe == nil {
		return blank(http.StatusNotImplemented, "this deployment does not take payments through Stripe")
	}
	return a.providerWebhook(r, a.cfg.Stripe, true)
}

// providerWebhook refuses a body that is not JSON, as every route does, then
// verifies the provider's event over its raw body before anything else is looked
// at, and applies it once. Every authentic event about a payment we
// know is acknowledged with 200, late ones included, so that the provider stops
// retrying; with ignoreUnknown, so is an event about a payment that is not ours.
func (a *API) providerWebhook(r *request, parser WebhookParser, ignoreUnknown bool) response {
	if bad := refuseUnlessJSON(r); bad != nil {
		return *bad
	}
	ev, err := parser.ParseWebhook(r.header, r.body, a.cfg.Now())
	switch {
	case errors.Is(err, payment.ErrWebhookUnauthentic):
		resp := errorResponse(err)
		resp.err = err
		return resp
	case errors.Is(err, payment.ErrWebhookIgnored):
		return jsonResponse(http.StatusOK, WebhookAnswer{Ignored: true})
	case errors.Is(err, payment.ErrWebhookMalformed):
		return invalid(InvalidParam{Name: "body", Reason: strings.TrimPrefix(err.Error(), "payment: ")})
	case err != nil:
		return errorResponse(err)
	}
	resp := a.applyWebhook(r, ev, ignoreUnknown)
	// The request's log line names the provider's event, which is the cause every
	// recorded event names: the request and what it recorded stay tied.
	resp.logAttrs = append(resp.logAttrs, slog.String("provider", ev.Provider), slog.String("providerEventId", ev.EventID))
	return resp
}

// applyWebhook applies a verified provider event once and answers it.
func (a *API) applyWebhook(r *request, ev payment.ProviderEvent, ignoreUnknown bool) response {
	res, err := a.cfg.Commands.ApplyProviderEvent(r.ctx, ev)
	if ignoreUnknown && errors.Is(err, payment.ErrPaymentNotFound) || errors.Is(err, payment.ErrWebhookIgnored) {
		return jsonResponse(http.StatusOK, WebhookAnswer{EventID: ev.EventID, Ignored: true})
	}
	if err != nil {
		return errorResponse(err)
	}
	if m := res.Mismatch; m != nil && !res.Duplicate {
		a.cfg.Logger.LogAttrs(r.ctx, slog.LevelWarn, "provider event does not match its payment",
			slog.String("provider", m.Provider), slog.String("providerEventId", m.EventID), slog.String("paymentReference", m.Reference),
			slog.Any("fields", m.Fields), slog.Bool("refundDue", m.RefundDue))
	}
	return jsonResponse(http.StatusOK, WebhookAnswer{EventID: ev.EventID, PaymentReference: ev.Reference,
		Status: string(res.Payment.Status), Refund: string(res.Payment.Refund), Duplicate: res.Duplicate, Mismatch: res.Mismatch != nil})
}

// The to-do list's listing limits (GET /payments/pending, GET /deadlines, GET
// /processes/stuck, GET /refunds/owed): at most a page of deadlines.List.
const (
	DefaultPendingLimit = 100
	MaxPendingLimit     = deadlines.MaxLimit
)

// OutstandingPayment is one outstanding payment in GET /payments/pending.
type OutstandingPayment struct {
	PaymentReference string    `json:"paymentReference"`
	RentalID         string    `json:"rentalId"`
	PreparedAt       time.Time `json:"preparedAt"`
	AgeSeconds       int64     `json:"ageSeconds"`
}

// OutstandingPayments is the answer to GET /payments/pending.
type OutstandingPayments struct {
	Payments []OutstandingPayment `json:"payments"`
	Count    int                  `json:"count"`
	Limit    int                  `json:"limit"`
}

func (a *API) outstandingPayments(r *request) response {
	limit := DefaultPendingLimit
	if v, ok := r.raw.QueryStringParameters["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPendingLimit {
			return invalid(InvalidParam{Name: "limit", Reason: fmt.Sprintf("a whole number from 1 to %d", MaxPendingLimit)})
		}
		limit = n
	}
	if a.cfg.Deadlines == nil {
		return blank(http.StatusNotImplemented, "the to-do list is not available in this deployment")
	}
	now := a.cfg.Now()
	rows, _, err := a.cfg.Deadlines.Payments(r.ctx, false, now, limit)
	if err != nil {
		return errorResponse(err)
	}
	out := OutstandingPayments{Payments: make([]OutstandingPayment, len(rows)), Count: len(rows), Limit: limit}
	for i, row := range rows {
		out.Payments[i] = OutstandingPayment{PaymentReference: row.Reference, RentalID: row.RentalID, PreparedAt: row.PreparedAt,
			AgeSeconds: int64(now.Sub(row.PreparedAt).Seconds())}
	}
	return jsonResponse(http.StatusOK, out)
}
