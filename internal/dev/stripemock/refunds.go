package stripemock

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Refunds is an http.RoundTripper for a Stripe client, in front of stripe-mock
// (Next, or Paid in front of it), that plays Stripe answering the creation of
// refunds (POST /v1/refunds) in ways stripe-mock, which always makes them, cannot:
// failing for a while, refusing for good. While an answer is set (Play), each
// refund request is answered with it, as many times as it was set for, and then
// passed on to Next again. It keeps the Idempotency-Key of every refund request
// and counts those passed on, which stripe-mock made. Safe for concurrent use.
type Refunds struct {
	Next http.RoundTripper

	mu     sync.Mutex
	answer RefundAnswer
	left   int // times answer is still played; -1: for ever
	keys   []string
	played int
	made   int
}

// RefundAnswer is how Stripe answers a refund request: an HTTP status and a JSON
// body, or, when Err is set, no answer at all (the connection failed with Err).
type RefundAnswer struct {
	Status int
	Body   string
	Err    error
}

// Answers Stripe gives while it cannot make a refund just now.
var (
	// Unavailable is Stripe failing (a 503 api_error, which stripe-go does not
	// retry itself).
	Unavailable = RefundAnswer{Status: http.StatusServiceUnavailable,
		Body: `{"error":{"type":"api_error","message":"Stripe is briefly unavailable"}}`}
	// RateLimited is Stripe refusing a request for the rate (429).
	RateLimited = RefundAnswer{Status: http.StatusTooManyRequests,
		Body: `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests hit the API too quickly."}}`}
	// TimedOut is a request that never got an answer (stripe-go retries it twice
	// itself, under the same idempotency key).
	TimedOut = RefundAnswer{Err: errTimedOut{}}
)

type errTimedOut struct{}

func (errTimedOut) Error() string   { return "stripemock: the refund request timed out" }
func (errTimedOut) Timeout() bool   { return true }
func (errTimedOut) Temporary() bool { return true }

// Refusal is Stripe refusing a refund with an error of errType (invalid_request_error,
// authentication_error, ...) and code ("" for none), answered with status.
func Refusal(status int, errType, code, message string) RefundAnswer {
	body := fmt.Sprintf(`{"error":{"type":%q,"message":%q`, errType, message)
	if code != "" {
		body += fmt.Sprintf(`,"code":%q`, code)
	}
	return RefundAnswer{Status: status, Body: body + "}}"}
}

// Play answers the next times refund requests with a (times -1: every one, until
// Play is called again; 0: none, passing them all on).
func (f *Refunds) Play(a RefundAnswer, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer, f.left = a, times
}

// Keys returns the Idempotency-Key of every refund request, in order.
func (f *Refunds) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

// Counts returns how many refund requests were answered by a played answer and how
// many were passed on (and made).
func (f *Refunds) Counts() (played, made int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.played, f.made
}

// RoundTrip implements http.RoundTripper.
func (f *Refunds) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/refunds" {
		return f.Next.RoundTrip(r)
	}
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
	play := f.left != 0
	if play {
		f.played++
		if f.left > 0 {
			f.left--
		}
	} else {
		f.made++
	}
	a := f.answer
	f.mu.Unlock()
	if !play {
		return f.Next.RoundTrip(r)
	}
	if a.Err != nil {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return nil, a.Err
	}
	if a.Status == 0 {
		return nil, errors.New("stripemock: a RefundAnswer needs a status or an error")
	}
	return answer(r, a.Status, a.Body), nil
}
