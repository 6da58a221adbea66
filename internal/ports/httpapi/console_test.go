package httpapi_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

const wantCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// TestTheConsoleIsServedWithAStrictPolicy fetches the console's page, files and
// configuration, and files it does not have: every answer carries the strict
// Content-Security-Policy and nosniff, each file its own media type, and no name
// reaches outside the console's files.
func TestTheConsoleIsServedWithAStrictPolicy(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	for path, typ := range map[string]string{
		"/console":            "text/html; charset=utf-8",
		"/console/":           "text/html; charset=utf-8",
		"/console/index.html": "text/html; charset=utf-8",
		"/console/app.js":     "text/javascript; charset=utf-8",
		"/console/style.css":  "text/css; charset=utf-8",
		"/console/icon.svg":   "image/svg+xml",
		"/console/rules.js":   "text/javascript; charset=utf-8",
		"/console/config":     "application/json",
	} {
		r := h.expect(http.MethodGet, path, "", anonymous, http.StatusOK)
		if r.headers["Content-Type"] != typ {
			t.Errorf("%s: Content-Type %q, want %q", path, r.headers["Content-Type"], typ)
		}
		checkConsoleHeaders(t, path, r)
	}
	for _, path := range []string{"/console/nope.js", "/console/..%2fapi.go", "/console/%2e%2e", "/console/api.go", "/console/.hidden.js", "/console/app.js%00.html"} {
		r := h.do(http.MethodGet, path, "", anonymous)
		if r.status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404: %s", path, r.status, r.raw)
		}
		if strings.Contains(r.raw, "package httpapi") {
			t.Errorf("%s: answered Go source", path)
		}
		checkConsoleHeaders(t, path, r)
	}
	// Markup in a name asked for comes back as JSON text, not markup.
	if r := h.do(http.MethodGet, "/console/%3Cimg%20src=x%3E.js", "", anonymous); strings.Contains(r.raw, "<img") {
		t.Errorf("the 404 echoes markup: %s", r.raw)
	}
}

