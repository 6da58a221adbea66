package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// DefaultProviderTimeout bounds one call to the payment provider when nothing else
// is configured: well inside the command function's 10 s and the stream functions'
// 60 s, so that a provider that does not answer fails the request or the one stream
// record that waited on it, not the invocation, and long enough for a provider's
// own retries of a slow answer (Stripe answers in well under a second).
const DefaultProviderTimeout = 5 * time.Second

// MaxProviderTimeout is the longest bound a call to the payment provider may be
// given: one call, and the recording of what it answered, must fit in the command
// function's 10 s.
const MaxProviderTimeout = 8 * time.Second

// ErrProviderTimeout reports a call to the payment provider that did not answer
// within its bound (WithProviderTimeout).
var ErrProviderTimeout = errors.New("command: the payment provider did not answer in time")

// WithProviderTimeout bounds each call to the payment provider by d
// (DefaultProviderTimeout unless set; d of zero or less leaves calls bounded only
// by their callers' contexts): a call still unanswered after d is abandoned and
// fails with an error matching ErrProviderTimeout (and the provider's own error).
// Answers are passed on as the provider gives them, so a cancellation that timed
// out is whatever the provider says of a cancellation it could not finish. A
// retry of an unanswered cancellation is started only if a whole call of d still
// fits in the command's time.
func WithProviderTimeout(d time.Duration) Option {
	return func(h *Handler) { h.providerTimeout = max(d, 0) }
}

// bounded is a provider each of whose calls is bounded by d. It is a
// PaymentProvider like any other: every method of the port is forwarded, so
// nothing the provider can do is lost behind it.
type bounded struct {
	p PaymentProvider
	d time.Duration
}

var _ PaymentProvider = bounded{}

// boundedBy returns p with each call bounded by d, p itself for a d of zero or
// less or a nil p.
func boundedBy(p PaymentProvider, d time.Duration) PaymentProvider {
	if p == nil || d <= 0 {
		return p
	}
	return bounded{p: p, d: d}
}

// Name returns the provider's name.
func (b bounded) Name() string { return b.p.Name() }

// within runs call with ctx bounded by d and names a timeout for what it is.
func within[T any](ctx context.Context, d time.Duration, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, d, ErrProviderTimeout)
	defer cancel()
	v, err := call(ctx)
	if err != nil && errors.Is(context.Cause(ctx), ErrProviderTimeout) {
		err = fmt.Errorf("%w (%s): %w", ErrProviderTimeout, d, err)
	}
	return v, err
}

func (b bounded) CreatePayment(ctx context.Context, reference string, amount int64, currency string) (payment.Created, error) {
	return within(ctx, b.d, func(ctx context.Context) (payment.Created, error) {
		return b.p.CreatePayment(ctx, reference, amount, currency)
	})
}

func (b bounded) CancelPayment(ctx context.Context, paymentID string) (payment.CancelOutcome, payment.Told, error) {
	type answer struct {
		outcome payment.CancelOutcome
		told    payment.Told
	}
	a, err := within(ctx, b.d, func(ctx context.Context) (answer, error) {
		outcome, told, err := b.p.CancelPayment(ctx, paymentID)
		return answer{outcome, told}, err
	})
	return a.outcome, a.told, err
}

func (b bounded) RefundPayment(ctx context.Context, paymentID, reference string) (string, error) {
	return within(ctx, b.d, func(ctx context.Context) (string, error) {
		return b.p.RefundPayment(ctx, paymentID, reference)
	})
}

func (b bounded) RefundUnexpected(ctx context.Context, paymentID, reference string) (string, error) {
	return within(ctx, b.d, func(ctx context.Context) (string, error) {
		return b.p.RefundUnexpected(ctx, paymentID, reference)
	})
}

func (b bounded) ReferenceOf(ctx context.Context, paymentID string) (string, error) {
	return within(ctx, b.d, func(ctx context.Context) (string, error) { return b.p.ReferenceOf(ctx, paymentID) })
}
