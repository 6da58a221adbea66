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
// within its bound (see WithTimeout).
var ErrProviderTimeout = errors.New("command: the payment provider did not answer in time")

// WithTimeout returns p with each call bounded by d: a call still unanswered after d
// is abandoned and fails with an error matching ErrProviderTimeout (and the
// provider's own error). Answers are passed on as p gives them, so a cancellation
// that timed out is whatever p says of a cancellation it could not finish. p's
// optional capabilities (ReferenceFinder, UnexpectedRefunder) are kept, bounded
// too, and so is its Name; the result reports d as its CallTimeout. A d of zero or
// less returns p itself.
func WithTimeout(p PaymentProvider, d time.Duration) PaymentProvider {
	if d <= 0 {
		return p
	}
	b := bounded{p: p, d: d}
	f, finds := p.(ReferenceFinder)
	r, refunds := p.(UnexpectedRefunder)
	switch {
	case finds && refunds:
		return boundedFinderRefunder{boundedFinder{b, f}, boundedRefunder{b, r}}
	case finds:
		return boundedFinder{b, f}
	case refunds:
		return boundedRefunder{b, r}
	}
	return b
}

// CallTimeout is an optional capability of a PaymentProvider: the bound of each of
// its calls (WithTimeout's), so that a caller with a budget knows what one more
// call may cost.
type CallTimeout interface{ CallTimeout() time.Duration }

// Named is an optional capability of a PaymentProvider: the name its webhook
// events carry (payment.ProviderEvent.Provider). An event of another provider
// never applies to the payments it prepared.
type Named interface{ Name() string }

type bounded struct {
	p PaymentProvider
	d time.Duration
}

var _ PaymentProvider = bounded{}

// CallTimeout returns the bound of each call.
func (b bounded) CallTimeout() time.Duration { return b.d }

// Name returns the wrapped provider's name, "" if it has none.
func (b bounded) Name() string {
	if n, ok := b.p.(Named); ok {
		return n.Name()
	}
	return ""
}

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

func (b bounded) CancelPayment(ctx context.Context, paymentID string) (payment.CancelOutcome, error) {
	return within(ctx, b.d, func(ctx context.Context) (payment.CancelOutcome, error) {
		return b.p.CancelPayment(ctx, paymentID)
	})
}

func (b bounded) RefundPayment(ctx context.Context, paymentID, reference string) (string, error) {
	return within(ctx, b.d, func(ctx context.Context) (string, error) {
		return b.p.RefundPayment(ctx, paymentID, reference)
	})
}

type boundedFinder struct {
	bounded
	f ReferenceFinder
}

var _ ReferenceFinder = boundedFinder{}

func (b boundedFinder) ReferenceOf(ctx context.Context, paymentID string) (string, error) {
	return within(ctx, b.d, func(ctx context.Context) (string, error) { return b.f.ReferenceOf(ctx, paymentID) })
}

type boundedRefunder struct {
	bounded
	r UnexpectedRefunder
}

var _ UnexpectedRefunder = boundedRefunder{}

func (b boundedRefunder) RefundUnexpected(ctx context.Context, paymentID, reference string) (string, error) {
	return within(ctx, b.d, func(ctx context.Context) (string, error) { return b.r.RefundUnexpected(ctx, paymentID, reference) })
}

// boundedFinderRefunder is a bounded provider with both optional capabilities, as
// Stripe's adapter has them.
type boundedFinderRefunder struct {
	boundedFinder
	refunder boundedRefunder
}

func (b boundedFinderRefunder) RefundUnexpected(ctx context.Context, paymentID, reference string) (string, error) {
	return b.refunder.RefundUnexpected(ctx, paymentID, reference)
}
