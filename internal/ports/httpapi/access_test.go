package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// totalEvents counts every event the harness's store holds on the streams a test
// touches, so that a refused request can be shown to have written nothing.
func (h *harness) totalEvents(streams ...string) int {
	n := 0
	for _, s := range streams {
		n += h.streamLen(s)
	}
	return n
}

// TestWhoMayCallWhat calls every route as nobody, as a renter and as an operator,
// and checks each refusal's status, problem type and challenge, and that a refused
// request changed nothing.
func TestWhoMayCallWhat(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), &fakeCanceller{})
	h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
	rentalID := h.rentBike("b2", "alice")
	ref := h.prepare(rentalID)
	streams := []string{rental.StreamID("b1"), rental.StreamID("b2"), rental.StreamID("b9"), renter.StreamID("alice"), renter.StreamID("bob"), payment.StreamID(ref)}
	json := map[string]string{"Content-Type": "application/json"}

	type call struct{ method, path, body string }
	routes := map[string]call{
		"PUT /bikes/{bikeId}":                          {"PUT", "/bikes/b9", ""},
		"GET /bikes/{bikeId}":                          {"GET", "/bikes/b1", ""},
		"POST /bikes/{bikeId}/return":                  {"POST", "/bikes/b2/return", ""},
		"POST /rentals":                                {"POST", "/rentals", `{"bikeId":"b1"}`},
		"GET /rentals":                                 {"GET", "/rentals", ""},
		"GET /rentals/{rentalId}":                      {"GET", "/rentals/" + rentalID, ""},
		"POST /rentals/{rentalId}/cancel-payment":      {"POST", "/rentals/" + rentalID + "/cancel-payment", ""},
		"POST /rentals/{rentalId}/refund-made-by-hand": {"POST", "/rentals/" + rentalID + "/refund-made-by-hand", `{"amount":1500,"reference":"bank-1"}`},
		"POST /webhooks/payments":                      {"POST", "/webhooks/payments", event("e1", generic.TypeSucceeded, ref, "")},
		"POST /webhooks/stripe":                        {"POST", "/webhooks/stripe", "{}"},
		"GET /payments/pending":                        {"GET", "/payments/pending", ""},
		"GET /deadlines":                               {"GET", "/deadlines", ""},
		"GET /processes/stuck":                         {"GET", "/processes/stuck", ""},
		"GET /refunds/owed":                            {"GET", "/refunds/owed", ""},
		"GET /console":                                 {"GET", "/console", ""},
		"GET /console/config":                          {"GET", "/console/config", ""},
		"GET /console/{asset}":                         {"GET", "/console/app.js", ""},
	}
	for _, rt := range httpapi.Routes() {
		c, ok := routes[rt.Method+" "+rt.Pattern]
		if !ok {
			t.Fatalf("route %s %s has no case here", rt.Method, rt.Pattern)
		}
		t.Run(rt.Method+" "+rt.Pattern, func(t *testing.T) {
			before := h.totalEvents(streams...)
			switch rt.Access {
			case httpapi.Public, httpapi.Webhook:
				// Nobody needs a token; the webhook answers 401 for its missing signature.
				r := h.do(c.method, c.path, c.body, with(anonymous, json))
				if r.status == http.StatusForbidden || strings.HasSuffix(r.str("type"), "#problem-unauthenticated") {
					t.Errorf("anonymous: %d %s", r.status, r.raw)
				}
			case httpapi.Renter, httpapi.Operator:
				r := h.expect(c.method, c.path, c.body, with(anonymous, json), http.StatusUnauthorized)
				if !strings.HasSuffix(r.str("type"), "#problem-unauthenticated") || r.headers["WWW-Authenticate"] != `Bearer realm="bikerental"` {
					t.Errorf("anonymous: %v %s", r.headers, r.raw)
				}
				if rt.Access == httpapi.Operator {
					r := h.expect(c.method, c.path, c.body, as("alice", json), http.StatusForbidden)
					if !strings.HasSuffix(r.str("type"), "#problem-forbidden") ||
						r.headers["WWW-Authenticate"] != `Bearer realm="bikerental", error="insufficient_scope", scope="bikerental/operator"` {
						t.Errorf("renter on an operator route: %v %s", r.headers, r.raw)
					}
				}
			}
			if n := h.totalEvents(streams...); n != before {
				t.Errorf("refused calls wrote %d events", n-before)
			}
		})
	}
}

