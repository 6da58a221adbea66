package httpapi

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

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// problemBase prefixes the type URI of every problem this API defines: README.md's
// address and the anchor of the problem's name.
const problemBase = "https://github.com/bikerental/bikerental/blob/main/README.md#problem-"

// ProblemType is a kind of refusal this API defines, with its own type URI and
// status. README.md's "Problem types" lists every one under the anchor its URI
// names; a test holds the README to problemTypes. Generic HTTP refusals are
// AboutBlank, RFC 9457's type for a problem that is only its status.
type ProblemType int

// The problem types of the API; problemTypes says what each is.
const (
	AboutBlank ProblemType = iota
	ProblemInvalidRequest
	ProblemUnauthenticated
	ProblemForbidden
	ProblemUnauthorized
	ProblemBikeNotFound
	ProblemPaymentNotFound
	ProblemRentalNotFound
	ProblemBikeUnavailable
	ProblemRentalIDInUse
	ProblemTooManyPendingRequests
	ProblemNoPendingRequest
	ProblemRequestAlreadyApproved
	ProblemBikeNotRented
	ProblemNotActiveRental
	ProblemPaymentAlreadyConfirmed
	ProblemRefundNotOwed
	ProblemRefundAlreadyRecorded
	ProblemRefundAmountNotOwed
	ProblemWebhookEventReused
	ProblemBusy
	ProblemUnavailable
	numProblemTypes
)

// problemTypes is the one declaration of the problem types: each one's name, the
// anchor of its type URI, and the status it answers with.
var problemTypes = [numProblemTypes]struct {
	name   string
	status int
}{
	AboutBlank:                     {"", 0},
	ProblemInvalidRequest:          {"invalid-request", http.StatusBadRequest},
	ProblemUnauthenticated:         {"unauthenticated", http.StatusUnauthorized},
	ProblemForbidden:               {"forbidden", http.StatusForbidden},
	ProblemUnauthorized:            {"unauthorized", http.StatusUnauthorized},
	ProblemBikeNotFound:            {"bike-not-found", http.StatusNotFound},
	ProblemPaymentNotFound:         {"payment-not-found", http.StatusNotFound},
	ProblemRentalNotFound:          {"rental-not-found", http.StatusNotFound},
	ProblemBikeUnavailable:         {"bike-unavailable", http.StatusConflict},
	ProblemRentalIDInUse:           {"rental-id-in-use", http.StatusConflict},
	ProblemTooManyPendingRequests:  {"too-many-pending-requests", http.StatusConflict},
	ProblemNoPendingRequest:        {"no-pending-request", http.StatusConflict},
	ProblemRequestAlreadyApproved:  {"request-already-approved", http.StatusConflict},
	ProblemBikeNotRented:           {"bike-not-rented", http.StatusConflict},
	ProblemNotActiveRental:         {"not-active-rental", http.StatusConflict},
	ProblemPaymentAlreadyConfirmed: {"payment-already-confirmed", http.StatusConflict},
	ProblemRefundNotOwed:           {"refund-not-owed", http.StatusConflict},
	ProblemRefundAlreadyRecorded:   {"refund-already-recorded", http.StatusConflict},
	ProblemRefundAmountNotOwed:     {"refund-amount-not-owed", http.StatusUnprocessableEntity},
	ProblemWebhookEventReused:      {"webhook-event-reused", http.StatusUnprocessableEntity},
	ProblemBusy:                    {"busy", http.StatusServiceUnavailable},
	ProblemUnavailable:             {"unavailable", http.StatusServiceUnavailable},
}

// ProblemTypes returns every problem type the API defines, AboutBlank aside, in
// declaration order.
func ProblemTypes() []ProblemType {
	out := make([]ProblemType, 0, numProblemTypes-1)
	for t := AboutBlank + 1; t < numProblemTypes; t++ {
		out = append(out, t)
	}
	return out
}

// Name returns the problem type's name, such as "bike-not-found": the anchor of
// its URI after "problem-". It is "" for AboutBlank and for no declared type.
func (t ProblemType) Name() string {
	if t < 0 || t >= numProblemTypes {
		return ""
	}
	return problemTypes[t].name
}

// Status returns the HTTP status the problem type answers with; 0 for AboutBlank,
// whose status is the refusal's own, and for no declared type.
func (t ProblemType) Status() int {
	if t < 0 || t >= numProblemTypes {
		return 0
	}
	return problemTypes[t].status
}

// URI returns the problem type's URI: "about:blank" for AboutBlank (and for no
// declared type), else README.md's address with the anchor "problem-<name>".
func (t ProblemType) URI() string {
	if name := t.Name(); name != "" {
		return problemBase + name
	}
	return "about:blank"
}

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

