package local_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/testkit/apicontract"
)

// template is the part of a SAM template that throttling reads, with rest put in
// the HTTP API's properties and more as extra routes.
func template(t *testing.T, defaults, more string) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  RentalsRate: {Type: Number, Default: 25}
Resources:
  HttpApi:
    Type: AWS::Serverless::HttpApi
    Properties:
` + defaults + `
  CommandFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        RequestRental:
          Type: HttpApi
          Properties: {Method: POST, Path: /rentals, RouteSettings: {ThrottlingBurstLimit: 50, ThrottlingRateLimit: !Ref RentalsRate}}
        GetBike:
          Type: HttpApi
          Properties: {Method: GET, Path: "/bikes/{bikeId}"}
        Pending:
          Type: HttpApi
          Properties: {Method: GET, Path: /payments/pending, RouteSettings: {ThrottlingRateLimit: 5}}
        Sweep:
          Type: Schedule
          Properties: {Schedule: rate(1 minute)}
` + more))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

const stageDefaults = `      DefaultRouteSettings:
        ThrottlingBurstLimit: 200
        ThrottlingRateLimit: 100`

func TestThrottlingIsReadFromTheTemplate(t *testing.T) {
	got, err := local.ThrottlingOf(template(t, stageDefaults, ""))
	if err != nil {
		t.Fatal(err)
	}
	for route, want := range map[string]local.Limit{
		"POST /rentals":          {Rate: 25, Burst: 50},
		"GET /payments/pending":  {Rate: 5, Burst: 200}, // the burst is the stage's
		"GET /bikes/{bikeId}":    {Rate: 100, Burst: 200},
		"":                       {Rate: 100, Burst: 200}, // no route
		"DELETE /bikes/{bikeId}": {Rate: 100, Burst: 200},
	} {
		if l := got.Limit(route); l != want {
			t.Errorf("%q: %+v, want %+v", route, l, want)
		}
	}
	for name, tc := range map[string]struct{ defaults, more string }{
		"no default":                      {"", ""},
		"a default rate alone":            {"      DefaultRouteSettings: {ThrottlingRateLimit: 100}", ""},
		"a zero rate":                     {"      DefaultRouteSettings: {ThrottlingBurstLimit: 200, ThrottlingRateLimit: 0}", ""},
		"a burst that is no whole number": {"      DefaultRouteSettings: {ThrottlingBurstLimit: 2.5, ThrottlingRateLimit: 1}", ""},
		"a route's bad rate": {stageDefaults, `        Bad:
          Type: HttpApi
          Properties: {Method: GET, Path: /rentals, RouteSettings: {ThrottlingRateLimit: fast}}`},
		"a route's negative burst": {stageDefaults, `        Bad:
          Type: HttpApi
          Properties: {Method: GET, Path: /rentals, RouteSettings: {ThrottlingBurstLimit: -1}}`},
	} {
		if _, err := local.ThrottlingOf(template(t, tc.defaults, tc.more)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestTheTemplateLimitsEveryRoute reads the repository's own template.yaml, as
// make run does: every route the API serves has a limit, every route the template
// limits is one the API serves, and some route has a limit of its own.
func TestTheTemplateLimitsEveryRoute(t *testing.T) {
	got, err := local.TemplateThrottling()
	if err != nil {
		t.Fatal(err)
	}
	if got.Default.Rate <= 0 || got.Default.Burst < 1 || len(got.Routes) == 0 {
		t.Fatalf("the template's throttling: %+v", got)
	}
	served := map[string]bool{}
	for _, r := range httpapi.Routes() {
		served[r.Method+" "+r.Pattern] = true
		if l := got.Limit(r.Method + " " + r.Pattern); l.Rate <= 0 || l.Burst < 1 {
			t.Errorf("%s %s: limit %+v", r.Method, r.Pattern, l)
		}
	}
	for route := range got.Routes {
		if !served[route] {
			t.Errorf("the template limits %s, which the API does not serve", route)
		}
	}
}

// clock is a test's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time                              { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration)                         { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }
func newClock() *clock                                       { return &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)} }
func (c *clock) throttle(l local.Throttling) *local.Throttle { return local.NewThrottle(l, c.Now) }

// TestGatewayThrottlesEachRoute plays a stage whose routes allow a burst of 3 and 2
// a second, and POST /rentals 1: a request over its route's bucket is refused with
// 429 before the function or the authorizer sees it, other routes' buckets are
// untouched, and a bucket refills at its rate.
func TestGatewayThrottlesEachRoute(t *testing.T) {
	var invoked atomic.Int64
	clk := newClock()
	gateway := local.Gateway{
		Function: local.InProcess(func(_ context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			invoked.Add(1)
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "{}"}, nil
		}),
		Throttle: clk.throttle(local.Throttling{Default: local.Limit{Rate: 2, Burst: 3}, Routes: map[string]local.Limit{"POST /rentals": {Rate: 1, Burst: 1}}}),
	}
	srv := httptest.NewServer(gateway)
	defer srv.Close()
	send := func(method, path string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}
	statuses := func(n int, method, path string) []int {
		var out []int
		for range n {
			code, _, _ := send(method, path)
			out = append(out, code)
		}
		return out
	}
	equal := func(what string, got []int, want ...int) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}

	// Two bikes, one route: they share its bucket.
	equal("GET /bikes/{bikeId}", append(statuses(2, "GET", "/bikes/b1"), statuses(2, "GET", "/bikes/b2")...), 200, 200, 200, 429)
	if n := invoked.Load(); n != 3 {
		t.Errorf("the function ran %d times, want 3: a throttled request reached it", n)
	}
	code, header, body := send("GET", "/bikes/b1")
	if code != http.StatusTooManyRequests || header.Get("Content-Type") != "application/problem+json" || header.Get("X-Request-Id") == "" {
		t.Errorf("a throttled request: %d %v %s", code, header, body)
	}
	var p httpapi.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.Type != "about:blank" || p.Status != 429 || p.RequestID != header.Get("X-Request-Id") {
		t.Errorf("a throttled request's problem: %s", body)
	}
	if err := apicontract.MustLoad(t).ValidateResponse("GET", "/bikes/b1", nil, nil, code, header, []byte(body)); err != nil {
		t.Errorf("the 429 breaks api/openapi.yaml: %v", err)
	}

	// Another route has its own bucket; no token is refused 401 by the authorizer,
	// after the throttle let it through, and the next one is throttled first.
	equal("POST /rentals", statuses(2, "POST", "/rentals"), 401, 429)
	equal("a path that is no route", statuses(4, "GET", "/nowhere"), 200, 200, 200, 429)

	// The bucket refills at its rate: 2 a second, up to the burst.
	clk.Add(500 * time.Millisecond)
	equal("half a second later", statuses(2, "GET", "/bikes/b1"), 200, 429)
	clk.Add(time.Hour)
	equal("an hour later", statuses(4, "GET", "/bikes/b1"), 200, 200, 200, 429)
	equal("POST /rentals an hour later", statuses(2, "POST", "/rentals"), 401, 429)
}