// TestTheConsoleRulesAreWrittenFromTheirDeclarations reads the console's rules.js:
// the id pattern it holds, compiled as a browser compiles a pattern attribute (the
// whole value), accepts exactly the ids ident.Valid does, and each list of
// statuses is what rentalview.Status (and payment.RefundStatus.ForHands) says of
// every status.
func TestTheConsoleRulesAreWrittenFromTheirDeclarations(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	r := h.expect(http.MethodGet, "/console/rules.js", "", anonymous, http.StatusOK)
	consts := map[string]json.RawMessage{}
	for _, m := range regexp.MustCompile(`(?m)^export const ([A-Z_]+) = Object\.freeze\((.*)\);$`).FindAllStringSubmatch(r.raw, -1) {
		consts[m[1]] = json.RawMessage(m[2])
	}
	var pattern string
	if err := json.Unmarshal(consts["ID_PATTERN"], &pattern); err != nil {
		t.Fatalf("ID_PATTERN: %v in %s", err, r.raw)
	}
	if strings.Contains(strings.ReplaceAll(pattern, `\-`, ""), "-]") {
		t.Errorf("ID_PATTERN %q has a class with an unescaped hyphen, which the v flag refuses", pattern)
	}
	re := regexp.MustCompile(`^(?:` + pattern + `)$`)
	for _, id := range []string{"b1", "b1_abc-DEF", strings.Repeat("x", ident.MaxLength), "", " b1", "b1/x", "a b", "<img>", strings.Repeat("x", ident.MaxLength+1), "é", "b1\n"} {
		if re.MatchString(id) != ident.Valid(id) {
			t.Errorf("ID_PATTERN %q on %q: %v, ident.Valid: %v", pattern, id, re.MatchString(id), ident.Valid(id))
		}
	}
	for name, holds := range map[string]func(rentalview.Status) bool{
		"BIKE_OUT": rentalview.Status.BikeOut, "PAYMENT_OPEN": rentalview.Status.PaymentOpen, "MOVING": rentalview.Status.Moving,
	} {
		var got []rentalview.Status
		if err := json.Unmarshal(consts[name], &got); err != nil {
			t.Fatalf("%s: %v in %s", name, err, r.raw)
		}
		want := slices.DeleteFunc(rentalview.Statuses(), func(s rentalview.Status) bool { return !holds(s) })
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	var forHands []payment.RefundStatus
	if err := json.Unmarshal(consts["REFUND_FOR_HANDS"], &forHands); err != nil {
		t.Fatalf("REFUND_FOR_HANDS: %v in %s", err, r.raw)
	}
	want := slices.DeleteFunc(payment.RefundStatuses(), func(s payment.RefundStatus) bool { return !s.ForHands() })
	if !slices.Equal(forHands, want) || len(forHands) == 0 {
		t.Errorf("REFUND_FOR_HANDS = %v, want %v", forHands, want)
	}
	for name, want := range map[string]int{"ID_MAX_LENGTH": ident.MaxLength, "MAX_AMOUNT": payment.MaxAmount,
		"OPERATOR_REFERENCE_MAX_LENGTH": payment.MaxOperatorReferenceLength} {
		if got := string(consts[name]); got != strconv.Itoa(want) {
			t.Errorf("%s = %s, want %d", name, got, want)
		}
	}
}

func checkConsoleHeaders(t *testing.T, path string, r reply) {
	t.Helper()
	if got := r.headers["Content-Security-Policy"]; got != wantCSP {
		t.Errorf("%s: Content-Security-Policy %q, want %q", path, got, wantCSP)
	}
	if r.headers["X-Content-Type-Options"] != "nosniff" || r.headers["X-Frame-Options"] != "DENY" || r.headers["Referrer-Policy"] != "no-referrer" {
		t.Errorf("%s: headers %v", path, r.headers)
	}
}

// TestTheConsoleConfigurationNamesOnlyWhereToSignIn reads GET /console/config in
// each sign-in mode: nothing but the provider's public names, and the policy lets
// the page reach that provider and nothing else.
func TestTheConsoleConfigurationNamesOnlyWhereToSignIn(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	for _, c := range []struct {
		signIn  httpapi.ConsoleSignIn
		want    map[string]any
		connect string
	}{
		{httpapi.ConsoleSignIn{}, map[string]any{"signIn": "none", "scope": "openid bikerental/operator"}, "connect-src 'self';"},
		{httpapi.ConsoleSignIn{Mode: "local"}, map[string]any{"signIn": "local", "scope": "openid bikerental/operator"}, "connect-src 'self';"},
		{httpapi.ConsoleSignIn{Mode: "oidc", Issuer: "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc", ClientID: "client1",
			AuthURL: "https://pool.auth.eu-west-1.amazoncognito.com"},
			map[string]any{"signIn": "oidc", "scope": "openid bikerental/operator", "issuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
				"clientId": "client1", "authorizationEndpoint": "https://pool.auth.eu-west-1.amazoncognito.com/oauth2/authorize",
				"tokenEndpoint": "https://pool.auth.eu-west-1.amazoncognito.com/oauth2/token", "logoutEndpoint": "https://pool.auth.eu-west-1.amazoncognito.com/logout"},
			"connect-src 'self' https://cognito-idp.eu-west-1.amazonaws.com https://pool.auth.eu-west-1.amazoncognito.com;"},
		{httpapi.ConsoleSignIn{Mode: "oidc", Issuer: "https://login.example.com/tenant", ClientID: "console"},
			map[string]any{"signIn": "oidc", "scope": "openid bikerental/operator", "issuer": "https://login.example.com/tenant", "clientId": "console"},
			"connect-src 'self' https://login.example.com;"},
	} {
		if err := c.signIn.Check(); err != nil {
			t.Fatalf("%+v: %v", c.signIn, err)
		}
		h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Console: c.signIn})
		r := h.expect(http.MethodGet, "/console/config", "", anonymous, http.StatusOK)
		if len(r.body) != len(c.want) {
			t.Errorf("%s: %s, want %v", c.signIn.Mode, r.raw, c.want)
		}
		for k, v := range c.want {
			if r.body[k] != v {
				t.Errorf("%s: %s = %v, want %v", c.signIn.Mode, k, r.body[k], v)
			}
		}
		if csp := r.headers["Content-Security-Policy"]; !strings.Contains(csp, c.connect) || !strings.HasPrefix(csp, "default-src 'self'; script-src 'self';") {
			t.Errorf("%s: policy %q, want %q", c.signIn.Mode, csp, c.connect)
		}
		if r.headers["Cache-Control"] != "no-store" {
			t.Errorf("config Cache-Control %q", r.headers["Cache-Control"])
		}
	}
}

