package stripemock

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Stateful is an http.RoundTripper for a Stripe client, in front of stripe-mock
// (Next), that keeps what stripe-mock, keeping no state, cannot:
//   - the PaymentIntents created through it: a retrieve of one answers its
//     reference, amount and currency, and a renter's client pays one as Stripe.js
//     does, POST /v1/payment_intents/{id}/confirm with its client_secret (Pay, for
//     what it was created for);
//   - PaymentIntents paid (Pay) whose webhook never comes: Stripe refuses to cancel
//     them (payment_intent_unexpected_state), and a retrieve answers them succeeded
//     for what they were paid, with the reference in their metadata.
//
// Every other request goes to Next. It counts the cancellations and retrieves of
// paid PaymentIntents it answered, keeps the bodies of the refunds asked for, and
// lists every request (Requests). Safe for concurrent use; Serve serves it at an
// API URL.
type Stateful struct {
	Next http.RoundTripper

	mu        sync.Mutex
	paid      map[string]paidIntent
	created   map[string]createdIntent
	cancels   int
	retrieves int
	refunds   []string
	requests  []string
}

// createdIntent is a PaymentIntent created through Stateful: what it was created for,
// and its client secret.
type createdIntent struct {
	paidIntent
	clientSecret string
}

type paidIntent struct {
	reference string
	amount    int64
	currency  string
}

// Pay makes the PaymentIntent id, of our payment reference, succeed at Stripe for
// amount in currency (lower case, as Stripe writes it).
func (p *Stateful) Pay(id, reference string, amount int64, currency string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paid == nil {
		p.paid = map[string]paidIntent{}
	}
	p.paid[id] = paidIntent{reference: reference, amount: amount, currency: currency}
}

// Counts returns how many cancellations and retrieves of paid PaymentIntents it
// answered.
func (p *Stateful) Counts() (cancels, retrieves int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancels, p.retrieves
}

// IntentOf returns the id of the PaymentIntent created through p for our payment
// reference, "" if none was.
func (p *Stateful) IntentOf(reference string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.created {
		if c.reference == reference {
			return id
		}
	}
	return ""
}

// Requests returns every request that reached it, in order, each as its method, path
// and, for a POST that has one, its Idempotency-Key: "POST /v1/refunds
// refund-rp_x".
func (p *Stateful) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Refunds returns the form bodies of the refunds asked for, in order.
func (p *Stateful) Refunds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refunds...)
}

// Serve serves p on loopback until tb ends, in front of stripe-mock at mockURL (p's
// Next carries the requests there), and returns the URL a Stripe client takes as
// its API URL (STRIPE_API_URL).
func (p *Stateful) Serve(tb testing.TB, mockURL string) string {
	tb.Helper()
	target, err := url.Parse(mockURL)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: p,
		ErrorLog:  log.New(io.Discard, "", 0), // a Stripe that does not answer is the test's to say
	})
	tb.Cleanup(srv.Close)
	return srv.URL
}

// RoundTrip implements http.RoundTripper.
func (p *Stateful) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.requests = append(p.requests, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+r.Header.Get("Idempotency-Key")))
	p.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents":
		return p.create(r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/") && strings.HasSuffix(r.URL.Path, "/confirm"):
		return p.confirm(r)
	}
	id, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/")
	p.mu.Lock()
	intent, paid := p.paid[id]
	created, wasCreated := p.created[id]
	if r.URL.Path == "/v1/refunds" && r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.refunds = append(p.refunds, string(body))
	}
	p.mu.Unlock()
	switch {
	case !paid && wasCreated && r.Method == http.MethodGet && action == "" && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
		return p.retrieved(r, id, created.paidIntent, "")
	case !paid || !strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
		return p.Next.RoundTrip(r)
	case r.Method == http.MethodPost && action == "cancel":
		p.mu.Lock()
		p.cancels++
		p.mu.Unlock()
		return answer(r, http.StatusBadRequest, `{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state",`+
			`"message":"You cannot cancel this PaymentIntent because it has a status of succeeded."}}`), nil
	case r.Method == http.MethodGet && action == "":
		p.mu.Lock()
		p.retrieves++
		p.mu.Unlock()
		return p.retrieved(r, id, intent, "succeeded")
	}
	return p.Next.RoundTrip(r)
}

// retrieved is Next's answer to the retrieve r of PaymentIntent id, made to say
// what p knows of it: its reference in its metadata, its amount and currency, and,
// unless status is "", its status.
func (p *Stateful) retrieved(r *http.Request, id string, intent paidIntent, status string) (*http.Response, error) {
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
	pi["id"], pi["amount"], pi["currency"] = id, intent.amount, intent.currency
	if status != "" {
		pi["status"], pi["amount_received"] = status, intent.amount
	}
	pi["metadata"] = map[string]string{"reference": intent.reference}
	body, _ := json.Marshal(pi)
	return answer(r, http.StatusOK, string(body)), nil
}

// create passes a PaymentIntent's creation on to Next, and remembers what it was
// created for (amount, currency, the reference in its metadata) and its id and
// client secret as Next answered them.
func (p *Stateful) create(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	res, err := p.Next.RoundTrip(r)
	if err != nil || res.StatusCode != http.StatusOK {
		return res, err
	}
	answered, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(answered))
	var pi struct {
		ID           string `json:"id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(answered, &pi); err != nil {
		return nil, err
	}
	amount, _ := strconv.ParseInt(form.Get("amount"), 10, 64)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.created == nil {
		p.created = map[string]createdIntent{}
	}
	p.created[pi.ID] = createdIntent{
		paidIntent:   paidIntent{reference: form.Get("metadata[reference]"), amount: amount, currency: form.Get("currency")},
		clientSecret: pi.ClientSecret,
	}
	return res, nil
}

// confirm is a renter's client paying a PaymentIntent created through p with its
// client secret, as Stripe.js confirms it: the PaymentIntent succeeds (Pay) and is
// answered succeeded. Another client secret, or a PaymentIntent p did not see
// created, is refused as Stripe refuses it.
func (p *Stateful) confirm(r *http.Request) (*http.Response, error) {
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/confirm")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	intent, ok := p.created[id]
	p.mu.Unlock()
	if !ok || intent.clientSecret == "" || form.Get("client_secret") != intent.clientSecret {
		return answer(r, http.StatusNotFound, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent."}}`), nil
	}
	p.Pay(id, intent.reference, intent.amount, intent.currency)
	out, _ := json.Marshal(map[string]any{"id": id, "object": "payment_intent", "status": "succeeded", "amount": intent.amount, "currency": intent.currency})
	return answer(r, http.StatusOK, string(out)), nil
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
