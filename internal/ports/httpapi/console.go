package httpapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// The operator console: plain HTML, CSS and ES modules, embedded in the command
// function and served by the API itself under /console, publicly (the page holds no
// secret; what it shows comes from the operator routes, with the operator's token).
// Every answer carries a strict Content-Security-Policy: scripts and styles from the
// API's own origin only, no inline script, no frames, no plugins.

//go:embed console
var consoleFiles embed.FS

// ConsolePath is where the console is served; its assets are under ConsolePath + "/".
const ConsolePath = "/console"

// Console sign-in modes (ConsoleSignIn.Mode).
const (
	// ConsoleSignInNone: the console says it is not set up for sign-in.
	ConsoleSignInNone = ""
	// ConsoleSignInLocal: the local runner's own issuer, whose POST /local/tokens
	// mints tokens on the API's origin.
	ConsoleSignInLocal = "local"
	// ConsoleSignInOIDC: an OpenID Connect provider (the stack's Cognito user pool
	// through its hosted UI, or JwtIssuer's), by the authorization code grant with
	// PKCE, for a public client (no secret).
	ConsoleSignInOIDC = "oidc"
)

// ConsoleSignIn says how the console signs operators in. None of it is secret: it
// is served to anyone at GET /console/config.
type ConsoleSignIn struct {
	Mode string
	// Issuer is the OpenID provider's issuer URL; ClientID the console's app client.
	Issuer   string
	ClientID string
	// AuthURL, when set, is the base URL of the provider's hosted UI (Cognito's
	// https://<domain>.auth.<region>.amazoncognito.com), whose /oauth2/authorize,
	// /oauth2/token and /logout the console uses; without it, the console reads the
	// endpoints from the issuer's OpenID discovery document.
	AuthURL string
}

// Check refuses a sign-in that cannot work: an unknown mode, or OIDC without an
// https issuer and a client id.
func (s ConsoleSignIn) Check() error {
	switch s.Mode {
	case ConsoleSignInNone, ConsoleSignInLocal:
		return nil
	case ConsoleSignInOIDC:
	default:
		return fmt.Errorf("console sign-in %q: want %q, %q or none", s.Mode, ConsoleSignInLocal, ConsoleSignInOIDC)
	}
	if _, err := httpsOrigin(s.Issuer); err != nil {
		return fmt.Errorf("console issuer: %w", err)
	}
	if s.ClientID == "" || strings.ContainsAny(s.ClientID, " \"<>\\") {
		return fmt.Errorf("console client id %q: want a client id", s.ClientID)
	}
	if s.AuthURL != "" {
		if _, err := httpsOrigin(s.AuthURL); err != nil {
			return fmt.Errorf("console hosted UI: %w", err)
		}
	}
	return nil
}

// httpsOrigin returns the origin (scheme://host[:port]) of an https URL with no
// query, fragment or credentials.
func httpsOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(raw, " ;,'\"") {
		return "", fmt.Errorf("%q: want an https URL without query, fragment or credentials", raw)
	}
	return "https://" + u.Host, nil
}

// ConsoleConfig is the answer to GET /console/config: where the console signs in.
type ConsoleConfig struct {
	// SignIn is "local", "oidc" or "none".
	SignIn string `json:"signIn"`
	// Scope is what the console asks the provider for, "openid" and the operator
	// scope; the operator routes need the latter.
	Scope                 string `json:"scope"`
	Issuer                string `json:"issuer,omitempty"`
	ClientID              string `json:"clientId,omitempty"`
	AuthorizationEndpoint string `json:"authorizationEndpoint,omitempty"`
	TokenEndpoint         string `json:"tokenEndpoint,omitempty"`
	LogoutEndpoint        string `json:"logoutEndpoint,omitempty"`
}

func (a *API) consoleConfig(_ *request) response {
	s := a.cfg.Console
	out := ConsoleConfig{SignIn: s.Mode, Scope: "openid " + a.cfg.OperatorScope}
	if out.SignIn == ConsoleSignInNone {
		out.SignIn = "none"
	}
	if s.Mode == ConsoleSignInOIDC {
		out.Issuer, out.ClientID = s.Issuer, s.ClientID
		if base := strings.TrimSuffix(s.AuthURL, "/"); base != "" {
			out.AuthorizationEndpoint, out.TokenEndpoint, out.LogoutEndpoint = base+"/oauth2/authorize", base+"/oauth2/token", base+"/logout"
		}
	}
	resp := jsonResponse(http.StatusOK, out)
	a.consoleHeaders(resp.headers)
	resp.headers["Cache-Control"] = "no-store"
	return resp
}

// consoleIndex answers GET /console: the page.
func (a *API) consoleIndex(_ *request) response { return a.consoleFile("index.html") }

// consoleAsset answers GET /console/{asset}: one of the page's files, by name.
func (a *API) consoleAsset(r *request) response {
	name := r.param("asset")
	if name == "" || name == "index.html" {
		return a.consoleFile("index.html")
	}
	return a.consoleFile(name)
}

