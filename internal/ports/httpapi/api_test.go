package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/testkit/apicontract"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var secret = []byte("test-webhook-secret-0123456789")

// stores runs fn once against the in-memory store and once against DynamoDB in the
// local emulator.
func stores(t *testing.T, fn func(t *testing.T, store eventstore.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, eventstore.NewMemory()) })
	t.Run("dynamodb", func(t *testing.T) {
		client, table := emulatortest.EventsTable(t)
		fn(t, dynamo.New(client, table))
	})
}

// harness is an API over a store, with a log buffer and helpers to call it.
type harness struct {
	t        *testing.T
	api      *httpapi.API
	store    eventstore.Store
	commands *command.Handler
	logs     *syncBuffer
	now      time.Time
	query    map[string]string // sent with every request while set
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, store eventstore.Store, canceller httpapi.Canceller, opts ...command.Option) *harness {
	t.Helper()
	verifier, err := webhook.NewVerifier(secret, webhook.DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: store, commands: command.New(store, append([]command.Option{command.WithProvider(generic.Provider{})}, opts...)...), logs: &syncBuffer{}, now: time.Now()}
	h.api = httpapi.New(httpapi.Config{
		Commands:  h.commands,
		Webhook:   verifier,
		Canceller: canceller,
		Logger:    slog.New(slog.NewJSONHandler(h.logs, nil)),
		Now:       func() time.Time { return h.now },
	})
	return h
}

// reply is a decoded response.
type reply struct {
	status  int
	headers map[string]string
	body    map[string]any
	raw     string
}

func (r reply) str(key string) string { s, _ := r.body[key].(string); return s }

var requests atomic.Int64

// asHeader is not sent: the harness turns it into the verified claims API Gateway's
// JWT authorizer would pass, as the renter it names. Without it a request is sent as
// the operator "ops"; with anonymous, with no claims at all.
const asHeader = "x-test-as"

// as returns headers that send a request as renter, plus those of more.
func as(renter string, more ...map[string]string) map[string]string {
	h := map[string]string{asHeader: renter}
	for _, m := range more {
		for k, v := range m {
			h[k] = v
		}
	}
	return h
}

// anonymous sends a request without a token.
var anonymous = map[string]string{asHeader: ""}

// claims returns the authorizer context of a verified token of sub, with the
// operator scope when operator.
func claims(sub string, operator bool) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	c := map[string]string{"sub": sub, "iss": "https://issuer.example", "aud": "bikerental"}
	var scopes []string
	if operator {
		c["scope"] = httpapi.DefaultOperatorScope
		scopes = []string{httpapi.DefaultOperatorScope}
	}
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: c, Scopes: scopes},
	}
}

func (h *harness) do(method, path, body string, headers map[string]string) reply {
	h.t.Helper()
	req := h.request(method, path, body, headers)
	resp, err := h.api.Handle(context.Background(), req)
	if err != nil {
		h.t.Fatalf("%s %s: Handle returned an error: %v", method, path, err)
	}
	if err := apicontract.MustLoad(h.t).ValidateEvent(req, resp); err != nil {
		h.t.Errorf("%s %s: the answer breaks api/openapi.yaml: %v", method, path, err)
	}
	out := reply{status: resp.StatusCode, headers: resp.Headers, raw: resp.Body}
	if resp.Headers["X-Request-Id"] != req.RequestContext.RequestID {
		h.t.Errorf("%s %s: X-Request-Id = %q, want %q", method, path, resp.Headers["X-Request-Id"], req.RequestContext.RequestID)
	}
	if resp.Body != "" && strings.Contains(resp.Headers["Content-Type"], "json") {
		if err := json.Unmarshal([]byte(resp.Body), &out.body); err != nil {
			h.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, resp.Body)
		}
	}
	if resp.StatusCode >= 400 {
		if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
			h.t.Errorf("%s %s: %d with Content-Type %q, want application/problem+json", method, path, resp.StatusCode, ct)
		}
		if out.body["status"] != float64(resp.StatusCode) || out.str("title") == "" || out.str("type") == "" ||
			out.str("requestId") != req.RequestContext.RequestID {
			h.t.Errorf("%s %s: problem body %s lacks status, title, type or requestId", method, path, resp.Body)
		}
	}
	return out
}

