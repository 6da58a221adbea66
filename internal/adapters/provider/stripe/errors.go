package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	stripesdk "github.com/stripe/stripe-go/v85"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// APIError is Stripe's answer to a request it refused or failed, with only what is
// safe to log: the error's own fields, never the objects Stripe may embed in it
// (the PaymentIntent, client secret and all), and with the secret key blanked out
// of the message should it appear there.
type APIError struct {
	// Op is what the adapter was doing, e.g. "cancel payment".
	Op string
	// HTTPStatus is the answer's status code.
	HTTPStatus int
	// Type is Stripe's error type: api_error, card_error, idempotency_error or
	// invalid_request_error.
	Type string
	// Code is Stripe's error code when it gives one, e.g. resource_missing,
	// payment_intent_unexpected_state, charge_already_refunded.
	Code string
	// DeclineCode is the card issuer's reason for a decline, if any.
	DeclineCode string
	// Param is the request parameter the error is about, if any.
	Param string
	// Message is Stripe's human-readable message.
	Message string
	// RequestID is Stripe's id of the request (req_...), for its logs and support.
	RequestID string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stripe: %s: HTTP %d", e.Op, e.HTTPStatus)
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " code=%s", e.Code)
	}
	if e.DeclineCode != "" {
		fmt.Fprintf(&b, " decline_code=%s", e.DeclineCode)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " param=%s", e.Param)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later: Stripe failed
// (5xx), was busy (429) or saw a conflicting request (409).
func (e *APIError) Temporary() bool {
	return e.HTTPStatus >= 500 || e.HTTPStatus == http.StatusTooManyRequests ||
		e.HTTPStatus == http.StatusConflict || e.Type == string(stripesdk.ErrorTypeAPI)
}

// IsTemporary reports whether err, from a Provider's method, leaves the outcome of
// the call unknown and trying again may succeed: a network error, a timeout, a
// cancelled context, an unreadable answer, or an APIError that is Temporary. It is
// false for nil, for ErrInvalidArgument and for Stripe's definite refusals.
func IsTemporary(err error) bool {
	if err == nil || errors.Is(err, ErrInvalidArgument) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	return true
}

// wrap turns an error of stripe-go into the adapter's: an *APIError for Stripe's
// answers, the error wrapped with op otherwise (a context's error stays visible to
// errors.Is). Nothing of the secret key survives in the message.
func (p *Provider) wrap(op string, err error) error {
	var se *stripesdk.Error
	if errors.As(err, &se) {
		return &APIError{
			Op:          op,
			HTTPStatus:  se.HTTPStatusCode,
			Type:        p.redact(string(se.Type)),
			Code:        p.redact(string(se.Code)),
			DeclineCode: p.redact(string(se.DeclineCode)),
			Param:       p.redact(se.Param),
			Message:     p.redact(se.Msg),
			RequestID:   p.redact(se.RequestID),
		}
	}
	if p.key != "" && strings.Contains(err.Error(), p.key) {
		// Not wrapped: the wrapped error's message would carry the key.
		msg := fmt.Sprintf("stripe: %s: %s", op, p.redact(err.Error()))
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w", msg, context.DeadlineExceeded)
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s: %w", msg, context.Canceled)
		}
		return errors.New(msg)
	}
	return fmt.Errorf("stripe: %s: %w", op, err)
}

// redact blanks the secret key out of s.
func (p *Provider) redact(s string) string {
	if p.key == "" {
		return s
	}
	return strings.ReplaceAll(s, p.key, "[secret key]")
}

// refusedForGood are the codes of Stripe's refusals of a refund that no retry and
// nothing an operator can change at Stripe will turn into a refund of this
// payment: the money has to go back some other way (by hand). Every other refusal
// is not in it, on purpose, and stays an error that leaves the refund due:
// authentication_error and permission_error (a key revoked, or one without the
// right to refund), resource_missing (a key of another account or mode),
// balance_insufficient (a balance an operator can top up), idempotency_error and
// a parameter Stripe does not take (a defect of ours): each is fixed at Stripe or
// in the code, after which the next retry makes the refund, and none of them may
// quietly become money owed by hand.
var refusedForGood = map[string]string{
	string(stripesdk.ErrorCodeChargeDisputed):        "the payment was disputed (charged back)",
	string(stripesdk.ErrorCodeRefundDisputedPayment): "the payment is disputed",
	string(stripesdk.ErrorCodeChargeNotRefundable):   "the payment cannot be refunded",
	string(stripesdk.ErrorCodeAmountTooLarge):        "the amount left to refund is smaller than the payment",
	// A refund of a PaymentIntent without a successful charge: our records say
	// money was taken, Stripe says none is there to give back, so operators look.
	string(stripesdk.ErrorCodePaymentIntentUnexpectedState): "the payment has no successful charge to refund",
}

// refundAnswer turns Stripe's refusal of a refund (err, from wrap) into what the
// payment context acts on: payment.ErrAlreadyRefunded (wrapping the APIError) for
// charge_already_refunded, a *payment.RefundRefused for a code of refusedForGood,
// and err as it is otherwise.
func refundAnswer(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Temporary() {
		return err
	}
	if ae.Code == string(stripesdk.ErrorCodeChargeAlreadyRefunded) {
		return fmt.Errorf("%w: %w", payment.ErrAlreadyRefunded, err)
	}
	what, ok := refusedForGood[ae.Code]
	if !ok {
		return err
	}
	reason := fmt.Sprintf("Stripe refused the refund (%s): %s", ae.Code, what)
	if ae.Message != "" {
		reason += ": " + ae.Message
	}
	if ae.RequestID != "" {
		reason += " (request " + ae.RequestID + ")"
	}
	return payment.RefusedRefund(reason)
}
