package local_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// TestTheEdgeRefusesToPlayWhatItDoesNot: a web ACL the local edge would play wrong
// stops the runner instead.
func TestTheEdgeRefusesToPlayWhatItDoesNot(t *testing.T) {
	match := func(statement string) string {
		return `        - Name: R
          Priority: 0
          Action: {Block: {}}
          Statement: ` + statement + "\n"
	}
	for name, tc := range map[string]struct{ def, rules string }{
		"a default that blocks":     {"{Block: {}}", rateRule},
		"a statement it lacks":      {"{Allow: {}}", match(`{RegexMatchStatement: {RegexString: "^/x", FieldToMatch: {UriPath: {}}, TextTransformations: [{Priority: 0, Type: NONE}]}}`)},
		"a count action":            {"{Allow: {}}", strings.Replace(rateRule, "Action: {Block: {CustomResponse:", "Action: {Count: {CustomResponse:", 1)},
		"a window AWS has not":      {"{Allow: {}}", strings.Replace(rateRule, "EvaluationWindowSec: 60", "EvaluationWindowSec: 30", 1)},
		"a rate keyed on a header":  {"{Allow: {}}", strings.Replace(rateRule, "AggregateKeyType: IP", "AggregateKeyType: FORWARDED_IP", 1)},
		"a scoped-down rate":        {"{Allow: {}}", strings.Replace(rateRule, "AggregateKeyType: IP}", "AggregateKeyType: IP, ScopeDownStatement: {}}", 1)},
		"an And of one":             {"{Allow: {}}", match(`{AndStatement: {Statements: [{ByteMatchStatement: {FieldToMatch: {Method: {}}, PositionalConstraint: EXACTLY, SearchString: PUT, TextTransformations: [{Priority: 0, Type: NONE}]}}]}}`)},
		"a transformation it lacks": {"{Allow: {}}", match(`{ByteMatchStatement: {FieldToMatch: {Method: {}}, PositionalConstraint: EXACTLY, SearchString: PUT, TextTransformations: [{Priority: 0, Type: URL_DECODE}]}}`)},
		"a missing body":            {"{Allow: {}}", strings.Replace(rateRule, "CustomResponseBodyKey: Slow", "CustomResponseBodyKey: Fast", 1)},
		"two rules of one priority": {"{Allow: {}}", rateRule + strings.Replace(rateRule, "PerSourceRate", "Again", 1)},
	} {
		if _, err := local.EdgeOf(edgeTemplate(t, tc.def, tc.rules), nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
