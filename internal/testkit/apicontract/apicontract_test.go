package apicontract_test

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/testkit/apicontract"
)

const problemBase = "https://github.com/bikerental/bikerental/blob/main/README.md#problem-"

const (
	rentalID = "bike-1_abcdefghijABCDEFGHIJ12"
	ref      = "rp_" + rentalID
)

func TestTheDocumentLoadsAndIsValid(t *testing.T) {
	c := apicontract.MustLoad(t)
	if got := c.Document().OpenAPI; got != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", got)
	}
	if !c.Document().IsOpenAPI31OrLater() {
		t.Error("the document is not read as OpenAPI 3.1")
	}
	root, err := apicontract.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "api", "openapi.yaml"); c.File() != want {
		t.Errorf("loaded %s, want %s", c.File(), want)
	}
	again, err := apicontract.Load()
	if err != nil || again != c {
		t.Errorf("a second Load = %p, %v; want the same contract %p", again, err, c)
	}
	var servers []string
	for _, s := range c.Document().Servers {
		servers = append(servers, s.URL)
	}
	if !slices.Contains(servers, "http://127.0.0.1:3000") || len(servers) != 2 {
		t.Errorf("servers = %v, want the deployed API's and make run's", servers)
	}
}

func TestTheModuleRootIsFoundFromASubdirectory(t *testing.T) {
	root, err := apicontract.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "internal"))
	got, err := apicontract.ModuleRoot()
	if err != nil || got != root {
		t.Errorf("ModuleRoot from %s/internal = %q, %v; want %q", root, got, err, root)
	}
}

func TestAnInvalidDocumentIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openapi.yaml")
	// An operation without responses, and a path parameter it does not declare.
	doc := "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /x/{id}:\n    get: {}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := apicontract.LoadFile(path); err == nil {
		t.Error("LoadFile accepted an invalid document")
	}
}

