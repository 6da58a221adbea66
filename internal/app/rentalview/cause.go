package rentalview

import (
	"strconv"
	"strings"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// The kinds of causation id that are not another event's id: what precedes the
// first colon. The writers: the HTTP API (a request's id), the sweep (its time),
// a deadline's own schedule (its row's key), a provider's webhook event and the
// provider's answer when asked about a payment (command.ProviderCausationID,
// command.ToldCausationID), and rentalctl. The operator console's rental page
// names them in the same words (TestTheConsoleAndRentalctlNameCausesAlike).
const (
	CauseRequest         = "request"
	CauseSweep           = "sweep"
	CauseDeadline        = "deadline"
	CauseProviderEvent   = "provider-event"
	CauseRentalctl       = "rentalctl"
	CauseProviderPayment = "provider-payment"
)

// CauseKinds lists the kinds of causation id CauseOf names in words, in a new slice.
func CauseKinds() []string {
	return []string{CauseRequest, CauseSweep, CauseDeadline, CauseProviderEvent, CauseRentalctl, CauseProviderPayment}
}

// CauseOf says in words what caused e, from its causation id, as the operator
// console does: another event of the view's history (by its type, stream and
// version), an API request, the sweep, a deadline, a provider's event, the
// provider's answer about a payment, or rentalctl. An id of no known kind is quoted
// as it is; none at all is "cause not recorded".
func (v View) CauseOf(e Entry) string {
	c := e.CausationID
	if c == "" {
		return "cause not recorded"
	}
	for _, h := range v.History {
		if h.EventID != "" && h.EventID == c {
			return "caused by " + h.Type + " (" + streamKind(h.Stream) + " stream, version " + strconv.FormatInt(h.Version, 10) + ")"
		}
	}
	kind, what, _ := strings.Cut(c, ":")
	switch kind {
	case CauseRequest:
		return "caused by API request " + what
	case CauseSweep:
		return "caused by the sweep of " + what
	case CauseDeadline:
		return "caused by the deadline of payment " + what
	case CauseProviderEvent:
		return providerEventCause(what)
	case CauseRentalctl:
		return "caused by rentalctl " + what
	case CauseProviderPayment:
		return "caused by the provider's answer about payment " + what
	}
	return "caused by " + c
}

// providerEventCause reads what follows "provider-event:": the provider and its
// event id ("stripe:evt_1"), or, for an id too long to be kept whole, the provider
// and the id's SHA-256 ("stripe:sha256:<hex>").
func providerEventCause(what string) string {
	provider, id, _ := strings.Cut(what, ":")
	switch {
	case provider == "" || id == "":
		return "caused by the provider's event " + what
	case strings.HasPrefix(id, "sha256:"):
		return "caused by the provider's event whose id has SHA-256 " + strings.TrimPrefix(id, "sha256:") + " (" + provider + ")"
	}
	return "caused by the provider's event " + id + " (" + provider + ")"
}

// streamKind names the stream an event is in: bike, payment or process.
func streamKind(stream string) string {
	switch {
	case strings.HasPrefix(stream, rental.StreamID("")):
		return "bike"
	case strings.HasPrefix(stream, payment.StreamID("")):
		return "payment"
	case strings.HasPrefix(stream, rentalpayment.StreamPrefix):
		return "process"
	}
	return "other"
}
