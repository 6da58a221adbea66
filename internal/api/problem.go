package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/rental"
	"github.com/bikerental/bikerental/internal/rentalview"
	"github.com/bikerental/bikerental/internal/renter"
	"github.com/bikerental/bikerental/internal/strictjson"
	"github.com/bikerental/bikerental/internal/webhook"
)

// problemBase prefixes the type URI of every problem this API defines; the README
// lists them.
const problemBase = "https://github.com/bikerental/bikerental/blob/main/README.md#problem-"

// ProblemType returns the type URI of the problem this API names name, such as
// "unauthenticated", for the local gateway's own refusals.
func ProblemType(name string) string { return problemBase + name }

// Problem is an RFC 9457 problem details body.
type Problem struct {
	Type          string         `json:"type"`
	Title         string         `json:"title"`
	Status        int            `json:"status"`
	Detail        string         `json:"detail,omitempty"`
	RequestID     string         `json:"requestId,omitempty"`
	InvalidParams []InvalidParam `json:"invalidParams,omitempty"`
}

// InvalidParam names one field of the request that was wrong, and why.
type InvalidParam struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

func problem(status int, typ, detail string) response {
	title := http.StatusText(status)
	if typ != "about:blank" {
		typ = problemBase + typ
	}
	return problemResponse(Problem{Type: typ, Title: title, Status: status, Detail: detail})
}

func problemResponse(p Problem) response {
	return response{status: p.Status, headers: map[string]string{"Content-Type": "application/problem+json"}, problem: &p}
}

func invalid(params ...InvalidParam) response {
	p := Problem{Type: problemBase + "invalid-request", Title: http.StatusText(http.StatusBadRequest), Status: http.StatusBadRequest,
		Detail: "the request is not valid: see invalidParams", InvalidParams: params}
	return problemResponse(p)
}

func internalError(err error) response {
	resp := problem(http.StatusInternalServerError, "about:blank", "an unexpected error occurred; quote the request id when reporting it")
	resp.err = err
	return resp
}

// errorResponse is the one place where errors become HTTP statuses.
func errorResponse(err error) response {
	type mapping struct {
		target error
		status int
		typ    string
	}
	for _, m := range []mapping{
		{webhook.ErrUnauthorized, http.StatusUnauthorized, "unauthorized"},
		{payment.ErrWebhookUnauthentic, http.StatusUnauthorized, "unauthorized"},
		{payment.ErrWebhookMalformed, http.StatusBadRequest, "invalid-request"},
		{command.ErrProviderEventReused, http.StatusUnprocessableEntity, "webhook-event-reused"},
		{rental.ErrInvalidCommand, http.StatusBadRequest, "invalid-request"},
		{payment.ErrInvalidCommand, http.StatusBadRequest, "invalid-request"},
		{renter.ErrInvalidCommand, http.StatusBadRequest, "invalid-request"},
		{eventstore.ErrInvalidInput, http.StatusBadRequest, "invalid-request"},
		{rental.ErrBikeNotRegistered, http.StatusNotFound, "bike-not-found"},
		{payment.ErrPaymentNotFound, http.StatusNotFound, "payment-not-found"},
		{rentalview.ErrNotFound, http.StatusNotFound, "rental-not-found"},
		{rental.ErrBikeUnavailable, http.StatusConflict, "bike-unavailable"},
		{rental.ErrRentalIDInUse, http.StatusConflict, "rental-id-in-use"},
		{renter.ErrTooManyPendingRequests, http.StatusConflict, "too-many-pending-requests"},
		{rental.ErrNoPendingRequest, http.StatusConflict, "no-pending-request"},
		{rental.ErrRequestAlreadyApproved, http.StatusConflict, "request-already-approved"},
		{rental.ErrBikeNotRented, http.StatusConflict, "bike-not-rented"},
		{rental.ErrNotActiveRental, http.StatusConflict, "not-active-rental"},
		{payment.ErrPaymentAlreadyConfirmed, http.StatusConflict, "payment-already-confirmed"},
	} {
		if errors.Is(err, m.target) {
			resp := problem(m.status, m.typ, detailOf(err, m.target))
			return resp
		}
	}
	if errors.Is(err, eventstore.ErrConcurrency) || errors.Is(err, context.DeadlineExceeded) {
		resp := problem(http.StatusServiceUnavailable, "busy", "the resource is changing too quickly; retry after the delay in Retry-After")
		resp.headers["Retry-After"] = "1"
		resp.err = err
		return resp
	}
	if transient(err) {
		resp := problem(http.StatusServiceUnavailable, "unavailable", "the service's storage did not answer in time, and the request may or may not have taken effect; retry after the delay in Retry-After (with an Idempotency-Key, POST /rentals returns the first answer; a return that names its rentalId is done at most once)")
		resp.headers["Retry-After"] = "2"
		resp.err = err
		return resp
	}
	return internalError(err)
}