func with(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestTheClaimsComeOnlyFromTheAuthorizer sends requests that claim an identity in
// every way a client controls; none of them is believed.
func TestTheClaimsComeOnlyFromTheAuthorizer(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.expect(http.MethodPut, "/bikes/b1", "", nil, http.StatusCreated)
	for name, headers := range map[string]map[string]string{
		"a forged claims header": {"x-amzn-oidc-identity": "alice", "x-jwt-claims": `{"sub":"alice"}`},
		"a bare unverified JWT":  {"Authorization": "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9."},
	} {
		r := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, with(anonymous, headers), http.StatusUnauthorized)
		if strings.Contains(r.raw, "eyJ") {
			t.Errorf("%s: the answer echoes the token: %s", name, r.raw)
		}
	}
	// A verified token without a subject is no identity either.
	req := events.APIGatewayV2HTTPRequest{RawPath: "/rentals", Headers: map[string]string{"content-type": "application/json"}, Body: `{"bikeId":"b1"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "nosub", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: map[string]string{"iss": "https://issuer.example", "scope": httpapi.DefaultOperatorScope}}}}}
	if resp, _ := h.api.Handle(context.Background(), req); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token without sub: %d %s", resp.StatusCode, resp.Body)
	}
	// A subject that cannot name a renter is refused, not mangled into one.
	r := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("auth0|alice"), http.StatusForbidden)
	if !strings.HasSuffix(r.str("type"), "#problem-forbidden") {
		t.Errorf("odd subject: %s", r.raw)
	}
	if n := h.streamLen(rental.StreamID("b1")); n != 1 {
		t.Errorf("the bike holds %d events, want only its registration", n)
	}
}

// TestARenterSeesOnlyTheirOwnRentals reads a rental as its renter, as another renter
// and as an operator: the other renter's answer is byte for byte the answer for a
// rental that does not exist, but for the request id.
func TestARenterSeesOnlyTheirOwnRentals(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		mine := h.rentBike("b1", "alice")
		h.prepare(mine)
		if r := h.expect(http.MethodGet, "/rentals/"+mine, "", as("alice"), http.StatusOK); r.str("renter") != "alice" || r.str("status") != "awaiting-payment" {
			t.Errorf("alice reading her rental: %s", r.raw)
		}
		if r := h.expect(http.MethodGet, "/rentals/"+mine, "", nil, http.StatusOK); r.str("renter") != "alice" {
			t.Errorf("an operator reading alice's rental: %s", r.raw)
		}
		other := h.do(http.MethodGet, "/rentals/"+mine, "", as("bob"))
		missing := rental.NewRentalID("b1", "ZZZZZZZZZZZZZZZZZZZZZZ")
		none := h.do(http.MethodGet, "/rentals/"+missing, "", as("bob"))
		strip := func(r reply, id string) string {
			return strings.ReplaceAll(strings.ReplaceAll(r.raw, r.str("requestId"), "<request>"), id, "<rental>")
		}
		if other.status != http.StatusNotFound || strip(other, mine) != strip(none, missing) {
			t.Errorf("bob reading alice's rental answered %d %s; a missing one answers %d %s", other.status, other.raw, none.status, none.raw)
		}
		if len(other.headers) != len(none.headers) {
			t.Errorf("headers differ: %v and %v", other.headers, none.headers)
		}
	})
}

// TestARenterListsTheirRentalsNewestFirst pages through a renter's rentals with the
// cursor, and shows that another renter's list holds none of them.
func TestARenterListsTheirRentalsNewestFirst(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		var ids []string
		for i := range 5 {
			id := h.rentBike(fmt.Sprintf("b%d", i), "alice")
			h.reject(id, "alice") // settled, so that the next request is allowed
			ids = append(ids, id)
		}
		h.rentBike("bx", "bob")
		var got []string
		cursor := ""
		for page := 0; page < 10; page++ {
			path := "/rentals?limit=2"
			q := map[string]string{"limit": "2"}
			if cursor != "" {
				q["cursor"] = cursor
			}
			r := h.expectQuery(http.MethodGet, "/rentals", q, as("alice"), http.StatusOK)
			for _, x := range r.body["rentals"].([]any) {
				m := x.(map[string]any)
				got = append(got, m["rentalId"].(string))
				if m["requestedAt"] == nil || m["bikeId"] == nil {
					t.Errorf("%s: entry %v lacks its bike or time", path, m)
				}
			}
			cursor = r.str("nextCursor")
			if cursor == "" {
				break
			}
		}
		want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("alice's rentals, newest first = %v, want %v", got, want)
		}
		r := h.expectQuery(http.MethodGet, "/rentals", nil, as("bob"), http.StatusOK)
		if list := r.body["rentals"].([]any); len(list) != 1 || r.str("nextCursor") != "" {
			t.Errorf("bob's rentals: %s", r.raw)
		}
		r = h.expectQuery(http.MethodGet, "/rentals", nil, as("carol"), http.StatusOK)
		if r.raw != `{"rentals":[]}` {
			t.Errorf("a renter with no rentals: %s", r.raw)
		}
		for _, q := range []map[string]string{{"limit": "0"}, {"limit": "101"}, {"limit": "x"}, {"cursor": "not-a-cursor"}, {"cursor": "djE"}, {"cursor": ""}} {
			h.expectQuery(http.MethodGet, "/rentals", q, as("alice"), http.StatusBadRequest)
		}
	})
}

// reject plays the process rejecting a rental's request, which settles it.
func (h *harness) reject(rentalID, renterName string) {
	h.t.Helper()
	bikeID, _ := rental.BikeIDOf(rentalID)
	if _, err := h.commands.Bike(context.Background(), rental.RejectRequest{BikeID: bikeID, Renter: renterName, RentalID: rentalID}, command.Meta{}); err != nil {
		h.t.Fatal(err)
	}
}

// expectQuery is expect for a request with query parameters (empty values are sent
// as they are, absent ones not at all).
func (h *harness) expectQuery(method, path string, query map[string]string, headers map[string]string, status int) reply {
	h.t.Helper()
	saved := h.query
	h.query = query
	defer func() { h.query = saved }()
	return h.expect(method, path, "", headers, status)
}

// TestNobodyCanHoldTheFleet shows the per-renter limit: a second outstanding request
// is refused with its own problem type until the first settles, whichever way.
func TestNobodyCanHoldTheFleet(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		for _, b := range []string{"b1", "b2", "b3"} {
			h.expect(http.MethodPut, "/bikes/"+b, "", nil, http.StatusCreated)
		}
		key := map[string]string{"Idempotency-Key": "k1"}
		first := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("alice", key), http.StatusAccepted).str("rentalId")
		before := h.totalEvents(rental.StreamID("b2"), renter.StreamID("alice"))
		r := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b2"}`, as("alice"), http.StatusConflict)
		if !strings.HasSuffix(r.str("type"), "#problem-too-many-pending-requests") {
			t.Errorf("second request: %s", r.raw)
		}
		if n := h.totalEvents(rental.StreamID("b2"), renter.StreamID("alice")); n != before {
			t.Errorf("the refused request wrote %d events", n-before)
		}
		// Another renter is not held back by alice.
		h.expect(http.MethodPost, "/rentals", `{"bikeId":"b2"}`, as("bob"), http.StatusAccepted)
		// A retry of the first request is still its first answer, not a refusal.
		if again := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("alice", key), http.StatusAccepted); again.str("rentalId") != first {
			t.Errorf("the retry answered %s, not rental %s", again.raw, first)
		}
		// Once the first is approved, the next may go ahead.
		h.prepare(first)
		approve(t, h, first, "alice")
		second := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b3"}`, as("alice"), http.StatusAccepted).str("rentalId")
		h.expect(http.MethodPost, "/rentals", `{"bikeId":"b2"}`, as("alice"), http.StatusConflict)
		// A rejection settles it too.
		h.reject(second, "alice")
		h.expect(http.MethodPut, "/bikes/b4", "", nil, http.StatusCreated)
		h.expect(http.MethodPost, "/rentals", `{"bikeId":"b4"}`, as("alice"), http.StatusAccepted)
	})
}

