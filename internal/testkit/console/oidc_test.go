package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
)

// provider plays an OpenID provider's hosted UI as Cognito serves it
// (/oauth2/authorize, /oauth2/token, /logout) for one public client: it signs
// the user in at once, and gives a token for a code only with the verifier of
// the challenge the authorization asked with, once.
type provider struct {
	t        *testing.T
	clientID string
	console  string // the console's address: the only redirect it allows
	token    func() string

	mu         sync.Mutex
	challenges map[string]string // code → code challenge
	exchanged  int
	refused    []string
	logouts    int
}

func (p *provider) refuse(w http.ResponseWriter, why string) {
	p.mu.Lock()
	p.refused = append(p.refused, why)
	p.mu.Unlock()
	http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin, _ := url.Parse(p.console)
	switch r.URL.Path {
	case "/oauth2/authorize":
		q := r.URL.Query()
		switch {
		case q.Get("response_type") != "code", q.Get("client_id") != p.clientID, q.Get("redirect_uri") != p.console:
			p.refuse(w, "authorize: "+r.URL.RawQuery)
			return
		case q.Get("code_challenge_method") != "S256", len(q.Get("code_challenge")) != 43, q.Get("state") == "":
			p.refuse(w, "authorize without PKCE: "+r.URL.RawQuery)
			return
		case q.Get("scope") != "openid "+httpapi.DefaultOperatorScope:
			p.refuse(w, "authorize: scope "+q.Get("scope"))
			return
		}
		code := ident.Random(22)
		p.mu.Lock()
		p.challenges[code] = q.Get("code_challenge")
		p.mu.Unlock()
		http.Redirect(w, r, p.console+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	case "/oauth2/token":
		w.Header().Set("Access-Control-Allow-Origin", origin.Scheme+"://"+origin.Host)
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
			p.refuse(w, "token: not a form POST")
			return
		}
		f := r.PostForm
		p.mu.Lock()
		challenge, ok := p.challenges[f.Get("code")]
		delete(p.challenges, f.Get("code"))
		p.mu.Unlock()
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok:
			p.refuse(w, "token: unknown or used code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != challenge:
			p.refuse(w, "token: the verifier does not match the challenge")
			return
		case f.Get("grant_type") != "authorization_code", f.Get("client_id") != p.clientID, f.Get("redirect_uri") != p.console, f.Has("client_secret"):
			p.refuse(w, "token: "+f.Encode())
			return
		}
		p.mu.Lock()
		p.exchanged++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": p.token(), "token_type": "Bearer", "expires_in": 3600})
	case "/logout":
		if r.URL.Query().Get("client_id") != p.clientID || r.URL.Query().Get("logout_uri") != p.console {
			p.refuse(w, "logout: "+r.URL.RawQuery)
			return
		}
		p.mu.Lock()
		p.logouts++
		p.mu.Unlock()
		http.Redirect(w, r, p.console, http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

// TestTheConsoleSignsInByCodeWithPKCE signs in through an OpenID provider's hosted
// UI as on AWS: the authorization code grant with PKCE in a pop-up, the token kept
// in the page's memory only (not in its address, storage or cookies), the operator
// routes opened with it; then signs out at the provider.
func TestTheConsoleSignsInByCodeWithPKCE(t *testing.T) {
	ctx, _ := browser(t, chromedp.IgnoreCertErrors)
	p := &provider{t: t, clientID: "console-client", challenges: map[string]string{}}
	idp := httptest.NewTLSServer(p)
	t.Cleanup(idp.Close)
	s := startStack(t, map[string]string{
		commandfn.EnvConsoleSignIn: httpapi.ConsoleSignInOIDC, commandfn.EnvConsoleIssuer: idp.URL,
		commandfn.EnvConsoleClientID: p.clientID, commandfn.EnvConsoleAuthURL: idp.URL,
	})
	p.console = s.base + httpapi.ConsolePath
	var token string
	p.token = func() string { return token }
	var err error
	if token, err = s.tokens.Operator(context.Background(), "oidc-operator"); err != nil {
		t.Fatal(err)
	}

	run(t, ctx, "sign in", chromedp.Navigate(p.console), chromedp.WaitVisible(chromedp.CSS(`#sign-in`)), chromedp.Click(chromedp.CSS(`#sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)),
		waitFor(`document.getElementById('todo-status').textContent.includes('Nothing outstanding')`))
	p.mu.Lock()
	exchanged, refused := p.exchanged, p.refused
	p.mu.Unlock()
	if exchanged != 1 || len(refused) > 0 {
		t.Fatalf("the provider exchanged %d codes and refused %v", exchanged, refused)
	}
	if got := evaluate[string](t, ctx, `document.getElementById('signed-in-as').textContent`); got != "oidc-operator" {
		t.Errorf("signed in as %q", got)
	}
	kept := evaluate[string](t, ctx, `location.href + ' ' + document.cookie + ' ' + JSON.stringify(Object.assign({}, localStorage)) + JSON.stringify(Object.assign({}, sessionStorage)) + ' ' + document.body.innerHTML`)
	if strings.Contains(kept, token) || strings.Contains(kept, "code=") {
		t.Errorf("the token or the code is kept where it can leak: %s", kept)
	}
	if strings.Contains(kept, "?") {
		t.Errorf("the console's address has a query: %s", kept[:strings.Index(kept, " ")])
	}

	run(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`#sign-out`)), chromedp.WaitVisible(chromedp.CSS(`#sign-in`)))
	p.mu.Lock()
	logouts := p.logouts
	p.mu.Unlock()
	if logouts != 1 {
		t.Errorf("%d sign-outs at the provider, want 1 (%s)", logouts, fmt.Sprint(p.refused))
	}
}