// transient reports an error of the storage that outlasted the AWS SDK's own retries
// (throttling, server errors, lost connections): every command is safe to retry, so
// it is a 503 with Retry-After, not a 500.
func transient(err error) bool {
	var exhausted *retry.MaxAttemptsError
	if errors.As(err, &exhausted) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded", "InternalServerError", "ServiceUnavailable":
			return true
		}
	}
	return false
}

// detailOf returns the message of a business refusal for the client: the sentinel's
// own text, which the domain packages write for people, or for input errors the
// full message, which names the field. Other internals never reach the client.
func detailOf(err, target error) string {
	switch target {
	case rental.ErrInvalidCommand, payment.ErrInvalidCommand, renter.ErrInvalidCommand, eventstore.ErrInvalidInput, payment.ErrWebhookMalformed:
		return err.Error()
	case webhook.ErrUnauthorized, payment.ErrWebhookUnauthentic:
		return "the webhook's signature header is missing, malformed, stale or wrong"
	}
	return target.Error()
}

// MaxJSONDepth is the deepest nesting of arrays and objects a JSON body may have;
// a deeper body is refused with 400, naming "body", before it is decoded. It is the
// service's one limit, strictjson.MaxDepth.
const MaxJSONDepth = strictjson.MaxDepth

// decodeJSON decodes a JSON object body into v with strictjson.Decode, refusing
// other content types, and answering what strictjson refuses (a member twice or in
// another case, an unknown member, nesting deeper than MaxJSONDepth, trailing data,
// ...) with 400 invalid-request, naming "body" and, in the reason, the member. An
// empty body decodes as {} when emptyOK.
func decodeJSON(r *request, v any, emptyOK bool) *response {
	if len(bytes.TrimSpace(r.body)) == 0 {
		if emptyOK {
			return nil
		}
		resp := invalid(InvalidParam{Name: "body", Reason: "a JSON object is required"})
		return &resp
	}
	ct := r.header("Content-Type")
	if !jsonMediaType(ct) {
		resp := problem(http.StatusUnsupportedMediaType, "about:blank", fmt.Sprintf("Content-Type %q is not accepted; send application/json", ct))
		return &resp
	}
	if err := strictjson.Decode(r.body, v); err != nil {
		resp := invalidBody(err)
		return &resp
	}
	return nil
}

// invalidBody is the answer to a body strictjson refused: 400 invalid-request,
// naming "body", with the reason (which names the member) in the detail as well.
func invalidBody(err error) response {
	reason := err.Error()
	resp := invalid(InvalidParam{Name: "body", Reason: reason})
	resp.problem.Detail = "the body is not valid: " + reason
	return resp
}

// jsonMediaType reports whether a Content-Type names JSON: application/json or a
// +json type, with any parameters.
func jsonMediaType(ct string) bool {
	if ct == "application/json" {
		return true // what nearly every client sends, parsed without allocating
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	return err == nil && (mediaType == "application/json" || len(mediaType) > 5 && mediaType[len(mediaType)-5:] == "+json")
}

func jsonResponse(status int, v any) response {
	body, err := json.Marshal(v)
	if err != nil {
		return internalError(err)
	}
	return response{status: status, headers: map[string]string{"Content-Type": "application/json"}, body: body}
}
