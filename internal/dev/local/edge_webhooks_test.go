package local_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// dummyBearer is what passes the edge's bearer rule without being anyone's token.
const dummyBearer = "Bearer junk"

// webhookSpellings are the ways of writing a webhook's path (/a/b) that API Gateway
// might still route to it, or that a layer before it might turn into it: with a
// trailing or doubled slash, in another case, percent-encoded (a letter, the slash,
// in either case of hex), with an empty or a dot segment, with a path parameter.
// The local gateway itself routes the first four; what AWS routes of the rest its
// documentation does not say, so the edge must refuse them all without a signature.
func webhookSpellings(path string) []string {
	a, b, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	enc := func(s string) string { return fmt.Sprintf("%%%02X", s[0]) + s[1:] }
	return []string{
		"/" + a + "/" + b + "/",
		"//" + a + "/" + b,
		"/" + a + "/" + b + "//",
		"//" + a + "/" + b + "/",
		"/" + strings.ToUpper(a[:1]) + a[1:] + "/" + b,
		"/" + strings.ToUpper(a) + "/" + strings.ToUpper(b) + "/",
		"/" + enc(a) + "/" + b,
		"/" + a + "/" + strings.ToLower(enc(b)),
		"/" + a + "%2F" + b,
		"/" + a + "%2f" + b,
		"/%2F" + a + "/" + b,
		"/" + enc(strings.ToUpper(a)) + "/" + b,
		"/" + a + "//" + b,
		"/" + a + "/./" + b,
		"/./" + a + "/" + b,
		"/x/../" + a + "/" + b,
		"/" + a + "/x/../" + b,
		"/" + a + "/%2e/" + b,
		"/" + a + "/%2E%2E/" + a + "/" + b,
		"/" + a + "/" + b + "/.",
		"/" + a + "/" + b + ";x",
	}
}

// TestTheTemplateEdgeRefusesEveryWebhookSpellingWithoutItsSignature reads
// template.yaml's web ACL as make run does and sends each webhook, spelled every way
// webhookSpellings knows, without its provider's signature: with no header, with a
// dummy bearer token (which passes the bearer rule), and with a dummy bearer and the
// other provider's signature; from any address and from the provider's own
// (ProviderSourceCidrs). The edge refuses each 401 itself, so that none reaches the
// command function. With its signature header, each spelling is either refused
// whatever it carries (an empty or a dot segment) or counted by the webhooks'
// per-address rule, which reads the path as the signature rule does. A webhook
// carrying its signature, spelled as routed, goes on to the API from either
// address; and a bike named "webhooks" is still a bike to a renter and an operator.
func TestTheTemplateEdgeRefusesEveryWebhookSpellingWithoutItsSignature(t *testing.T) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		t.Fatal(err)
	}
	edge, err := local.EdgeWith(tpl, map[string]string{"ProviderSourceCidrs": "192.0.2.0/28"}, newClock().Now)
	if err != nil {
		t.Fatal(err)
	}
	// Any address, and the provider's own, which no per-address limit counts.
	addresses := []string{"198.51.100.7", "192.0.2.5"}
	other := map[string]string{"/webhooks/payments": signatureHeaders["/webhooks/stripe"], "/webhooks/stripe": signatureHeaders["/webhooks/payments"]}
	var passed []string
	for path := range signatureHeaders {
		for _, spelled := range webhookSpellings(path) {
			for name, headers := range map[string][]string{
				"no credential":  nil,
				"a dummy bearer": {"Authorization", dummyBearer},
				"a dummy bearer and the other's signature": {"Authorization", dummyBearer, other[path], "t=1,v1=00"},
			} {
				for _, method := range []string{"POST", "post"} {
					for _, from := range addresses {
						req := requestFor(t, method, spelled)
						req.RemoteAddr = from + ":40000"
						for i := 0; i+1 < len(headers); i += 2 {
							req.Header.Set(headers[i], headers[i+1])
						}
						if v := edge.Check(req); !v.Blocked() || v.Status != http.StatusUnauthorized {
							passed = append(passed, method+" "+spelled+" from "+from+" with "+name)
							t.Errorf("%s %s (for %s) from %s with %s: %+v, want refused 401 at the edge", method, spelled, path, from, name, v)
						}
					}
				}
			}
		}
	}
	if len(passed) > 0 {
		t.Logf("%d passed the edge without a signature:\n%s", len(passed), strings.Join(passed, "\n"))
	}
	// With its signature header (forged, as far as the edge can tell), a spelling
	// either is refused whatever it carries (an empty or a dot segment) or counts
	// under the webhooks' per-address limit: the two rules read the path alike.
	for path, header := range signatureHeaders {
		for _, spelled := range webhookSpellings(path) {
			req := requestFor(t, "POST", spelled)
			req.RemoteAddr = addresses[0] + ":40000"
			req.Header.Set("Authorization", dummyBearer)
			req.Header.Set(header, "t=1,v1=00")
			a := edge.Allowance(req)
			decoded, err := url.PathUnescape(spelled)
			if err != nil {
				t.Fatal(err)
			}
			emptyOrDot := strings.Contains(decoded, "//") || strings.Contains(decoded, "/.")
			switch {
			case emptyOrDot && !(a.Refused && a.Rule == "WebhookSignatureRequired"):
				t.Errorf("POST %s with a signature header: %+v, want refused by WebhookSignatureRequired whatever it carries", spelled, a)
			case !emptyOrDot && a.Rule != "WebhooksPerSource":
				t.Errorf("POST %s with a signature header: %+v, want counted by WebhooksPerSource", spelled, a)
			}
		}
	}
	for path, header := range signatureHeaders {
		for _, from := range addresses {
			for _, query := range []string{"", "attempt=2"} {
				req := requestFor(t, "POST", path)
				req.URL.RawQuery = query
				req.RemoteAddr = from + ":40000"
				req.Header.Set(header, "t=1,v1=00")
				if v := edge.Check(req); v.Blocked() {
					t.Errorf("POST %s?%s from %s with its signature: refused by %s", path, query, from, v.Rule)
				}
			}
		}
	}
	for _, c := range []struct{ method, path, auth string }{{"GET", "/bikes/webhooks", ""}, {"PUT", "/bikes/webhooks", dummyBearer}, {"POST", "/bikes/webhooks/return", dummyBearer}} {
		req := requestFor(t, c.method, c.path)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if v := edge.Check(req); v.Blocked() {
			t.Errorf("%s %s, a bike named webhooks: refused by %s", c.method, c.path, v.Rule)
		}
	}
}

