package local_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// signatureHeaders are the webhook routes' credentials: the header each provider
// signs with.
var signatureHeaders = map[string]string{"/webhooks/payments": webhook.Header, "/webhooks/stripe": stripe.SignatureHeader}

// concrete turns a route's pattern into a path of it, with markup in its ids.
func concrete(pattern string) string {
	for _, p := range []string{"{bikeId}", "{rentalId}", "{asset}"} {
		pattern = strings.ReplaceAll(pattern, p, "%3Cb%3Ex")
	}
	return pattern
}

// TestTheTemplateEdgeRefusesEveryRouteWithoutItsCredential reads template.yaml's
// web ACL, as make run does, and holds it to the API's route table: a request
// without a credential on a renter or operator route is refused 401 with a bearer
// challenge, one on a webhook without its provider's signature 401, and every
// public route, and every route with its credential (well formed, not necessarily
// valid: the authorizer and the function judge that), goes on to the API.
func TestTheTemplateEdgeRefusesEveryRouteWithoutItsCredential(t *testing.T) {
	edge, err := local.TemplateEdge(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range httpapi.Routes() {
		path := concrete(rt.Pattern)
		bare := httptest.NewRequest(rt.Method, path, nil)
		with := httptest.NewRequest(rt.Method, path, nil)
		switch rt.Access {
		case httpapi.Renter, httpapi.Operator:
			with.Header.Set("Authorization", "Bearer not.a.token")
		case httpapi.Webhook:
			h, ok := signatureHeaders[rt.Pattern]
			if !ok {
				t.Fatalf("%s %s: a webhook route whose signature header the test does not know", rt.Method, rt.Pattern)
			}
			with.Header.Set(h, "t=1,v1=00")
		}
		v := edge.Check(bare)
		switch needs := rt.Access != httpapi.Public; {
		case needs && (!v.Blocked() || v.Status != http.StatusUnauthorized):
			t.Errorf("%s %s without a credential: %+v, want refused 401", rt.Method, rt.Pattern, v)
		case needs && rt.Access != httpapi.Webhook && !strings.HasPrefix(v.Header.Get("WWW-Authenticate"), "Bearer"):
			t.Errorf("%s %s: refused without a bearer challenge: %v", rt.Method, rt.Pattern, v.Header)
		case !needs && v.Blocked():
			t.Errorf("%s %s is public, and the edge refused it: %+v", rt.Method, rt.Pattern, v)
		}
		if v := edge.Check(with); v.Blocked() {
			t.Errorf("%s %s with its credential: refused by %s", rt.Method, rt.Pattern, v.Rule)
		}
	}
	// Closed by default: every other spelling of a route that needs a credential
	// (one the router might still route: a trailing or doubled slash, another
	// case, a letter percent-encoded), and a path of no route, is refused without
	// a credential, and goes on with one. A webhook's credential is its signature;
	// spelled otherwise, it needs a bearer token as well to pass the bearer rule
	// (which no provider sends), and with an empty segment it is refused whatever
	// it carries (TestTheTemplateEdgeRefusesEveryWebhookSpellingWithoutItsSignature).
	for _, rt := range httpapi.Routes() {
		if rt.Access == httpapi.Public {
			continue
		}
		path := concrete(rt.Pattern)
		for _, spelled := range []string{path + "/", "/" + path, strings.ToUpper(path[:2]) + path[2:], "/%" + fmt.Sprintf("%02X", path[1]) + path[2:]} {
			bare := requestFor(t, rt.Method, spelled)
			if v := edge.Check(bare); !v.Blocked() || v.Status != http.StatusUnauthorized {
				t.Errorf("%s %s (for %s) without a credential: %+v, want refused 401", rt.Method, spelled, rt.Pattern, v)
			}
			with := requestFor(t, rt.Method, spelled)
			with.Header.Set("Authorization", "Bearer not.a.token")
			refused := false
			if rt.Access == httpapi.Webhook {
				with.Header.Set(signatureHeaders[rt.Pattern], "t=1,v1=00")
				refused = strings.Contains(spelled, "//")
			}
			if v := edge.Check(with); (v.Blocked() && v.Status == http.StatusUnauthorized) != refused {
				t.Errorf("%s %s with its credential: %+v, want refused 401 %v", rt.Method, spelled, v, refused)
			}
		}
	}
	for _, req := range []*http.Request{httptest.NewRequest("GET", "/admin", nil), httptest.NewRequest("DELETE", "/bikes/b1", nil), httptest.NewRequest("GET", "/webhooks/stripe", nil),
		requestFor(t, "GET", "/bikes/../deadlines"), requestFor(t, "GET", "/bikes/%2e%2e/deadlines"), requestFor(t, "GET", "/console/../refunds/owed")} {
		if v := edge.Check(req); !v.Blocked() || v.Status != http.StatusUnauthorized {
			t.Errorf("%s %s, of no public route, without a credential: %+v, want refused 401", req.Method, req.URL.Path, v)
		}
	}
	// A lower-case scheme is still a bearer token; a Basic one is not.
	for auth, blocked := range map[string]bool{"bearer x": false, "BEARER x": false, "Basic eDp5": true, "": true} {
		req := httptest.NewRequest("GET", "/deadlines", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if v := edge.Check(req); v.Blocked() != blocked {
			t.Errorf("GET /deadlines with Authorization %q: %+v, want blocked %v", auth, v, blocked)
		}
	}
}

// requestFor is a request for path exactly as spelled, as it arrives at the edge
// (httptest.NewRequest would read "//x" as a host).
func requestFor(t *testing.T, method, path string) *http.Request {
	t.Helper()
	u, err := url.Parse("http://edge.test" + path)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(method, "/", nil)
	req.URL = u
	if got := req.URL.EscapedPath(); got != path {
		t.Fatalf("the request's path is %q, want %q", got, path)
	}
	return req
}

// edgeTemplate is a web ACL of rules, in a template of its own.
func edgeTemplate(t *testing.T, defaultAction, rules string) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Limit: {Type: Number, Default: 10}
Resources:
  EdgeWebAcl:
    Type: AWS::WAFv2::WebACL
    Properties:
      Scope: CLOUDFRONT
      DefaultAction: ` + defaultAction + `
      CustomResponseBodies:
        Slow: {ContentType: APPLICATION_JSON, Content: '{"message":"Too Many Requests"}'}
      Rules:
` + rules))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

const rateRule = `        - Name: PerSourceRate
          Priority: 0
          Action: {Block: {CustomResponse: {ResponseCode: 429, CustomResponseBodyKey: Slow, ResponseHeaders: [{Name: Retry-After, Value: "60"}]}}}
          Statement: {RateBasedStatement: {Limit: !Ref Limit, EvaluationWindowSec: 60, AggregateKeyType: IP}}
`

// TestTheEdgeLimitsEachAddressOverItsWindow plays a rate rule of 10 requests a
// minute per address: the eleventh in a minute from one address is refused 429 with
// the rule's Retry-After and body, another address is not, and once the window has
// moved past the first requests the address is let through again.
func TestTheEdgeLimitsEachAddressOverItsWindow(t *testing.T) {
	clk := newClock()
	edge, err := local.EdgeOf(edgeTemplate(t, "{Allow: {}}", rateRule), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	from := func(addr string) *http.Request {
		req := httptest.NewRequest("GET", "/bikes/b1", nil)
		req.RemoteAddr = addr + ":40000"
		return req
	}
	for i := range 10 {
		if v := edge.Check(from("198.51.100.7")); v.Blocked() {
			t.Fatalf("request %d of 10: refused", i+1)
		}
		clk.Add(time.Second)
	}
	v := edge.Check(from("198.51.100.7"))
	if !v.Blocked() || v.Status != http.StatusTooManyRequests || v.Header.Get("Retry-After") != "60" ||
		v.Header.Get("Content-Type") != "application/json" || string(v.Body) != `{"message":"Too Many Requests"}` {
		t.Fatalf("the eleventh in a minute: %+v", v)
	}
	if v := edge.Check(from("198.51.100.8")); v.Blocked() {
		t.Errorf("another address was refused: %+v", v)
	}
	clk.Add(59 * time.Second) // the first ten are now over a minute old; the eleventh is not
	if v := edge.Check(from("198.51.100.7")); v.Blocked() {
		t.Errorf("a minute later: still refused")
	}
}

// scoped is rateRule scoped down by statement.
func scoped(statement string) string {
	return strings.Replace(rateRule, "AggregateKeyType: IP}", "AggregateKeyType: IP, ScopeDownStatement: "+statement+"}", 1)
}

// pathMatch is a byte match of the path containing search, after transformations.
func pathMatch(search, transformations string) string {
	return `{ByteMatchStatement: {FieldToMatch: {UriPath: {}}, PositionalConstraint: CONTAINS, SearchString: "` + search + `", TextTransformations: ` + transformations + `}}`
}

// TestTheEdgeRefusesToPlayWhatItDoesNot: a web ACL the local edge would play wrong
// stops the runner instead.
func TestTheEdgeRefusesToPlayWhatItDoesNot(t *testing.T) {
	match := func(statement string) string {
		return `        - Name: R
          Priority: 0
          Action: {Block: {}}
          Statement: ` + statement + "\n"
	}
	const putMatch = `{ByteMatchStatement: {FieldToMatch: {Method: {}}, PositionalConstraint: EXACTLY, SearchString: PUT, TextTransformations: [{Priority: 0, Type: NONE}]}}`
	for name, tc := range map[string]struct{ def, rules, want string }{
		"a default that blocks":           {"{Block: {}}", rateRule, `unknown field "Block"`},
		"a statement it lacks":            {"{Allow: {}}", match(`{RegexMatchStatement: {RegexString: "^/x", FieldToMatch: {UriPath: {}}, TextTransformations: [{Priority: 0, Type: NONE}]}}`), `unknown field "RegexMatchStatement"`},
		"a count action":                  {"{Allow: {}}", strings.Replace(rateRule, "Action: {Block: {CustomResponse:", "Action: {Count: {CustomResponse:", 1), `unknown field "Count"`},
		"a window AWS has not":            {"{Allow: {}}", strings.Replace(rateRule, "EvaluationWindowSec: 60", "EvaluationWindowSec: 30", 1), `a window of 60, 120, 300 or 600 s`},
		"a rate keyed on a header":        {"{Allow: {}}", strings.Replace(rateRule, "AggregateKeyType: IP", "AggregateKeyType: FORWARDED_IP", 1), `keyed on IP`},
		"an empty scope-down":             {"{Allow: {}}", scoped(`{}`), `scope-down statement: a statement the local edge does not play`},
		"a scope-down it lacks":           {"{Allow: {}}", scoped(`{RegexMatchStatement: {RegexString: "^/x", FieldToMatch: {UriPath: {}}, TextTransformations: [{Priority: 0, Type: NONE}]}}`), `unknown field "RegexMatchStatement"`},
		"a rate in a scope-down":          {"{Allow: {}}", scoped(`{RateBasedStatement: {Limit: 10, EvaluationWindowSec: 60, AggregateKeyType: IP}}`), `scope-down statement: a statement the local edge does not play`},
		"a rate in an And":                {"{Allow: {}}", match(`{AndStatement: {Statements: [{RateBasedStatement: {Limit: 10, EvaluationWindowSec: 60, AggregateKeyType: IP}}, ` + putMatch + `]}}`), `a statement the local edge does not play`},
		"NONE among others":               {"{Allow: {}}", scoped(pathMatch("/x", `[{Priority: 0, Type: NONE}, {Priority: 1, Type: LOWERCASE}]`)), `text transformation "NONE"`},
		"transformations of one priority": {"{Allow: {}}", scoped(pathMatch("/x", `[{Priority: 0, Type: URL_DECODE}, {Priority: 0, Type: LOWERCASE}]`)), `share priority 0`},
		"no transformation":               {"{Allow: {}}", scoped(pathMatch("/x", `[]`)), `needs a text transformation`},
		"upper case after LOWERCASE":      {"{Allow: {}}", scoped(pathMatch("/Deadlines", `[{Priority: 0, Type: LOWERCASE}]`)), `upper-case letters`},
		"a % after URL_DECODE":            {"{Allow: {}}", scoped(pathMatch("/a%20b", `[{Priority: 0, Type: URL_DECODE}]`)), `after URL_DECODE`},
		"a + after URL_DECODE":            {"{Allow: {}}", scoped(pathMatch("/a+b", `[{Priority: 0, Type: URL_DECODE}]`)), `after URL_DECODE`},
		"an And of one":                   {"{Allow: {}}", match(`{AndStatement: {Statements: [{ByteMatchStatement: {FieldToMatch: {Method: {}}, PositionalConstraint: EXACTLY, SearchString: PUT, TextTransformations: [{Priority: 0, Type: NONE}]}}]}}`), `two statements at least`},
		"a transformation it lacks":       {"{Allow: {}}", match(`{ByteMatchStatement: {FieldToMatch: {Method: {}}, PositionalConstraint: EXACTLY, SearchString: PUT, TextTransformations: [{Priority: 0, Type: HTML_ENTITY_DECODE}]}}`), `"HTML_ENTITY_DECODE"`},
		"an IP set it lacks":              {"{Allow: {}}", match(`{IPSetReferenceStatement: {Arn: "arn:aws:wafv2:us-east-1:123456789012:global/ipset/x/1"}}`), `an IP set the template does not declare`},
		"a missing body":                  {"{Allow: {}}", strings.Replace(rateRule, "CustomResponseBodyKey: Slow", "CustomResponseBodyKey: Fast", 1), `no response body Fast`},
		"two rules of one priority":       {"{Allow: {}}", rateRule + strings.Replace(rateRule, "PerSourceRate", "Again", 1), `share priority 0`},
	} {
		_, err := local.EdgeOf(edgeTemplate(t, tc.def, tc.rules), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want refused for %q", name, err, tc.want)
		}
	}
}

// TestTheTemplateEdgeHoldsAgainstTheRouteLimits holds the template's rate rules to
// the route limits the template declares, as make run does at start (Edge.Holds):
// on every route, tried with a forged credential and without, and spelled with a
// trailing or doubled slash, two addresses at their allowance take at most half the
// route's rate, and on the routes with limits of their own one address's allowance
// exceeds the route's burst by at most two seconds of its rate. It holds with
// SourceRequestLimit at the most the template lets a deployment set, too.
func TestTheTemplateEdgeHoldsAgainstTheRouteLimits(t *testing.T) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		t.Fatal(err)
	}
	throttling, err := local.ThrottlingOf(tpl)
	if err != nil {
		t.Fatal(err)
	}
	most, err := tpl.Root().Get("Parameters", "SourceRequestLimit", "MaxValue").Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, params := range []map[string]string{nil, {"SourceRequestLimit": most}} {
		edge, err := local.EdgeWith(tpl, params, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := edge.Holds(throttling); err != nil {
			t.Errorf("with %v:\n%v", params, err)
		}
	}
}

// TestTheTemplateEdgeLimitsEachAddressOnTheOperatorLists plays the template's
// DeadlinesPerSource as AWS WAF reads it: one address with a forged bearer token
// gets 20 requests to GET /deadlines through in a minute, however it spells the
// path (a trailing or doubled slash, another case, percent-encoding, a query), the
// 21st is refused 429 with Retry-After, and the rule counts neither another path of
// that address, nor another address, nor a spelling that decodes to the path only
// when decoded twice or lower-cased beyond A-Z; a minute later the address is let
// through again.
func TestTheTemplateEdgeLimitsEachAddressOnTheOperatorLists(t *testing.T) {
	clk := newClock()
	edge, err := local.TemplateEdge(clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	from := func(addr, path string) *http.Request {
		req := httptest.NewRequest("GET", "http://edge"+path, nil)
		req.RemoteAddr = addr + ":40000"
		req.Header.Set("Authorization", "Bearer x")
		return req
	}
	spellings := []string{"/deadlines", "/deadlines/", "//deadlines", "/Deadlines", "/DEADLINES/", "/dead%6Cines", "/%64eadlines", "/deadlines?limit=1"}
	for i := range 20 {
		if v := edge.Check(from("198.51.100.7", spellings[i%len(spellings)])); v.Blocked() {
			t.Fatalf("request %d of 20 (%s): refused by %s", i+1, spellings[i%len(spellings)], v.Rule)
		}
		clk.Add(time.Second)
	}
	for _, p := range spellings {
		v := edge.Check(from("198.51.100.7", p))
		if !v.Blocked() || v.Rule != "DeadlinesPerSource" || v.Status != http.StatusTooManyRequests || v.Header.Get("Retry-After") != "60" {
			t.Errorf("GET %s over the minute's 20: %+v, want DeadlinesPerSource's 429", p, v)
		}
	}
	// Not the rule's: the address is over its limit, so whatever the rule counted it
	// would refuse.
	for _, p := range []string{"/refunds/owed", "/bikes/b1", "/dead%256Cines"} {
		if v := edge.Check(from("198.51.100.7", p)); v.Blocked() {
			t.Errorf("GET %s from the address over its /deadlines limit: refused by %s", p, v.Rule)
		}
	}
	// LOWERCASE maps A-Z only: the Kelvin sign (U+212A), which Unicode lower-cases to
	// k, leaves "/processes/stuc\u212a" another path.
	for range 20 {
		edge.Check(from("198.51.100.9", "/processes/stuck"))
	}
	if v := edge.Check(from("198.51.100.9", "/processes/stuck")); v.Rule != "StuckRentalsPerSource" {
		t.Errorf("GET /processes/stuck over the minute's 20: %+v, want StuckRentalsPerSource's 429", v)
	}
	if v := edge.Check(from("198.51.100.9", "/processes/stuc%E2%84%AA")); v.Blocked() {
		t.Errorf("GET /processes/stuc%%E2%%84%%AA: refused by %s, as if LOWERCASE mapped more than A-Z", v.Rule)
	}
	if v := edge.Check(from("198.51.100.8", "/deadlines")); v.Blocked() {
		t.Errorf("another address: refused by %s", v.Rule)
	}
	clk.Add(61 * time.Second)
	if v := edge.Check(from("198.51.100.7", "/deadlines")); v.Blocked() {
		t.Errorf("a minute later: refused by %s", v.Rule)
	}
}

// TestTheEdgeAppliesTransformationsByPriority: AWS WAF applies a statement's text
// transformations from the lowest priority up, whatever their order in the list.
// Listed LOWERCASE (priority 1) before URL_DECODE (0), "/%44EADLINES" is decoded to
// "/DEADLINES" and then lower-cased, so it matches "/deadlines"; applied in the
// list's order it would not ("%44" stays "%44" when lower-cased, then decodes to D).
func TestTheEdgeAppliesTransformationsByPriority(t *testing.T) {
	rules := scoped(pathMatch("/deadlines", `[{Priority: 1, Type: LOWERCASE}, {Priority: 0, Type: URL_DECODE}]`))
	edge, err := local.EdgeOf(edgeTemplate(t, "{Allow: {}}", rules), newClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	counted := func(path string) bool {
		for range 10 {
			edge.Check(httptest.NewRequest("GET", "http://edge"+path, nil))
		}
		return edge.Check(httptest.NewRequest("GET", "http://edge"+path, nil)).Blocked()
	}
	if !counted("/%44EADLINES") {
		t.Error("/%44EADLINES: not counted, want decoded, then lower-cased, to /deadlines")
	}
	edge, err = local.EdgeOf(edgeTemplate(t, "{Allow: {}}", rules), newClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	if counted("/%2564eadlines") {
		t.Error("/%2564eadlines: counted, want decoded once only, to /%64eadlines")
	}
}

// TestTheTemplateEdgeLeavesTheOperatorsOwnAddressesOut: with OperatorSourceCidrs
// naming an office's block, an address in it polls GET /deadlines past the 20 a
// minute others are held to, while an address outside it is still refused the 21st;
// both remain under PerSourceRate. An address block the edge would play wrong stops
// it instead.
func TestTheTemplateEdgeLeavesTheOperatorsOwnAddressesOut(t *testing.T) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		t.Fatal(err)
	}
	edge, err := local.EdgeWith(tpl, map[string]string{"OperatorSourceCidrs": "203.0.113.0/24,198.51.100.64/26"}, newClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	from := func(addr string) *http.Request {
		req := httptest.NewRequest("GET", "http://edge/deadlines", nil)
		req.RemoteAddr = addr + ":40000"
		req.Header.Set("Authorization", "Bearer x")
		return req
	}
	for i := range 60 {
		for _, office := range []string{"203.0.113.9", "198.51.100.70"} {
			if v := edge.Check(from(office)); v.Blocked() {
				t.Fatalf("request %d from the office's %s: refused by %s", i+1, office, v.Rule)
			}
		}
	}
	for range 20 {
		edge.Check(from("198.51.100.7"))
	}
	if v := edge.Check(from("198.51.100.7")); v.Rule != "DeadlinesPerSource" {
		t.Errorf("the 21st from outside the offices' blocks: %+v, want DeadlinesPerSource's 429", v)
	}
	for _, cidrs := range []string{"203.0.113.9", "203.0.113.9/24", "0.0.0.0/0", "2001:db8::/32", "203.0.113.0/24, 198.51.100.0/24", "not-an-address"} {
		if _, err := local.EdgeWith(tpl, map[string]string{"OperatorSourceCidrs": cidrs}, nil); err == nil || !strings.Contains(err.Error(), "EdgeOperatorSources") {
			t.Errorf("OperatorSourceCidrs %q: %v, want refused", cidrs, err)
		}
	}
}

// TestTheTemplateEdgeCountsWebhooksAndRentalRequestsPerAddress plays the template's
// WebhooksPerSource and RentalRequestsPerSource: one address's signed-looking
// requests to both webhooks count together, 100 a minute, and its POST /rentals
// count whatever the method's case, 100 a minute; GET /rentals is not counted.
func TestTheTemplateEdgeCountsWebhooksAndRentalRequestsPerAddress(t *testing.T) {
	edge, err := local.TemplateEdge(newClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	req := func(addr, method, path string) *http.Request {
		r := httptest.NewRequest(method, "http://edge"+path, nil)
		r.RemoteAddr = addr + ":40000"
		r.Header.Set("Authorization", "Bearer x")
		for _, h := range signatureHeaders {
			r.Header.Set(h, "t=1,v1=00")
		}
		return r
	}
	for name, tc := range map[string]struct {
		rule   string
		counts []*http.Request
		not    *http.Request
	}{
		"the webhooks": {"WebhooksPerSource",
			[]*http.Request{req("198.51.100.7", "POST", "/webhooks/payments"), req("198.51.100.7", "POST", "/webhooks/stripe/")},
			req("198.51.100.7", "POST", "/rentals")},
		"POST /rentals": {"RentalRequestsPerSource",
			[]*http.Request{req("198.51.100.8", "POST", "/rentals"), req("198.51.100.8", "post", "//Rentals/")},
			req("198.51.100.8", "GET", "/rentals")},
	} {
		for i := range 100 {
			if v := edge.Check(tc.counts[i%2]); v.Blocked() {
				t.Fatalf("%s: request %d of 100: refused by %s", name, i+1, v.Rule)
			}
		}
		for _, r := range tc.counts {
			if v := edge.Check(r); v.Rule != tc.rule || v.Status != http.StatusTooManyRequests {
				t.Errorf("%s: %s %s over the minute's 100: %+v, want %s's 429", name, r.Method, r.URL.Path, v, tc.rule)
			}
		}
		if v := edge.Check(tc.not); v.Blocked() {
			t.Errorf("%s: %s %s from the same address: refused by %s", name, tc.not.Method, tc.not.URL.Path, v.Rule)
		}
	}
}

// TestTheTemplateEdgeLeavesTheProvidersSendersOut: with ProviderSourceCidrs, the
// provider's webhook senders are held neither to the webhooks' per-address limit
// nor to SourceRequestLimit, so that a provider sending from one address is
// answered at the routes' own rate; an address outside the block is still refused
// the 101st webhook of a minute, and the senders are still refused without a
// signature.
func TestTheTemplateEdgeLeavesTheProvidersSendersOut(t *testing.T) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		t.Fatal(err)
	}
	edge, err := local.EdgeWith(tpl, map[string]string{"ProviderSourceCidrs": "192.0.2.0/28"}, newClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	from := func(addr string, signed bool) *http.Request {
		req := httptest.NewRequest("POST", "http://edge/webhooks/stripe", nil)
		req.RemoteAddr = addr + ":40000"
		if signed {
			req.Header.Set(stripe.SignatureHeader, "t=1,v1=00")
		}
		return req
	}
	for i := range 1500 {
		if v := edge.Check(from("192.0.2.5", true)); v.Blocked() {
			t.Fatalf("webhook %d from the provider's sender: refused by %s", i+1, v.Rule)
		}
	}
	if v := edge.Check(from("192.0.2.5", false)); !v.Blocked() || v.Status != http.StatusUnauthorized {
		t.Errorf("an unsigned webhook from the provider's sender: %+v, want refused 401", v)
	}
	for range 100 {
		edge.Check(from("192.0.2.77", true))
	}
	if v := edge.Check(from("192.0.2.77", true)); v.Rule != "WebhooksPerSource" {
		t.Errorf("the 101st webhook from outside the provider's block: %+v, want WebhooksPerSource's 429", v)
	}
	if _, err := local.EdgeWith(tpl, map[string]string{"ProviderSourceCidrs": "0.0.0.0/0"}, nil); err == nil || !strings.Contains(err.Error(), "EdgeProviderSources") {
		t.Errorf("ProviderSourceCidrs 0.0.0.0/0: %v, want refused", err)
	}
}

// TestTheEdgeCountsItsCapacityAsAWSPricesIt: a rate rule scoped down to a path that
// contains a string after two transformations, from outside an IP set, costs 2 + 10
// + 2 × 10 + 1 = 33 WCUs; a rule refusing a method spelled exactly without a header
// starting with a string after LOWERCASE, 2 + 2 + 10 = 14.
func TestTheEdgeCountsItsCapacityAsAWSPricesIt(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(`
Resources:
  Office:
    Type: AWS::WAFv2::IPSet
    Properties: {Name: office, Scope: CLOUDFRONT, IPAddressVersion: IPV4, Addresses: [203.0.113.0/24]}
  EdgeWebAcl:
    Type: AWS::WAFv2::WebACL
    Properties:
      Scope: CLOUDFRONT
      DefaultAction: {Allow: {}}
      Rules:
        - Name: Rate
          Priority: 0
          Action: {Block: {}}
          Statement:
            RateBasedStatement:
              Limit: 20
              EvaluationWindowSec: 60
              AggregateKeyType: IP
              ScopeDownStatement:
                AndStatement:
                  Statements:
                    - ByteMatchStatement: {FieldToMatch: {UriPath: {}}, PositionalConstraint: CONTAINS, SearchString: /x, TextTransformations: [{Priority: 0, Type: URL_DECODE}, {Priority: 1, Type: LOWERCASE}]}
                    - NotStatement: {Statement: {IPSetReferenceStatement: {Arn: !GetAtt Office.Arn}}}
        - Name: Match
          Priority: 1
          Action: {Block: {}}
          Statement:
            AndStatement:
              Statements:
                - ByteMatchStatement: {FieldToMatch: {Method: {}}, PositionalConstraint: EXACTLY, SearchString: PUT, TextTransformations: [{Priority: 0, Type: NONE}]}
                - NotStatement: {Statement: {ByteMatchStatement: {FieldToMatch: {SingleHeader: {Name: authorization}}, PositionalConstraint: STARTS_WITH, SearchString: "bearer ", TextTransformations: [{Priority: 0, Type: LOWERCASE}]}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	edge, err := local.EdgeOf(tpl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := edge.Capacity(); got != 33+14 {
		t.Errorf("capacity %d WCUs, want 47", got)
	}
}

// TestTheTemplateEdgeFitsItsCapacity: the template's web ACL takes no more web ACL
// capacity units than AWS WAF's base price includes.
func TestTheTemplateEdgeFitsItsCapacity(t *testing.T) {
	edge, err := local.TemplateEdge(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := edge.Capacity(); got > local.EdgeCapacity {
		t.Errorf("the template's web ACL costs %d WCUs, over the %d its price includes", got, local.EdgeCapacity)
	} else {
		t.Logf("the template's web ACL costs %d WCUs at most, of %d", got, local.EdgeCapacity)
	}
}