// TestTheLimitIsConfigurable allows two outstanding requests.
func TestTheLimitIsConfigurable(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil, command.WithMaxPending(2))
	for _, b := range []string{"b1", "b2", "b3"} {
		h.expect(http.MethodPut, "/bikes/"+b, "", nil, http.StatusCreated)
	}
	h.expect(http.MethodPost, "/rentals", `{"bikeId":"b1"}`, as("alice"), http.StatusAccepted)
	h.expect(http.MethodPost, "/rentals", `{"bikeId":"b2"}`, as("alice"), http.StatusAccepted)
	r := h.expect(http.MethodPost, "/rentals", `{"bikeId":"b3"}`, as("alice"), http.StatusConflict)
	if !strings.HasSuffix(r.str("type"), "#problem-too-many-pending-requests") {
		t.Errorf("third request: %s", r.raw)
	}
}

// TestConcurrentRequestsByOneRenter sends one renter's requests for different bikes
// all at once, many times over: exactly one wins each round, on both stores.
func TestConcurrentRequestsByOneRenter(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		const rounds, bikes = 10, 4
		for round := range rounds {
			renterName := fmt.Sprintf("racer-%d", round)
			for b := range bikes {
				h.expect(http.MethodPut, fmt.Sprintf("/bikes/r%d-b%d", round, b), "", nil, http.StatusCreated)
			}
			reqs := make([]events.APIGatewayV2HTTPRequest, bikes)
			for b := range reqs {
				reqs[b] = rentalRequest(renterName, fmt.Sprintf("r%d-b%d", round, b), fmt.Sprintf("race-%d-%d", round, b))
			}
			count := h.allAtOnce(reqs)
			if count[http.StatusAccepted] != 1 || count[http.StatusConflict] != bikes-1 {
				t.Fatalf("round %d: statuses %v, want one 202 and %d 409", round, count, bikes-1)
			}
			requested := 0
			for b := range bikes {
				requested += h.streamLen(rental.StreamID(fmt.Sprintf("r%d-b%d", round, b))) - 1
			}
			if requested != 1 || h.streamLen(renter.StreamID(renterName)) != 1 {
				t.Fatalf("round %d: %d bikes requested and %d renter events, want 1 and 1", round, requested, h.streamLen(renter.StreamID(renterName)))
			}
		}
	})
}