// request builds the event API Gateway would send for a request of the harness
// (see do); it is safe for concurrent use.
func (h *harness) request(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	n := requests.Add(1)
	req := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "$default",
		RawPath:  path,
		Headers:  map[string]string{},
		Body:     body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: fmt.Sprintf("req-%d", n),
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
	if body != "" {
		req.Headers["content-type"] = "application/json"
	}
	req.RequestContext.Authorizer = claims("ops", true)
	if h.query != nil {
		req.QueryStringParameters = h.query
	}
	for k, v := range headers {
		if k == asHeader {
			req.RequestContext.Authorizer = nil
			if v != "" {
				req.RequestContext.Authorizer = claims(v, false)
			}
			continue
		}
		req.Headers[strings.ToLower(k)] = v
	}
	return req
}

func (h *harness) expect(method, path, body string, headers map[string]string, status int) reply {
	h.t.Helper()
	r := h.do(method, path, body, headers)
	if r.status != status {
		h.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.status, status, r.raw)
	}
	return r
}

// signed returns the headers of a webhook signed with key at time at.
func signed(key []byte, body string, at time.Time) map[string]string {
	return map[string]string{webhook.Header: webhook.Sign(key, []byte(body), at)}
}

func (h *harness) streamLen(stream string) int {
	h.t.Helper()
	recs, err := h.store.Read(context.Background(), stream, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(recs)
}

// rentBike registers bikeID and requests it for renter, returning the rental id.
func (h *harness) rentBike(bikeID, renter string) string {
	h.t.Helper()
	h.do(http.MethodPut, "/bikes/"+bikeID, "", nil)
	r := h.expect(http.MethodPost, "/rentals", fmt.Sprintf(`{"bikeId":%q}`, bikeID), as(renter), http.StatusAccepted)
	return r.str("rentalId")
}

// prepare plays the process preparing the rental's payment.
func (h *harness) prepare(rentalID string) string {
	h.t.Helper()
	ref := payment.ReferenceFor(rentalID)
	_, err := h.commands.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "pay-" + rentalID, Amount: 1500, Currency: "EUR"}, command.Meta{})
	if err != nil {
		h.t.Fatal(err)
	}
	return ref
}

func TestBikes(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		r := h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
		if r.headers["Location"] != "/bikes/b1" || r.str("status") != "available" || r.str("bikeId") != "b1" {
			t.Errorf("register: %v %s", r.headers, r.raw)
		}
		h.expect(http.MethodPut, "/bikes/b1", `{}`, nil, http.StatusOK)
		if n := h.streamLen(rental.StreamID("b1")); n != 1 {
			t.Errorf("registering twice wrote %d events, want 1", n)
		}
		r = h.expect(http.MethodGet, "/bikes/b1", "", anonymous, http.StatusOK)
		if r.raw != `{"bikeId":"b1","available":true}` {
			t.Errorf("GET bike: %s", r.raw)
		}
		h.expect(http.MethodGet, "/bikes/nope", "", anonymous, http.StatusNotFound)
		r = h.expect(http.MethodPost, "/bikes/b1/return", "", nil, http.StatusConflict)
		if !strings.Contains(r.str("detail"), "not rented") {
			t.Errorf("return of an available bike: detail %q", r.str("detail"))
		}
		h.expect(http.MethodPost, "/bikes/nope/return", "", nil, http.StatusNotFound)

		rentalID := h.rentBike("b1", "alice")
		// The public view names nobody, whoever asks; operators see who has the bike
		// in the answers of their own routes.
		for _, who := range []map[string]string{anonymous, as("bob"), as("alice"), nil} {
			if r = h.expect(http.MethodGet, "/bikes/b1", "", who, http.StatusOK); r.raw != `{"bikeId":"b1","available":false}` {
				t.Errorf("GET requested bike: %s", r.raw)
			}
		}
		if r = h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusOK); r.str("status") != "requested" || r.str("rentalId") != rentalID || r.str("renter") != "alice" {
			t.Errorf("PUT of a requested bike, as an operator: %s", r.raw)
		}
		approve(t, h, rentalID, "alice")
		r = h.expect(http.MethodPost, "/bikes/b1/return", "", nil, http.StatusOK)
		if r.str("status") != "available" {
			t.Errorf("return: %s", r.raw)
		}
	})
}