// TestAWebhookSpelledOtherwiseWithADummyBearerIsRefusedAtTheEdge runs the local
// stack as make run does (the template's edge and throttling in front of the
// command function) and posts to the generic webhook, spelled every way
// webhookSpellings knows, with a dummy bearer token and no signature, as a client
// would. Each is answered by the edge, as CloudFront and AWS WAF answer:
// 401 {"message":"Unauthorized"} as application/json, without the request id every
// answer of the function carries. A signed webhook at the route's path reaches the
// function, which checks its signature (404: no such payment).
func TestAWebhookSpelledOtherwiseWithADummyBearerIsRefusedAtTheEdge(t *testing.T) {
	base := floodStack(t, true)
	client := clientFrom("127.0.0.1")
	const hook = `{"id":"evt-spelled","type":"payment.failed","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA","reason":"card declined"}`
	post := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+path, strings.NewReader(hook))
		if err != nil {
			t.Fatal(err)
		}
		if got := req.URL.EscapedPath(); got != path {
			t.Fatalf("the request's path is %q, want %q", got, path)
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	var reached []string
	for _, spelled := range webhookSpellings("/webhooks/payments") {
		resp, body := post(spelled, "Authorization", dummyBearer)
		fromEdge := resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("Content-Type") == "application/json" &&
			body == `{"message":"Unauthorized"}` && resp.Header.Get("X-Request-Id") == ""
		if !fromEdge {
			reached = append(reached, fmt.Sprintf("%s: %d %s (X-Request-Id %q)", spelled, resp.StatusCode, body, resp.Header.Get("X-Request-Id")))
		}
	}
	if len(reached) > 0 {
		t.Errorf("%d spellings of POST /webhooks/payments with %q and no signature went past the edge:\n%s", len(reached), dummyBearer, strings.Join(reached, "\n"))
	}
	resp, body := post("/webhooks/payments", webhook.Header, webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(hook), time.Now()))
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("a signed webhook: %d %s (X-Request-Id %q), want the function's 404 for no such payment", resp.StatusCode, body, resp.Header.Get("X-Request-Id"))
	}
}