// problem returns the refusal of type typ, with its status; generic refusals are
// blank's, and any other type without a status is an internal error.
func problem(typ ProblemType, detail string) response {
	status := typ.Status()
	if status == 0 {
		return internalError(fmt.Errorf("api: a refusal of problem type %d, which has no status", typ))
	}
	return problemResponse(Problem{Type: typ.URI(), Title: http.StatusText(status), Status: status, Detail: detail})
}

// blank returns a generic HTTP refusal, of type about:blank, with status.
func blank(status int, detail string) response {
	return problemResponse(Problem{Type: AboutBlank.URI(), Title: http.StatusText(status), Status: status, Detail: detail})
}

func problemResponse(p Problem) response {
	return response{status: p.Status, headers: map[string]string{"Content-Type": "application/problem+json"}, problem: &p}
}

func invalid(params ...InvalidParam) response {
	resp := problem(ProblemInvalidRequest, "the request is not valid: see invalidParams")
	resp.problem.InvalidParams = params
	return resp
}

func internalError(err error) response {
	resp := blank(http.StatusInternalServerError, "an unexpected error occurred; quote the request id when reporting it")
	resp.err = err
	return resp
}

// errorResponse is the one place where errors become HTTP statuses.
func errorResponse(err error) response {
	type mapping struct {
		target error
		typ    ProblemType
	}
	for _, m := range []mapping{
		{webhook.ErrUnauthorized, ProblemUnauthorized},
		{payment.ErrWebhookUnauthentic, ProblemUnauthorized},
		{payment.ErrWebhookMalformed, ProblemInvalidRequest},
		{command.ErrProviderEventReused, ProblemWebhookEventReused},
		{rental.ErrInvalidCommand, ProblemInvalidRequest},
		{payment.ErrInvalidCommand, ProblemInvalidRequest},
		{renter.ErrInvalidCommand, ProblemInvalidRequest},
		{eventstore.ErrInvalidInput, ProblemInvalidRequest},
		{rental.ErrBikeNotRegistered, ProblemBikeNotFound},
		{payment.ErrPaymentNotFound, ProblemPaymentNotFound},
		{rentalview.ErrNotFound, ProblemRentalNotFound},
		{rental.ErrBikeUnavailable, ProblemBikeUnavailable},
		{rental.ErrRentalIDInUse, ProblemRentalIDInUse},
		{renter.ErrTooManyPendingRequests, ProblemTooManyPendingRequests},
		{rental.ErrNoPendingRequest, ProblemNoPendingRequest},
		{rental.ErrRequestAlreadyApproved, ProblemRequestAlreadyApproved},
		{rental.ErrBikeNotRented, ProblemBikeNotRented},
		{rental.ErrNotActiveRental, ProblemNotActiveRental},
		{payment.ErrPaymentAlreadyConfirmed, ProblemPaymentAlreadyConfirmed},
		{payment.ErrRefundAlreadyRecorded, ProblemRefundAlreadyRecorded},
		{payment.ErrNoRefundOwed, ProblemRefundNotOwed},
		{payment.ErrRefundAmountNotOwed, ProblemRefundAmountNotOwed},
	} {
		if errors.Is(err, m.target) {
			resp := problem(m.typ, detailOf(err, m.target))
			return resp
		}
	}
	if errors.Is(err, eventstore.ErrConcurrency) || errors.Is(err, context.DeadlineExceeded) {
		resp := problem(ProblemBusy, "the resource is changing too quickly; retry after the delay in Retry-After")
		resp.headers["Retry-After"] = "1"
		resp.err = err
		return resp
	}
	if transient(err) {
		resp := problem(ProblemUnavailable, "the service's storage did not answer in time, and the request may or may not have taken effect; retry after the delay in Retry-After (with an Idempotency-Key, POST /rentals returns the first answer; a return that names its rentalId is done at most once)")
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
	case payment.ErrRefundAmountNotOwed:
		return err.Error() // names the amount owed, for the operator who sent another
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
	if bad := refuseUnlessJSON(r); bad != nil {
		return bad
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

// refuseUnlessJSON answers 415 unless the request's Content-Type names JSON
// (jsonMediaType): the one rule for every body this API reads, the webhooks'
// included, and nil when it does.
func refuseUnlessJSON(r *request) *response {
	ct := r.header("Content-Type")
	if jsonMediaType(ct) {
		return nil
	}
	resp := blank(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not accepted; send application/json", ct))
	return &resp
}

func jsonResponse(status int, v any) response {
	body, err := json.Marshal(v)
	if err != nil {
		return internalError(err)
	}
	return response{status: status, headers: map[string]string{"Content-Type": "application/json"}, body: body}
}