// TestAReturnThatNamesItsRentalHappensAtMostOnce replays a return whose answer was
// lost after the bike was rented again: naming the rental makes the repeat a no-op
// instead of ending the next renter's rental.
func TestAReturnThatNamesItsRentalHappensAtMostOnce(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
		json := map[string]string{"Content-Type": "application/json"}
		first := h.rentBike("b1", "alice")
		approve(t, h, first, "alice")
		body := `{"rentalId":"` + first + `"}`
		if r := h.expect(http.MethodPost, "/bikes/b1/return", body, json, http.StatusOK); r.str("status") != "available" {
			t.Errorf("return: %s", r.raw)
		}
		second := h.rentBike("b1", "bob")
		approve(t, h, second, "bob")
		before := h.streamLen(rental.StreamID("b1"))
		if r := h.expect(http.MethodPost, "/bikes/b1/return", body, json, http.StatusOK); r.str("status") != "rented" || r.str("rentalId") != second {
			t.Errorf("repeated return of alice's rental: %s; want bob's rental untouched", r.raw)
		}
		if n := h.streamLen(rental.StreamID("b1")); n != before {
			t.Errorf("the repeated return wrote %d events", n-before)
		}
		r := h.expect(http.MethodPost, "/bikes/b1/return", `{"rentalId":"`+rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")+`"}`, json, http.StatusConflict)
		if !strings.HasSuffix(r.str("type"), "#problem-not-active-rental") {
			t.Errorf("return of a rental the bike never had: %s", r.raw)
		}
		r = h.expect(http.MethodPost, "/bikes/b1/return", `{"rentalId":"b2_AAAAAAAAAAAAAAAAAAAAAA"}`, json, http.StatusBadRequest)
		if !strings.Contains(string(r.raw), "rentalId") {
			t.Errorf("return naming another bike's rental: %s", r.raw)
		}
		if n := h.streamLen(rental.StreamID("b1")); n != before {
			t.Errorf("refused returns wrote %d events", n-before)
		}
		if r := h.expect(http.MethodPost, "/bikes/b1/return", `{"rentalId":"`+second+`"}`, json, http.StatusOK); r.str("status") != "available" {
			t.Errorf("return of bob's rental: %s", r.raw)
		}
	})
}

func approve(t *testing.T, h *harness, rentalID, renter string) {
	t.Helper()
	bikeID, _ := rental.BikeIDOf(rentalID)
	if _, err := h.commands.Bike(context.Background(), rental.ApproveRequest{BikeID: bikeID, Renter: renter, RentalID: rentalID}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
}

func TestBadInputNeverReachesTheStore(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
		long := strings.Repeat("x", 65)
		for _, tc := range []struct {
			name, method, path, body string
			headers                  map[string]string
			status                   int
			invalid                  string // a field invalidParams must name
		}{
			{"malformed JSON", "POST", "/rentals", `{"bikeId":"b1",`, nil, 400, "body"},
			{"not an object", "POST", "/rentals", `["b1"]`, nil, 400, "body"},
			{"unknown field", "POST", "/rentals", `{"bikeId":"b1","price":0}`, as("alice"), 400, "body"},
			{"a body that names the renter", "POST", "/rentals", `{"bikeId":"b1","renter":"bob"}`, as("alice"), 400, "body"},
			{"bike id twice", "POST", "/rentals", `{"bikeId":"b1","bikeId":"b1"}`, as("alice"), 400, "body"},
			{"bike id in another case", "POST", "/rentals", `{"BIKEID":"b1"}`, as("alice"), 400, "body"},
			{"bike id null", "POST", "/rentals", `{"bikeId":null}`, as("alice"), 400, "body"},
			{"rental id in another case", "POST", "/bikes/b1/return", `{"RENTALID":"b1_AAAAAAAAAAAAAAAAAAAAAA"}`, nil, 400, "body"},
			{"trailing data", "POST", "/rentals", `{"bikeId":"b1"} {}`, as("alice"), 400, "body"},
			{"trailing closing brackets", "POST", "/rentals", `{"bikeId":"b1"}]]]`, as("alice"), 400, "body"},
			{"trailing garbage after white space", "POST", "/rentals", "{\"bikeId\":\"b1\"}\n\t x", as("alice"), 400, "body"},
			{"missing bike id", "POST", "/rentals", `{}`, as("alice"), 400, "bikeId"},
			{"empty bike id", "POST", "/rentals", `{"bikeId":""}`, as("alice"), 400, "bikeId"},
			{"wrong type", "POST", "/rentals", `{"bikeId":7}`, as("alice"), 400, "body"},
			{"no body", "POST", "/rentals", ``, as("alice"), 400, "body"},
			{"bad idempotency key", "POST", "/rentals", `{"bikeId":"b1"}`, as("alice", map[string]string{"Idempotency-Key": "é"}), 400, "Idempotency-Key"},
			{"text body", "POST", "/rentals", `bikeId=b1`, as("alice", map[string]string{"Content-Type": "text/plain"}), 415, ""},
			{"form body", "PUT", "/bikes/b2", `a=b`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, ""},
			{"body too large", "POST", "/rentals", `{"bikeId":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`, as("alice"), 413, ""},
			{"bike id with a dot", "PUT", "/bikes/b.2", ``, nil, 400, "bikeId"},
			{"bike id too long", "PUT", "/bikes/" + strings.Repeat("b", 37), ``, nil, 400, "bikeId"},
			{"unknown field on register", "PUT", "/bikes/b3", `{"colour":"red"}`, nil, 400, "body"},
			{"rental id too long", "GET", "/rentals/" + long, ``, nil, 400, "rentalId"},
			{"unknown route", "GET", "/bicycles", ``, nil, 404, ""},
			{"nested unknown route", "POST", "/bikes/b1/paint", ``, nil, 404, ""},
			{"wrong method", "DELETE", "/bikes/b1", ``, nil, 405, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := h.expect(tc.method, tc.path, tc.body, tc.headers, tc.status)
				if tc.invalid != "" {
					found := false
					for _, p := range r.body["invalidParams"].([]any) {
						found = found || p.(map[string]any)["name"] == tc.invalid
					}
					if !found {
						t.Errorf("invalidParams of %s do not name %s", r.raw, tc.invalid)
					}
				}
			})
		}
		if n := h.streamLen(rental.StreamID("b1")); n != 1 {
			t.Errorf("bad requests appended to the bike: %d events, want 1", n)
		}
		for _, b := range []string{"b2", "b3"} {
			if n := h.streamLen(rental.StreamID(b)); n != 0 {
				t.Errorf("a refused register wrote %d events to %s", n, b)
			}
		}
		r := h.do("DELETE", "/bikes/b1", "", nil)
		if allow := r.headers["Allow"]; allow != "PUT, GET" {
			t.Errorf("405 Allow = %q, want %q", allow, "PUT, GET")
		}
	})
}

func TestRentals(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		h.expect(http.MethodPost, "/rentals", `{"bikeId":"ghost"}`, as("alice"), http.StatusNotFound)
		h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
		r := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("alice"), http.StatusAccepted)
		rentalID := r.str("rentalId")
		if bike, err := rental.BikeIDOf(rentalID); err != nil || bike != "b1" {
			t.Fatalf("rental id %q does not name bike b1: %v", rentalID, err)
		}
		if r.headers["Location"] != "/rentals/"+rentalID || r.str("status") != "requested" || r.str("paymentReference") != payment.ReferenceFor(rentalID) {
			t.Errorf("POST /rentals: headers %v body %s", r.headers, r.raw)
		}
		r = h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("bob"), http.StatusConflict)
		if !strings.Contains(r.str("detail"), "not available") {
			t.Errorf("second request: %s", r.raw)
		}

		view := h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK)
		if view.str("status") != "requested" || view.str("renter") != "alice" || view.str("bikeId") != "b1" {
			t.Errorf("rental view: %s", view.raw)
		}
		assertHistory(t, view, "BikeRequested")

		ref := h.prepare(rentalID)
		view = h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK)
		if view.str("status") != "awaiting-payment" {
			t.Errorf("after PaymentPrepared the status is %q", view.str("status"))
		}
		h.paid(ref, "evt-1")
		approve(t, h, rentalID, "alice")
		view = h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK)
		if view.str("status") != "approved" {
			t.Errorf("after approval the status is %q", view.str("status"))
		}
		assertHistory(t, view, "BikeRequested", "PaymentPrepared", "PaymentConfirmed", "RequestApproved")
		h.expect(http.MethodPost, "/bikes/b1/return", "", nil, http.StatusOK)
		view = h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK)
		if view.str("status") != "returned" {
			t.Errorf("after the return the status is %q", view.str("status"))
		}

		// The bike's next rental does not show up in this one's history.
		next := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("bob"), http.StatusAccepted).str("rentalId")
		assertHistory(t, h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK), "BikeRequested", "PaymentPrepared", "PaymentConfirmed", "RequestApproved", "BikeReturned")
		assertHistory(t, h.expect(http.MethodGet, "/rentals/"+next, "", nil, http.StatusOK), "BikeRequested")

		h.expect(http.MethodGet, "/rentals/b1_AAAAAAAAAAAAAAAAAAAAAA", "", nil, http.StatusNotFound)
		h.expect(http.MethodGet, "/rentals/not-a-rental", "", nil, http.StatusNotFound)
	})
}

func assertHistory(t *testing.T, view reply, types ...string) {
	t.Helper()
	history, _ := view.body["history"].([]any)
	var got []string
	var last time.Time
	for _, e := range history {
		entry := e.(map[string]any)
		got = append(got, entry["type"].(string))
		at, err := time.Parse(time.RFC3339Nano, entry["at"].(string))
		if err != nil || at.Before(last) {
			t.Errorf("history entry %v is out of order or has no time", entry)
		}
		last = at
	}
	if strings.Join(got, ",") != strings.Join(types, ",") {
		t.Errorf("history = %v, want %v", got, types)
	}
}

func TestRentalStatusWhenPaymentFails(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		rejected := h.rentBike("b1", "alice")
		ref := h.prepare(rejected)
		r := h.notify("evt-1", generic.TypeFailed, ref, "card declined", http.StatusOK)
		if r.str("status") != "rejected" {
			t.Errorf("reject webhook: %s", r.raw)
		}
		if s := h.expect(http.MethodGet, "/rentals/"+rejected, "", nil, 200).str("status"); s != "rejecting" {
			t.Errorf("status after a rejected payment, before the bike is released = %q", s)
		}
		h.reject(rejected, "alice")
		if s := h.expect(http.MethodGet, "/rentals/"+rejected, "", nil, 200).str("status"); s != "rejected" {
			t.Errorf("status once the bike is released = %q", s)
		}
		cancelled := h.rentBike("b2", "bob")
		ref = h.prepare(cancelled)
		if _, err := h.commands.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		if s := h.expect(http.MethodGet, "/rentals/"+cancelled, "", nil, 200).str("status"); s != "cancelling" {
			t.Errorf("status after a cancelled payment, before the bike is released = %q", s)
		}
		h.reject(cancelled, "bob")
		if s := h.expect(http.MethodGet, "/rentals/"+cancelled, "", nil, 200).str("status"); s != "cancelled" {
			t.Errorf("status once the bike is released = %q", s)
		}
	})
}

func TestIdempotencyKeyReturnsTheFirstAnswer(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
		key := map[string]string{"Idempotency-Key": "order-42"}
		body := `{"bikeId":"b1"}`
		first := h.expect(http.MethodPost, "/rentals", body, as("alice", key), http.StatusAccepted)
		again := h.expect(http.MethodPost, "/rentals", body, as("alice", key), http.StatusAccepted)
		if first.raw != again.raw || first.headers["Location"] != again.headers["Location"] {
			t.Errorf("retry answered %s, first answer was %s", again.raw, first.raw)
		}
		if n := h.streamLen(rental.StreamID("b1")); n != 2 {
			t.Errorf("bike stream has %d events, want 2 (registered, requested once)", n)
		}
		h.expect(http.MethodPost, "/rentals", body, as("alice", map[string]string{"Idempotency-Key": "order-43"}), http.StatusConflict)
		h.expect(http.MethodPost, "/rentals", body, as("alice"), http.StatusConflict)
	})
}

type fakeCanceller struct {
	outcome process.Outcome
	err     error
	calls   []string
}

func (f *fakeCanceller) CancelRentalPayment(_ context.Context, rentalID string, meta command.Meta) (process.Outcome, error) {
	f.calls = append(f.calls, rentalID)
	return f.outcome, f.err
}

func TestCancelPayment(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.expect(http.MethodPost, "/rentals/b1_AAAAAAAAAAAAAAAAAAAAAA/cancel-payment", "", nil, http.StatusNotImplemented)
	h.expect(http.MethodGet, "/payments/pending", "", nil, http.StatusNotImplemented) // no projection configured

	for _, outcome := range []process.Outcome{process.OutcomeCancelled, process.OutcomeDeclined, process.OutcomeNothingToDo} {
		fake := &fakeCanceller{outcome: outcome}
		h := newHarness(t, eventstore.NewMemory(), fake)
		r := h.expect(http.MethodPost, "/rentals/b1_AAAAAAAAAAAAAAAAAAAAAA/cancel-payment", "", nil, http.StatusOK)
		if r.str("outcome") != string(outcome) || len(fake.calls) != 1 || fake.calls[0] != "b1_AAAAAAAAAAAAAAAAAAAAAA" {
			t.Errorf("cancel-payment answered %s after calls %v, want outcome %s", r.raw, fake.calls, outcome)
		}
	}
	fake := &fakeCanceller{}
	h = newHarness(t, eventstore.NewMemory(), fake)
	h.expect(http.MethodPost, "/rentals/bad!id/cancel-payment", "", nil, http.StatusBadRequest)
	if len(fake.calls) != 0 {
		t.Errorf("a bad rental id reached the process")
	}
}

func TestConcurrentRequestsForOneBike(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
		const renters = 20
		reqs := make([]events.APIGatewayV2HTTPRequest, renters)
		for i := range reqs {
			reqs[i] = rentalRequest(fmt.Sprintf("renter-%d", i), "b1", fmt.Sprintf("concurrent-%d", i))
		}
		count := h.allAtOnce(reqs)
		if count[http.StatusAccepted] != 1 || count[http.StatusConflict] != renters-1 {
			t.Fatalf("statuses %v, want one 202 and %d 409", count, renters-1)
		}
		if n := h.streamLen(rental.StreamID("b1")); n != 2 {
			t.Errorf("bike stream holds %d events, want 2", n)
		}
	})
}

// rentalRequest is POST /rentals of bike by renter, as API Gateway passes it.
func rentalRequest(renter, bike, requestID string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RawPath: "/rentals",
		Headers: map[string]string{"content-type": "application/json"},
		Body:    fmt.Sprintf(`{"bikeId":%q}`, bike),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			Authorizer: claims(renter, false),
			RequestID:  requestID,
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/rentals"},
		},
	}
}

// allAtOnce sends reqs concurrently, released together, and counts the answers'
// statuses.
func (h *harness) allAtOnce(reqs []events.APIGatewayV2HTTPRequest) map[int]int {
	statuses := make(chan int, len(reqs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, req := range reqs {
		wg.Go(func() {
			<-start
			resp, _ := h.api.Handle(context.Background(), req)
			statuses <- resp.StatusCode
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	return count
}

// failing is a store whose appends always fail with err.
type failing struct {
	eventstore.Store
	err error
}

func (f failing) Append(context.Context, string, int64, ...eventstore.Event) ([]eventstore.Record, error) {
	return nil, f.err
}

func TestUnavailableAndUnexpectedErrors(t *testing.T) {
	conflicts := failing{Store: eventstore.NewMemory(), err: &eventstore.ConflictError{StreamID: "bike-b1"}}
	h := newHarness(t, conflicts, nil)
	r := h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusServiceUnavailable)
	if r.headers["Retry-After"] == "" {
		t.Errorf("503 without Retry-After: %v", r.headers)
	}

	for _, storage := range []error{
		&retry.MaxAttemptsError{Attempt: 3, Err: errors.New("connection reset by peer")},
		&smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate of requests exceeds the allowed throughput."},
	} {
		h = newHarness(t, failing{Store: eventstore.NewMemory(), err: fmt.Errorf("dynamo: append: %w", storage)}, nil)
		r = h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusServiceUnavailable)
		if r.headers["Retry-After"] == "" || !strings.Contains(r.str("type"), "unavailable") {
			t.Errorf("storage unavailable (%v): %v %s", storage, r.headers, r.raw)
		}
	}

	internal := failing{Store: eventstore.NewMemory(), err: errors.New("dynamo: table arn:aws:dynamodb:eu-west-1:123456789012:table/Events is gone")}
	h = newHarness(t, internal, nil)
	r = h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusInternalServerError)
	if strings.Contains(r.raw, "arn:aws") || strings.Contains(r.raw, "dynamo") {
		t.Errorf("500 body leaks internals: %s", r.raw)
	}
	if !strings.Contains(h.logs.String(), "table/Events is gone") {
		t.Errorf("the 500's cause is not in the logs: %s", h.logs.String())
	}
}

func TestEveryLogLineCarriesTheRequestID(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.do(http.MethodPut, "/bikes/b1", "", nil)
	h.do(http.MethodGet, "/nowhere", "", nil)
	h.do(http.MethodPost, "/rentals", `{`, nil)
	lines := strings.Split(strings.TrimSpace(h.logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines for 3 requests, want 3:\n%s", len(lines), h.logs.String())
	}
	for _, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if id, _ := entry["requestId"].(string); !strings.HasPrefix(id, "req-") {
			t.Errorf("log line without the request id: %s", line)
		}
		if entry["status"] == nil || entry["method"] == nil {
			t.Errorf("log line without status or method: %s", line)
		}
	}
}

func TestHandleNeverPanics(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	for _, req := range []events.APIGatewayV2HTTPRequest{
		{},
		{RawPath: "/rentals", Body: "%%%", IsBase64Encoded: true, RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}}},
		{RawPath: "//bikes//b1", RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}},
	} {
		resp, err := h.api.Handle(context.Background(), req)
		if err != nil || resp.StatusCode < 400 || resp.Headers["X-Request-Id"] == "" {
			t.Errorf("request %+v: %d %v, want a 4xx with a request id", req, resp.StatusCode, err)
		}
	}
}

// TestOutstandingPayments: GET /payments/pending lists the outstanding payments,
// oldest first, each prepared its kind's After (the payment timeout) before it
// falls due, up to the limit asked for, reading about what it returns; a
// malformed limit is refused.
func TestOutstandingPayments(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.expect(http.MethodGet, "/payments/pending", "", nil, http.StatusNotImplemented) // no to-do list configured
	h.now = h.now.Truncate(time.Millisecond)
	d := busyToDo(t, h.now.Add(time.Hour), 40) // none of them prepared yet
	const old, young = "b1_AAAAAAAAAAAAAAAAAAAAAA", "b2_AAAAAAAAAAAAAAAAAAAAAA"
	d.open("payment", young, h.now.Add(14*time.Minute))
	d.open("payment", old, h.now.Add(-5*time.Minute))
	h.withToDo(d)
	h.query = map[string]string{"limit": "2"}
	r := h.expect(http.MethodGet, "/payments/pending", "", nil, http.StatusOK)
	payments := r.body["payments"].([]any)
	first := payments[0].(map[string]any)
	if len(payments) != 2 || r.body["count"] != float64(2) || r.body["limit"] != float64(2) || first["ageSeconds"] != float64(1200) || first["rentalId"] != old ||
		first["paymentReference"] != "rp_"+old || first["preparedAt"] != h.now.Add(-20*time.Minute).UTC().Format(time.RFC3339Nano) ||
		payments[1].(map[string]any)["rentalId"] != young {
		t.Errorf("pending: %s", r.raw)
	}
	calls, read := d.reads()
	h.query = map[string]string{"limit": "1"}
	r = h.expect(http.MethodGet, "/payments/pending", "", nil, http.StatusOK)
	if r.body["count"] != float64(1) || r.body["payments"].([]any)[0].(map[string]any)["rentalId"] != old {
		t.Errorf("limit=1: %s", r.raw)
	}
	// deadlines.List reads a shard a page of the limit at a time, and the page
	// after the limit-th row, for the rows due in its millisecond.
	if afterCalls, afterRead := d.reads(); afterCalls-calls != 2 || afterRead-read > 2*2 {
		t.Errorf("a page of 1 read %d items in %d reads, want at most 2 from each of 2 shards", afterRead-read, afterCalls-calls)
	}
	for _, bad := range []string{"0", "1001", "ten"} {
		h.query = map[string]string{"limit": bad}
		h.expect(http.MethodGet, "/payments/pending", "", nil, http.StatusBadRequest)
	}
	if afterCalls, _ := d.reads(); afterCalls-calls != 2 {
		t.Errorf("a refused request read the to-do list")
	}
}