func TestRoutesListsEveryOperation(t *testing.T) {
	want := []string{
		"GET /bikes/{bikeId}",
		"GET /console",
		"GET /console/config",
		"GET /console/{asset}",
		"GET /deadlines",
		"GET /payments/pending",
		"GET /processes/stuck",
		"GET /refunds/owed",
		"GET /rentals",
		"GET /rentals/{rentalId}",
		"POST /bikes/{bikeId}/return",
		"POST /rentals",
		"POST /rentals/{rentalId}/cancel-payment",
		"POST /rentals/{rentalId}/refund-made-by-hand",
		"POST /webhooks/payments",
		"POST /webhooks/stripe",
		"PUT /bikes/{bikeId}",
	}
	if got := apicontract.MustLoad(t).Routes(); !slices.Equal(got, want) {
		t.Errorf("Routes() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSecurityOfEachOperation(t *testing.T) {
	doc := apicontract.MustLoad(t).Document()
	want := map[string]string{
		"PUT /bikes/{bikeId}":                          "operator",
		"GET /bikes/{bikeId}":                          "",
		"POST /bikes/{bikeId}/return":                  "operator",
		"POST /rentals":                                "bearer",
		"GET /rentals":                                 "bearer",
		"GET /rentals/{rentalId}":                      "bearer|operator",
		"POST /rentals/{rentalId}/cancel-payment":      "operator",
		"POST /rentals/{rentalId}/refund-made-by-hand": "operator",
		"POST /webhooks/payments":                      "",
		"POST /webhooks/stripe":                        "",
		"GET /payments/pending":                        "operator",
		"GET /deadlines":                               "operator",
	}
	for route, schemes := range want {
		method, path, _ := strings.Cut(route, " ")
		op := doc.Paths.Value(path).GetOperation(method)
		if op.Security == nil {
			t.Errorf("%s: no security of its own (it must say, even when public)", route)
			continue
		}
		var got []string
		for _, req := range *op.Security {
			for name, scopes := range req {
				got = append(got, name)
				if name == "operator" && !slices.Equal(scopes, []string{"bikerental/operator"}) {
					t.Errorf("%s: operator scopes %v", route, scopes)
				}
			}
		}
		slices.Sort(got)
		if strings.Join(got, "|") != schemes {
			t.Errorf("%s: security %v, want %q", route, got, schemes)
		}
	}
}

// rentalAccepted is a correct answer to POST /rentals.
func rentalAccepted() (http.Header, string) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", "req-1")
	h.Set("Location", "/rentals/"+rentalID)
	return h, `{"rentalId":"` + rentalID + `","bikeId":"bike-1","renter":"alice","status":"requested","paymentReference":"` + ref + `"}`
}

func problemBody(typ string, status int, requestID string) string {
	return `{"type":"` + typ + `","title":"` + http.StatusText(status) + `","status":` + strconv.Itoa(status) +
		`,"detail":"for the test","requestId":"` + requestID + `"}`
}

func problemHeader(requestID string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Request-Id", requestID)
	return h
}

func TestValidateResponse(t *testing.T) {
	c := apicontract.MustLoad(t)
	okHeader, okBody := rentalAccepted()
	bearer := http.Header{"Authorization": {"Bearer x.y.z"}}

	type tc struct {
		name         string
		method, path string
		query        url.Values
		status       int
		header       func() http.Header
		body         string
		ok           bool
	}
	with := func(mutate func(http.Header)) func() http.Header {
		return func() http.Header {
			h := okHeader.Clone()
			mutate(h)
			return h
		}
	}
	same := func() http.Header { return okHeader.Clone() }
	problem := func(id string) func() http.Header { return func() http.Header { return problemHeader(id) } }

	for _, tc := range []tc{
		{"a correct 202", "POST", "/rentals", nil, 202, same, okBody, true},
		{"a correct 202 with a charset", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Set("Content-Type", "application/json; charset=utf-8") }), okBody, true},
		{"an extra field", "POST", "/rentals", nil, 202, same, strings.Replace(okBody, `{`, `{"price":5,`, 1), false},
		{"a missing required field", "POST", "/rentals", nil, 202, same, strings.Replace(okBody, `"renter":"alice",`, ``, 1), false},
		{"a wrong status value", "POST", "/rentals", nil, 202, same, strings.Replace(okBody, `"status":"requested"`, `"status":"approved"`, 1), false},
		{"a bike id too long", "POST", "/rentals", nil, 202, same, strings.Replace(okBody, `"bikeId":"bike-1"`, `"bikeId":"`+strings.Repeat("b", 37)+`"`, 1), false},
		{"a body that is not JSON", "POST", "/rentals", nil, 202, same, `rental accepted`, false},
		{"no body", "POST", "/rentals", nil, 202, same, ``, false},
		{"an undocumented status", "POST", "/rentals", nil, 201, same, okBody, false},
		{"an undocumented 418", "POST", "/rentals", nil, 418, same, okBody, false},
		{"a wrong content type", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Set("Content-Type", "text/plain") }), okBody, false},
		{"no content type", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Del("Content-Type") }), okBody, false},
		{"a problem type on a 202", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Set("Content-Type", "application/problem+json") }), okBody, false},
		{"no Location", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Del("Location") }), okBody, false},
		{"a Location elsewhere", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Set("Location", "/bikes/b1") }), okBody, false},
		{"no X-Request-Id", "POST", "/rentals", nil, 202, with(func(h http.Header) { h.Del("X-Request-Id") }), okBody, false},

		{"a documented 409 problem", "POST", "/rentals", nil, 409, problem("req-2"), problemBody(problemBase+"too-many-pending-requests", 409, "req-2"), true},
		{"a documented 400 problem with invalidParams", "POST", "/rentals", nil, 400, problem("req-3"),
			`{"type":"` + problemBase + `invalid-request","title":"Bad Request","status":400,"detail":"see invalidParams","requestId":"req-3","invalidParams":[{"name":"renter","reason":"unknown field \"renter\""}]}`, true},
		{"a problem as application/json", "POST", "/rentals", nil, 409, with(func(h http.Header) { h.Del("Location") }), problemBody(problemBase+"bike-unavailable", 409, "req-1"), false},
		{"a problem of an unknown type", "POST", "/rentals", nil, 409, problem("req-2"), problemBody(problemBase+"no-such-problem", 409, "req-2"), false},
		{"a problem without its request id", "POST", "/rentals", nil, 409, problem("req-2"), `{"type":"about:blank","title":"Conflict","status":409}`, false},
		{"a problem whose request id is not the header's", "POST", "/rentals", nil, 409, problem("req-2"), problemBody("about:blank", 409, "req-9"), false},
		{"a problem with an extra member", "POST", "/rentals", nil, 409, problem("req-2"), strings.Replace(problemBody("about:blank", 409, "req-2"), `{`, `{"stack":"main.go:1",`, 1), false},
		{"a 401 with its challenge", "POST", "/rentals", nil, 401, with2(problem("req-4"), "WWW-Authenticate", `Bearer realm="bikerental"`), problemBody(problemBase+"unauthenticated", 401, "req-4"), true},
		{"a 401 with an invalid_token challenge", "GET", "/rentals", nil, 401, with2(problem("req-4"), "WWW-Authenticate", `Bearer realm="bikerental", error="invalid_token"`), problemBody(problemBase+"unauthenticated", 401, "req-4"), true},
		{"a 401 without its challenge", "POST", "/rentals", nil, 401, problem("req-4"), problemBody(problemBase+"unauthenticated", 401, "req-4"), false},
		{"a webhook 401 without a challenge", "POST", "/webhooks/payments", nil, 401, problem("req-5"), problemBody(problemBase+"unauthorized", 401, "req-5"), true},
		{"a 503 with Retry-After", "GET", "/bikes/b1", nil, 503, with2(problem("req-6"), "Retry-After", "2"), problemBody(problemBase+"unavailable", 503, "req-6"), true},
		{"a 503 without Retry-After", "GET", "/bikes/b1", nil, 503, problem("req-6"), problemBody(problemBase+"busy", 503, "req-6"), false},
		{"a 503 with a date as Retry-After", "GET", "/bikes/b1", nil, 503, with2(problem("req-6"), "Retry-After", "soon"), problemBody(problemBase+"busy", 503, "req-6"), false},
		{"a 500 anywhere", "GET", "/payments/pending", nil, 500, problem("req-7"), problemBody("about:blank", 500, "req-7"), true},
		{"a 403 on an operator route", "PUT", "/bikes/b1", nil, 403,
			with2(problem("req-8"), "WWW-Authenticate", `Bearer realm="bikerental", error="insufficient_scope", scope="bikerental/operator"`),
			problemBody(problemBase+"forbidden", 403, "req-8"), true},
		{"a 403 on a public route", "GET", "/bikes/b1", nil, 403, problem("req-8"), problemBody(problemBase+"forbidden", 403, "req-8"), false},
		{"a 415 on a route without a body", "GET", "/rentals", nil, 415, problem("req-8"), problemBody("about:blank", 415, "req-8"), false},

		{"the public view of a bike", "GET", "/bikes/b1", nil, 200, jsonHeader("r"), `{"bikeId":"b1","available":false}`, true},
		{"the public view naming the renter", "GET", "/bikes/b1", nil, 200, jsonHeader("r"), `{"bikeId":"b1","available":false,"renter":"alice"}`, false},
		{"the public view with the operator's status", "GET", "/bikes/b1", nil, 200, jsonHeader("r"), `{"bikeId":"b1","status":"rented"}`, false},
		{"an operator's view of a bike", "PUT", "/bikes/b1", nil, 200, jsonHeader("r"), `{"bikeId":"b1","status":"rented","rentalId":"b1_abcdefghijABCDEFGHIJ12","renter":"alice"}`, true},
		{"a registration without Location", "PUT", "/bikes/b1", nil, 201, jsonHeader("r"), `{"bikeId":"b1","status":"available"}`, false},
		{"a registration with Location", "PUT", "/bikes/b1", nil, 201, with2(jsonHeader("r"), "Location", "/bikes/b1"), `{"bikeId":"b1","status":"available"}`, true},
		{"a page of rentals", "GET", "/rentals", url.Values{"limit": {"1"}}, 200, jsonHeader("r"),
			`{"rentals":[{"rentalId":"` + rentalID + `","bikeId":"bike-1","requestedAt":"2026-11-29T12:00:00Z"}],"nextCursor":"djM"}`, true},
		{"the last page of rentals", "GET", "/rentals", nil, 200, jsonHeader("r"), `{"rentals":[]}`, true},
		{"a page whose time is not a time", "GET", "/rentals", nil, 200, jsonHeader("r"),
			`{"rentals":[{"rentalId":"` + rentalID + `","bikeId":"bike-1","requestedAt":"yesterday"}]}`, false},
		{"a rental", "GET", "/rentals/" + rentalID, nil, 200, jsonHeader("r"),
			`{"rentalId":"` + rentalID + `","bikeId":"bike-1","renter":"alice","status":"awaiting-payment","paymentReference":"` + ref + `",` +
				`"history":[{"at":"2026-11-29T12:00:00.123456789Z","stream":"bike-bike-1","version":2,"type":"BikeRequested","data":{"bikeId":"bike-1","nested":[1,{"a":null}]},"correlationId":"` + rentalID + `","causationId":"request:abc"}]}`, true},
		{"a rental in an unknown status", "GET", "/rentals/" + rentalID, nil, 200, jsonHeader("r"),
			`{"rentalId":"` + rentalID + `","bikeId":"bike-1","renter":"alice","status":"lost","paymentReference":"` + ref + `","history":[]}`, false},
		{"a foreign rental is a 404", "GET", "/rentals/" + rentalID, nil, 404, problem("r"), problemBody(problemBase+"rental-not-found", 404, "r"), true},
		{"a webhook applied", "POST", "/webhooks/payments", nil, 200, jsonHeader("r"), `{"eventId":"e1","paymentReference":"` + ref + `","status":"confirmed"}`, true},
		{"a late webhook, repeated", "POST", "/webhooks/payments", nil, 200, jsonHeader("r"), `{"eventId":"e1","paymentReference":"` + ref + `","status":"cancelled","refund":"owed","duplicate":true}`, true},
		{"a webhook answer without its event", "POST", "/webhooks/payments", nil, 200, jsonHeader("r"), `{"paymentReference":"` + ref + `","status":"confirmed"}`, false},
		{"a generic webhook ignored", "POST", "/webhooks/payments", nil, 200, jsonHeader("r"), `{"ignored":true}`, false},
		{"a Stripe event ignored", "POST", "/webhooks/stripe", nil, 200, jsonHeader("r"), `{"ignored":true}`, true},
		{"a Stripe event ignored, with a status", "POST", "/webhooks/stripe", nil, 200, jsonHeader("r"), `{"eventId":"evt_1","ignored":true,"status":"confirmed"}`, false},
		{"a reused event id", "POST", "/webhooks/payments", nil, 422, problem("r"), problemBody(problemBase+"webhook-event-reused", 422, "r"), true},
		{"a problem type that is gone", "POST", "/webhooks/payments", nil, 409, problem("r"), problemBody(problemBase+"payment-cancelled", 409, "r"), false},
		{"a webhook body too large", "POST", "/webhooks/stripe", nil, 413, problem("r"), problemBody("about:blank", 413, "r"), true},
		{"no Stripe here", "POST", "/webhooks/stripe", nil, 501, problem("r"), problemBody("about:blank", 501, "r"), true},
		{"a rental with its payment", "GET", "/rentals/" + rentalID, nil, 200, jsonHeader("r"),
			`{"rentalId":"` + rentalID + `","bikeId":"bike-1","renter":"alice","status":"awaiting-payment","paymentReference":"` + ref + `",` +
				`"payment":{"paymentId":"pi_1","clientSecret":"pi_1_secret_2","amount":1500,"currency":"EUR","status":"prepared"},"history":[]}`, true},
		{"a rental whose payment has no id", "GET", "/rentals/" + rentalID, nil, 200, jsonHeader("r"),
			`{"rentalId":"` + rentalID + `","bikeId":"bike-1","renter":"alice","status":"cancelled","paymentReference":"` + ref + `",` +
				`"payment":{"amount":1500,"currency":"EUR","status":"cancelled","refund":"owed"},"history":[]}`, false},
		{"a cancellation", "POST", "/rentals/" + rentalID + "/cancel-payment", nil, 200, jsonHeader("r"), `{"rentalId":"` + rentalID + `","outcome":"nothing-to-do"}`, true},
		{"a refund made by hand", "POST", "/rentals/" + rentalID + "/refund-made-by-hand", nil, 200, jsonHeader("r"),
			`{"rentalId":"` + rentalID + `","paymentReference":"` + ref + `","paymentId":"pi_other","amount":1500,"currency":"EUR","reference":"<b>bank-1</b>","recordedBy":"ops","recordedAt":"2026-11-29T12:00:00Z","refund":"refunded-by-hand"}`, true},
		{"a refund made by hand that is not", "POST", "/rentals/" + rentalID + "/refund-made-by-hand", nil, 200, jsonHeader("r"),
			`{"rentalId":"` + rentalID + `","paymentReference":"` + ref + `","paymentId":"pay_1","amount":1500,"currency":"EUR","reference":"bank-1","recordedBy":"ops","recordedAt":"2026-11-29T12:00:00Z","refund":"owed"}`, false},
		{"a refund made by hand for another amount", "POST", "/rentals/" + rentalID + "/refund-made-by-hand", nil, 422, problem("r"), problemBody(problemBase+"refund-amount-not-owed", 422, "r"), true},
		{"a refund made by hand twice", "POST", "/rentals/" + rentalID + "/refund-made-by-hand", nil, 409, problem("r"), problemBody(problemBase+"refund-already-recorded", 409, "r"), true},
		{"a cancellation's 501", "POST", "/rentals/" + rentalID + "/cancel-payment", nil, 501, problem("r"), problemBody("about:blank", 501, "r"), true},
		{"pending payments", "GET", "/payments/pending", url.Values{"limit": {"5"}}, 200, jsonHeader("r"),
			`{"payments":[{"paymentReference":"` + ref + `","rentalId":"` + rentalID + `","preparedAt":"2026-11-29T12:00:00Z","ageSeconds":31}],"count":1,"limit":5}`, true},
		{"pending payments over the limit", "GET", "/payments/pending", nil, 200, jsonHeader("r"), `{"payments":[],"count":0,"limit":1001}`, false},
		{"a page of the to-do list", "GET", "/deadlines", url.Values{"kind": {"return"}, "limit": {"1"}}, 200, jsonHeader("r"),
			`{"now":"2026-11-29T12:00:00Z","deadlines":[{"kind":"return","rentalId":"` + rentalID + `","dueAt":"2026-11-29T11:00:00Z","ageSeconds":90000,"overdue":true}],"count":1,"limit":1,"nextCursor":"eyJsIjoicmV0dXJuIn0"}`, true},
		{"the last page of the to-do list", "GET", "/deadlines", url.Values{"cursor": {"eyJsIjoiIn0"}}, 200, jsonHeader("r"),
			`{"now":"2026-11-29T12:00:00Z","deadlines":[],"count":0,"limit":100}`, true},
		{"an empty cursor to go on from", "GET", "/deadlines", nil, 200, jsonHeader("r"), `{"now":"2026-11-29T12:00:00Z","deadlines":[],"count":0,"limit":100,"nextCursor":""}`, false},
		{"a cursor too long to go on from", "GET", "/deadlines", nil, 200, jsonHeader("r"),
			`{"now":"2026-11-29T12:00:00Z","deadlines":[],"count":0,"limit":100,"nextCursor":"` + strings.Repeat("A", 513) + `"}`, false},
		{"a row of a kind the to-do list does not list", "GET", "/deadlines", nil, 200, jsonHeader("r"),
			`{"now":"2026-11-29T12:00:00Z","deadlines":[{"kind":"cancellation","rentalId":"` + rentalID + `","dueAt":"2026-11-29T11:00:00Z","ageSeconds":3600,"overdue":true}],"count":1,"limit":100}`, false},
		{"a cursor refused", "GET", "/deadlines", url.Values{"cursor": {"x"}}, 400, problem("r"), problemBody(problemBase+"invalid-request", 400, "r"), true},
		{"a bad path parameter still finds its operation", "GET", "/bikes/" + strings.Repeat("b", 40), nil, 400, problem("r"), problemBody(problemBase+"invalid-request", 400, "r"), true},

		{"an unknown path", "GET", "/nowhere", nil, 404, problem("r"), problemBody("about:blank", 404, "r"), true},
		{"an unknown path answered 200", "GET", "/nowhere", nil, 200, jsonHeader("r"), `{}`, false},
		{"an unknown path answered 404 without a problem", "GET", "/nowhere", nil, 404, jsonHeader("r"), `{}`, false},
		{"an unknown path answered 404 without X-Request-Id", "GET", "/nowhere", nil, 404, func() http.Header { return http.Header{"Content-Type": {"application/problem+json"}} },
			`{"type":"about:blank","title":"Not Found","status":404,"requestId":"r"}`, false},
		{"a 405 whose problem lacks its status", "DELETE", "/bikes/b1", nil, 405, with2(problem("r"), "Allow", "PUT, GET"), `{"type":"about:blank","title":"x","requestId":"r"}`, false},
		{"a method the path does not allow", "DELETE", "/bikes/b1", nil, 405, with2(problem("r"), "Allow", "PUT, GET"), problemBody("about:blank", 405, "r"), true},
		{"a 405 whose Allow is wrong", "DELETE", "/bikes/b1", nil, 405, with2(problem("r"), "Allow", "GET"), problemBody("about:blank", 405, "r"), false},
		{"a 405 without Allow", "PATCH", "/rentals", nil, 405, problem("r"), problemBody("about:blank", 405, "r"), false},
		{"a path with outer slashes", "POST", "/rentals/", nil, 202, same, okBody, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.ValidateResponse(tc.method, tc.path, tc.query, bearer, tc.status, tc.header(), []byte(tc.body))
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("accepted")
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}