// TestABadConsoleSignInIsRefused: a setting that could not work, or that would
// widen the page's policy with more than an origin, is refused.
func TestABadConsoleSignInIsRefused(t *testing.T) {
	for _, s := range []httpapi.ConsoleSignIn{
		{Mode: "cognito"},
		{Mode: "oidc"},
		{Mode: "oidc", Issuer: "https://issuer.example.com"},
		{Mode: "oidc", Issuer: "http://issuer.example.com", ClientID: "c"},
		{Mode: "oidc", Issuer: "https://issuer.example.com; script-src *", ClientID: "c"},
		{Mode: "oidc", Issuer: "https://issuer.example.com 'unsafe-inline'", ClientID: "c"},
		{Mode: "oidc", Issuer: "https://user:pw@issuer.example.com", ClientID: "c"},
		{Mode: "oidc", Issuer: "https://issuer.example.com", ClientID: "c<script>"},
		{Mode: "oidc", Issuer: "https://issuer.example.com", ClientID: "c", AuthURL: "javascript:alert(1)"},
	} {
		if err := s.Check(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// TestConsoleTokensNeedTheOperatorsGroup: with the stack's own pool, a token the
// console's app client issued opens the operator routes only for a member of the
// operators' group, even though it carries the operator scope; the operator
// client's tokens need no group.
func TestConsoleTokensNeedTheOperatorsGroup(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Deadlines: newToDo(t, 1).listing(),
		ConsoleClientID: "console-client", OperatorGroup: "operators"})
	call := func(claims map[string]string) int {
		req := events.APIGatewayV2HTTPRequest{RawPath: "/deadlines", RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "g",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: claims, Scopes: []string{httpapi.DefaultOperatorScope}}}}}
		resp, _ := h.api.Handle(context.Background(), req)
		return resp.StatusCode
	}
	scope := "openid " + httpapi.DefaultOperatorScope
	for _, c := range []struct {
		name   string
		claims map[string]string
		want   int
	}{
		{"a renter through the console", map[string]string{"sub": "u1", "client_id": "console-client", "scope": scope}, http.StatusForbidden},
		{"a renter in other groups", map[string]string{"sub": "u1", "client_id": "console-client", "scope": scope, "cognito:groups": "[riders operators-to-be]"}, http.StatusForbidden},
		{"an operator through the console", map[string]string{"sub": "u2", "client_id": "console-client", "scope": scope, "cognito:groups": "[riders operators]"}, http.StatusOK},
		{"the operator client", map[string]string{"sub": "op-client", "client_id": "op-client", "scope": httpapi.DefaultOperatorScope}, http.StatusOK},
	} {
		if got := call(c.claims); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestTheConsoleNeverTurnsDataIntoMarkup holds the console's files to the rules
// that keep markup in data from becoming elements, and the token from leaking: no
// innerHTML or its kin, no eval, no storage, no inline script or handler, nothing
// from another origin.
func TestTheConsoleNeverTurnsDataIntoMarkup(t *testing.T) {
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|localStorage|sessionStorage|document\.cookie|setTimeout\(['"]|setInterval\(['"]`)
	inline := regexp.MustCompile(`(?i)<script(?:\s+type="module")?\s*>|\son[a-z]+\s*=|javascript:|https?://`)
	files := 0
	err := filepath.WalkDir("console", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		src := string(b)
		if m := forbidden.FindString(src); m != "" && strings.HasSuffix(path, ".js") {
			t.Errorf("%s uses %s", path, m)
		}
		if strings.HasSuffix(path, ".html") {
			if m := inline.FindString(src); m != "" {
				t.Errorf("%s has %q: inline script, a handler attribute or another origin", path, m)
			}
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Fatalf("read %d console files: %v", files, err)
	}
}
