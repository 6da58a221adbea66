package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	stripesdk "github.com/stripe/stripe-go/v85"
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