func jsonHeader(requestID string) func() http.Header {
	return func() http.Header {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("X-Request-Id", requestID)
		return h
	}
}

// with2 adds a header to what base returns, with the key written as given.
func with2(base func() http.Header, key, value string) func() http.Header {
	return func() http.Header {
		h := base()
		h[key] = []string{value}
		return h
	}
}

func TestAnUnknownOperationIsReported(t *testing.T) {
	c := apicontract.MustLoad(t)
	err := c.ValidateResponse("GET", "/nowhere", nil, nil, 200, jsonHeader("r")(), []byte(`{}`))
	if !errors.Is(err, apicontract.ErrNoOperation) {
		t.Errorf("err = %v, want ErrNoOperation", err)
	}
	err = c.ValidateRequest("GET", "/nowhere", nil, nil, nil)
	if !errors.Is(err, apicontract.ErrNoOperation) {
		t.Errorf("err = %v, want ErrNoOperation", err)
	}
}

func TestValidateRequest(t *testing.T) {
	c := apicontract.MustLoad(t)
	jsonBody := http.Header{"Content-Type": {"application/json"}}
	signed := http.Header{"Content-Type": {"application/json"},
		"Payment-Signature": {"t=1796040000,v1=" + strings.Repeat("ab", 32)}}
	succeeded := `{"id":"e1","type":"payment.succeeded","paymentReference":"` + ref + `"}`
	for _, tc := range []struct {
		name, method, path string
		query              url.Values
		header             http.Header
		body               string
		ok                 bool
	}{
		{"a rental request, no credentials needed", "POST", "/rentals", nil, jsonBody, `{"bikeId":"b1"}`, true},
		{"a rental request with a key", "POST", "/rentals", nil, http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"7d1c 2a!"}}, `{"bikeId":"b1"}`, true},
		{"a rental request naming the renter", "POST", "/rentals", nil, jsonBody, `{"bikeId":"b1","renter":"alice"}`, false},
		{"a rental request without a bike", "POST", "/rentals", nil, jsonBody, `{}`, false},
		{"a rental request without a body", "POST", "/rentals", nil, nil, ``, false},
		{"a key too long", "POST", "/rentals", nil, http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {strings.Repeat("k", 256)}}, `{"bikeId":"b1"}`, false},
		{"a key that is not ASCII", "POST", "/rentals", nil, http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"clé"}}, `{"bikeId":"b1"}`, false},
		{"a page of rentals", "GET", "/rentals", url.Values{"limit": {"100"}, "cursor": {"djM"}}, nil, ``, true},
		{"too big a page", "GET", "/rentals", url.Values{"limit": {"101"}}, nil, ``, false},
		{"a limit that is no number", "GET", "/payments/pending", url.Values{"limit": {"ten"}}, nil, ``, false},
		{"the most pending payments", "GET", "/payments/pending", url.Values{"limit": {"1000"}}, nil, ``, true},
		{"the next page of the to-do list", "GET", "/deadlines", url.Values{"kind": {"refund"}, "overdue": {"true"}, "limit": {"10"}, "cursor": {"eyJsIjoiIn0"}}, nil, ``, true},
		{"an empty cursor", "GET", "/deadlines", url.Values{"cursor": {""}}, nil, ``, false},
		{"the longest cursor", "GET", "/deadlines", url.Values{"cursor": {strings.Repeat("A", 512)}}, nil, ``, true},
		{"a cursor too long", "GET", "/deadlines", url.Values{"cursor": {strings.Repeat("A", 513)}}, nil, ``, false},
		{"a kind the to-do list does not list", "GET", "/deadlines", url.Values{"kind": {"cancellation"}}, nil, ``, false},
		{"a bike id too long", "GET", "/bikes/" + strings.Repeat("b", 37), nil, nil, ``, false},
		{"the longest bike id", "GET", "/bikes/" + strings.Repeat("b", 36), nil, nil, ``, true},
		{"a rental id with a dot", "GET", "/rentals/a.b", nil, nil, ``, false},
		{"a registration", "PUT", "/bikes/b1", nil, nil, ``, true},
		{"a registration with {}", "PUT", "/bikes/b1", nil, jsonBody, `{}`, true},
		{"a registration with a field", "PUT", "/bikes/b1", nil, jsonBody, `{"colour":"red"}`, false},
		{"a return naming its rental", "POST", "/bikes/b1/return", nil, jsonBody, `{"rentalId":"b1_abcdefghijABCDEFGHIJ12"}`, true},
		{"a return with an unknown field", "POST", "/bikes/b1/return", nil, jsonBody, `{"rental":"x"}`, false},
		{"a signed success", "POST", "/webhooks/payments", nil, signed, succeeded, true},
		{"a signed success without a body", "POST", "/webhooks/payments", nil, signed, ``, false},
		{"an unsigned success", "POST", "/webhooks/payments", nil, jsonBody, succeeded, false},
		{"a signature without v1", "POST", "/webhooks/payments", nil, http.Header{"Content-Type": {"application/json"}, "Payment-Signature": {"t=1796040000"}}, succeeded, false},
		{"a signed failure with a reason", "POST", "/webhooks/payments", nil, signed, `{"id":"e2","type":"payment.failed","paymentReference":"` + ref + `","reason":"card declined"}`, true},
		{"a reason on a success", "POST", "/webhooks/payments", nil, signed, `{"id":"e1","type":"payment.succeeded","paymentReference":"` + ref + `","reason":"why"}`, false},
		{"a reason too long", "POST", "/webhooks/payments", nil, signed, `{"id":"e2","type":"payment.failed","paymentReference":"` + ref + `","reason":"` + strings.Repeat("x", 501) + `"}`, false},
		{"an unknown event field", "POST", "/webhooks/payments", nil, signed, `{"id":"e1","type":"payment.succeeded","paymentReference":"` + ref + `","price":1}`, false},
		{"an unknown event type", "POST", "/webhooks/payments", nil, signed, `{"id":"e1","type":"payment.refunded","paymentReference":"` + ref + `"}`, false},
		{"a Stripe event", "POST", "/webhooks/stripe", nil, http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Stripe-Signature": {"t=1796040000,v1=" + strings.Repeat("ab", 32) + ",v0=00"}},
			`{"id":"evt_1","object":"event","api_version":"2026-03-25.dahlia","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent"}},"livemode":false}`, true},
		{"a Stripe event signed the generic way", "POST", "/webhooks/stripe", nil, signed, `{"id":"evt_1","object":"event","type":"x","data":{"object":{}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.ValidateRequest(tc.method, tc.path, tc.query, tc.header, []byte(tc.body))
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("accepted")
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}

func TestValidateEvent(t *testing.T) {
	c := apicontract.MustLoad(t)
	req := events.APIGatewayV2HTTPRequest{
		RawPath:        "/rentals",
		RawQueryString: "limit=2",
		Headers:        map[string]string{"authorization": "Bearer x.y.z"},
	}
	req.RequestContext.HTTP.Method = http.MethodGet
	resp := events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusUnauthorized,
		Headers: map[string]string{"Content-Type": "application/problem+json", "X-Request-Id": "r1",
			"WWW-Authenticate": `Bearer realm="bikerental"`},
		Body: problemBody(problemBase+"unauthenticated", 401, "r1"),
	}
	if err := c.ValidateEvent(req, resp); err != nil {
		t.Errorf("refused: %v", err)
	}
	delete(resp.Headers, "WWW-Authenticate")
	if err := c.ValidateEvent(req, resp); err == nil {
		t.Error("accepted a 401 without WWW-Authenticate")
	}
	if err := c.ValidateRequestEvent(req); err != nil {
		t.Errorf("request refused: %v", err)
	}
	req.RawQueryString = "limit=0"
	if err := c.ValidateRequestEvent(req); err == nil {
		t.Error("accepted limit=0")
	}
}

func TestValidateResponseIsSafeForConcurrentUse(t *testing.T) {
	c := apicontract.MustLoad(t)
	header, body := rentalAccepted()
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			errs <- c.ValidateResponse("POST", "/rentals", nil, nil, 202, header, []byte(body))
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
