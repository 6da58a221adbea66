package stripemock

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Paid is an http.RoundTripper for a Stripe client, in front of stripe-mock (Next),
// that plays PaymentIntents a renter paid whose webhook never comes, which
// stripe-mock, keeping no state, cannot: Stripe refuses to cancel them
// (payment_intent_unexpected_state), and a retrieve answers them succeeded for the
// amount and currency set by Pay, with the reference in their metadata. Every other
// request goes to Next. It counts the cancellations and retrieves it answered, and
// keeps the bodies of the refunds asked for. Safe for concurrent use.
type Paid struct {
	Next http.RoundTripper

	mu        sync.Mutex
	paid      map[string]paidIntent
	cancels   int
	retrieves int
	refunds   []string
}

type paidIntent struct {
	reference string
	amount    int64
	currency  string
}

// Pay makes the PaymentIntent id, of our payment reference, succeed at Stripe for
// amount in currency (lower case, as Stripe writes it).
func (p *Paid) Pay(id, reference string, amount int64, currency string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paid == nil {
		p.paid = map[string]paidIntent{}
	}
	p.paid[id] = paidIntent{reference: reference, amount: amount, currency: currency}
}

// Counts returns how many cancellations and retrieves of paid PaymentIntents it
// answered.
func (p *Paid) Counts() (cancels, retrieves int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancels, p.retrieves
}

// Refunds returns the form bodies of the refunds asked for, in order.
func (p *Paid) Refunds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refunds...)
}

// RoundTrip implements http.RoundTripper.
func (p *Paid) RoundTrip(r *http.Request) (*http.Response, error) {
	id, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/")
	p.mu.Lock()
	intent, paid := p.paid[id]
	if r.URL.Path == "/v1/refunds" && r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.refunds = append(p.refunds, string(body))
	}
	p.mu.Unlock()
	switch {
	case !paid || !strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
		return p.Next.RoundTrip(r)
	case r.Method == http.MethodPost && action == "cancel":
		p.mu.Lock()
		p.cancels++
		p.mu.Unlock()
		return answer(r, http.StatusBadRequest, `{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state",`+
			`"message":"You cannot cancel this PaymentIntent because it has a status of succeeded."}}`), nil
	case r.Method == http.MethodGet && action == "":
		res, err := p.Next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		var pi map[string]any
		err = json.NewDecoder(res.Body).Decode(&pi)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.retrieves++
		p.mu.Unlock()
		pi["id"], pi["status"], pi["amount"], pi["amount_received"], pi["currency"] = id, "succeeded", intent.amount, intent.amount, intent.currency
		pi["metadata"] = map[string]string{"reference": intent.reference}
		body, _ := json.Marshal(pi)
		return answer(r, http.StatusOK, string(body)), nil
	}
	return p.Next.RoundTrip(r)
}

func answer(r *http.Request, status int, body string) *http.Response {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_paid"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: r, ContentLength: int64(len(body)),
	}
}