// consoleTypes are the media types of the console's files, by extension: a file of
// another kind is not served.
var consoleTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

func (a *API) consoleFile(name string) response {
	typ, ok := consoleTypes[path.Ext(name)]
	var body []byte
	var err error
	switch {
	case name == ConsoleRulesFile:
		body = consoleRules
	case ok && !strings.ContainsAny(name, "/\\") && !strings.HasPrefix(name, "."):
		body, err = consoleFiles.ReadFile("console/" + name)
	}
	if !ok || body == nil || err != nil {
		resp := blank(http.StatusNotFound, "the console has no file "+strconvQuote(name))
		a.consoleHeaders(resp.headers)
		return resp
	}
	resp := response{status: http.StatusOK, headers: map[string]string{"Content-Type": typ, "Cache-Control": "no-cache"}, body: body}
	a.consoleHeaders(resp.headers)
	return resp
}

// ConsoleRulesFile is the console's module of the service's own rules (consoleRules).
const ConsoleRulesFile = "rules.js"

// consoleRules is the ES module rules.js, written from the declarations the
// console must obey so that it never keeps a copy of them: the form of an id, as
// an input's pattern (browsers compile patterns with the v flag, under which a
// class's literal hyphen must be escaped), and which rental statuses let the
// operator record a return, cancel the payment, or wait for the rental to move
// on its own (rentalview.Status), and at which refund statuses an operator may
// record a refund made by hand (payment.RefundStatus.ForHands), with the limits
// of its amount and reference.
var consoleRules = func() []byte {
	var bikeOut, paymentOpen, moving, refundForHands []string
	for _, s := range rentalview.Statuses() {
		if s.BikeOut() {
			bikeOut = append(bikeOut, string(s))
		}
		if s.PaymentOpen() {
			paymentOpen = append(paymentOpen, string(s))
		}
		if s.Moving() {
			moving = append(moving, string(s))
		}
	}
	for _, r := range payment.RefundStatuses() {
		if r.ForHands() {
			refundForHands = append(refundForHands, string(r))
		}
	}
	var b strings.Builder
	b.WriteString("// The service's own rules, written by the API from their declarations.\n\n")
	for _, c := range []struct {
		name, doc string
		value     any
	}{
		{"ID_PATTERN", "what an id (a bike's, a rental's, a subject's) must match, as an input's pattern", htmlPattern(ident.Pattern)},
		{"ID_MAX_LENGTH", "the longest id", ident.MaxLength},
		{"BIKE_OUT", "the statuses of a rental whose renter has the bike: a return can be recorded", bikeOut},
		{"PAYMENT_OPEN", "the statuses of a rental whose payment can still be cancelled", paymentOpen},
		{"MOVING", "the statuses of a rental that moves on without anyone acting", moving},
		{"MAX_AMOUNT", "the largest amount, in minor units", payment.MaxAmount},
		{"CURRENCY_DECIMALS", "the decimals of the currencies whose amounts do not have two, as payment providers take them (payment.Decimals)", payment.NonDecimal()},
		{"OPERATOR_REFERENCE_MAX_LENGTH", "the longest reference an operator records with a refund made by hand, in characters", payment.MaxOperatorReferenceLength},
		{"REFUND_FOR_HANDS", "the refund statuses of a payment whose refund an operator may record as made by hand", refundForHands},
	} {
		v, _ := json.Marshal(c.value)
		fmt.Fprintf(&b, "// %s is %s.\nexport const %s = Object.freeze(%s);\n", c.name, c.doc, c.name, v)
	}
	return []byte(b.String())
}()

// htmlPattern returns a regular expression of the service's (a class with a
// literal hyphen last, as ident.Pattern) as an HTML pattern attribute must be
// written: browsers compile it with the v flag, which refuses an unescaped hyphen
// in a class.
func htmlPattern(re string) string { return strings.ReplaceAll(re, "-]", `\-]`) }

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ConsoleCSP returns the Content-Security-Policy of every console answer for
// sign-in s: everything from the API's own origin only, and for an OpenID provider
// its origins for fetch (its discovery document and token endpoint) and nothing
// else of it.
func ConsoleCSP(s ConsoleSignIn) string {
	connect := []string{"'self'"}
	if s.Mode == ConsoleSignInOIDC {
		for _, u := range []string{s.Issuer, s.AuthURL} {
			if o, err := httpsOrigin(u); err == nil && !slices.Contains(connect, o) {
				connect = append(connect, o)
			}
		}
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src " + strings.Join(connect, " ") +
		"; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

func (a *API) consoleHeaders(h map[string]string) {
	h["Content-Security-Policy"] = a.csp
	h["X-Content-Type-Options"] = "nosniff"
	h["Referrer-Policy"] = "no-referrer"
	h["X-Frame-Options"] = "DENY"
}
