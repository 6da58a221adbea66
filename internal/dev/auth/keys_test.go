package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
)

// switchboard serves the handler it is given, counting discovery and JWKS requests.
type switchboard struct {
	mu        sync.Mutex
	h         http.Handler
	discovery int
	jwks      int
}

func (s *switchboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	switch r.URL.Path {
	case DiscoveryPath:
		s.discovery++
	case JWKSPath:
		s.jwks++
	}
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

func (s *switchboard) set(h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h = h
}

func (s *switchboard) counts() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discovery, s.jwks
}

// TestKeyCache walks one Authorizer through key rotation and issuer trouble on a
// clock the test moves, counting the fetches the issuer sees.
func TestKeyCache(t *testing.T) {
	board := &switchboard{}
	srv := httptest.NewUnstartedServer(board)
	url := "http://" + srv.Listener.Addr().String()
	now := testNow
	clock := func() time.Time { return now }
	newIssuer := func() *Issuer {
		iss, err := NewIssuer(url, testAudience)
		if err != nil {
			t.Fatal(err)
		}
		iss.Now = clock
		return iss
	}
	first, second := newIssuer(), newIssuer()
	board.set(first)
	srv.Start()
	t.Cleanup(srv.Close)

	a, err := NewAuthorizer(AuthorizerConfig{Issuer: url, Audiences: []string{testAudience}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	down := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	mintBy := func(iss *Issuer) func(t *testing.T) string {
		return func(t *testing.T) string {
			tok, err := iss.Mint("alice", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
	}
	unknownKid := func(t *testing.T) string {
		return sign(t, jwa.RS256(), rawKey(t, first), baseClaims(first), map[string]any{"kid": "no-such-key"})
	}

	steps := []struct {
		name          string
		advance       time.Duration // moves the clock first
		serve         http.Handler  // switches what the issuer's URL serves first, if not nil
		refresh       bool          // calls Refresh instead of Authorize
		token         func(t *testing.T) string
		wantErr       string
		wantFetch     int // JWKS fetches so far
		wantDiscovery int // discovery document fetches so far
	}{
		{name: "first use discovers and fetches", token: mintBy(first), wantFetch: 1, wantDiscovery: 1},
		{name: "a known kid is served from the cache", token: mintBy(first), wantFetch: 1, wantDiscovery: 1},
		{name: "an unknown kid right after a fetch does not refetch", token: unknownKid, wantErr: "auth: unauthorized: unknown key id", wantFetch: 1, wantDiscovery: 1},
		{name: "an unknown kid a refresh interval later refetches", advance: DefaultMinRefreshInterval, token: unknownKid, wantErr: "auth: unauthorized: unknown key id", wantFetch: 2, wantDiscovery: 2},
		{name: "a second unknown kid at once does not", token: unknownKid, wantErr: "auth: unauthorized: unknown key id", wantFetch: 2, wantDiscovery: 2},
		{name: "a rotated key is unknown within the interval", advance: DefaultMinRefreshInterval / 2, serve: second, token: mintBy(second), wantErr: "auth: unauthorized: unknown key id", wantFetch: 2, wantDiscovery: 2},
		{name: "and known once the interval is over", advance: DefaultMinRefreshInterval / 2, token: mintBy(second), wantFetch: 3, wantDiscovery: 3},
		{name: "the retired key is unknown", token: mintBy(first), wantErr: "auth: unauthorized: unknown key id", wantFetch: 3, wantDiscovery: 3},
		{name: "keys older than the maximum age are refetched", advance: DefaultMaxKeyAge, token: mintBy(second), wantFetch: 4, wantDiscovery: 4},
		{name: "a failed refetch keeps the keys held", advance: DefaultMaxKeyAge, serve: down, token: mintBy(second), wantFetch: 4, wantDiscovery: 5},
		{name: "the issuer back, the age refetch waits for the interval", serve: second, token: mintBy(second), wantFetch: 4, wantDiscovery: 5},
		{name: "and happens after it", advance: DefaultMinRefreshInterval, token: mintBy(second), wantFetch: 5, wantDiscovery: 6},
		{name: "Refresh fetches whatever the rate limit", refresh: true, wantFetch: 6, wantDiscovery: 7},
		{name: "Refresh reports a failure", serve: down, refresh: true, wantFetch: 6, wantDiscovery: 8,
			wantErr: "auth: refresh keys of " + url + ": discovery " + url + DiscoveryPath + ": status 503"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			now = now.Add(st.advance)
			if st.serve != nil {
				board.set(st.serve)
			}
			var err error
			if st.refresh {
				err = a.Refresh(context.Background())
			} else {
				_, err = a.Authorize(context.Background(), "Bearer "+st.token(t), nil)
			}
			if got := errText(err); got != st.wantErr {
				t.Errorf("got error %q, want %q", got, st.wantErr)
			}
			discovery, jwks := board.counts()
			if jwks != st.wantFetch || discovery != st.wantDiscovery {
				t.Errorf("got %d discoveries and %d JWKS fetches, want %d and %d", discovery, jwks, st.wantDiscovery, st.wantFetch)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestKeysUnavailable checks the refusals when the issuer does not give its keys.
func TestKeysUnavailable(t *testing.T) {
	iss, _ := startIssuer(t)
	token, err := iss.Mint("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		handler    func(url string) http.Handler
		wantPrefix string // of the error after "auth: unauthorized: signing keys unavailable: "
	}{
		{name: "no discovery document",
			handler:    func(string) http.Handler { return http.NotFoundHandler() },
			wantPrefix: "discovery {url}" + DiscoveryPath + ": status 404"},
		{name: "discovery document not JSON",
			handler:    func(string) http.Handler { return serveBody("<html>") },
			wantPrefix: "discovery {url}" + DiscoveryPath + ": invalid character '<'"},
		{name: "discovery document names another issuer",
			handler: func(string) http.Handler {
				return serveBody(`{"issuer":"https://other.example","jwks_uri":"https://other.example/jwks"}`)
			},
			wantPrefix: `discovery {url}` + DiscoveryPath + `: document names issuer "https://other.example", not "{url}"`},
		{name: "jwks_uri not http",
			handler: func(url string) http.Handler {
				return serveBody(`{"issuer":"` + url + `","jwks_uri":"file:///etc/passwd"}`)
			},
			wantPrefix: "discovery {url}" + DiscoveryPath + ": jwks_uri: not an absolute http(s) URL"},
		{name: "JWKS missing",
			handler: func(url string) http.Handler {
				mux := http.NewServeMux()
				mux.Handle(DiscoveryPath, serveBody(`{"issuer":"`+url+`","jwks_uri":"`+url+`/keys"}`))
				return mux
			},
			wantPrefix: "fetch JWKS {url}/keys: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(nil)
			url := "http://" + srv.Listener.Addr().String()
			srv.Config.Handler = tc.handler(url)
			srv.Start()
			defer srv.Close()
			a, err := NewAuthorizer(AuthorizerConfig{Issuer: url, Audiences: []string{testAudience}, Now: func() time.Time { return testNow }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Authorize(context.Background(), "Bearer "+token, nil)
			want := "auth: unauthorized: signing keys unavailable: " + strings.ReplaceAll(tc.wantPrefix, "{url}", url)
			if err == nil || !errors.Is(err, ErrUnauthorized) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got error %v, want one matching ErrUnauthorized starting %q", err, want)
			}
			assertNoToken(t, err.Error(), token)
		})
	}
}

func serveBody(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	})
}

func TestAuthorizeCanceled(t *testing.T) {
	iss, _ := startIssuer(t)
	token, err := iss.Mint("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAuthorizer(t, iss, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.Authorize(ctx, "Bearer "+token, nil)
	if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got error %v, want one matching ErrUnauthorized and context.Canceled", err)
	}
	// the canceled attempt is not held against the next caller
	if _, err := a.Authorize(context.Background(), "Bearer "+token, nil); err != nil {
		t.Fatalf("after a canceled fetch: %v", err)
	}
}

func TestNewAuthorizerRefuses(t *testing.T) {
	cases := []struct {
		name    string
		cfg     AuthorizerConfig
		wantErr string
	}{
		{name: "no issuer", cfg: AuthorizerConfig{Audiences: []string{"a"}},
			wantErr: `auth: issuer "": not an absolute http(s) URL`},
		{name: "relative issuer", cfg: AuthorizerConfig{Issuer: "/issuer", Audiences: []string{"a"}},
			wantErr: `auth: issuer "/issuer": not an absolute http(s) URL`},
		{name: "ftp issuer", cfg: AuthorizerConfig{Issuer: "ftp://example.com", Audiences: []string{"a"}},
			wantErr: `auth: issuer "ftp://example.com": not an absolute http(s) URL`},
		{name: "no audience", cfg: AuthorizerConfig{Issuer: "https://example.com"},
			wantErr: "auth: at least one audience is required, and none may be empty"},
		{name: "empty audience", cfg: AuthorizerConfig{Issuer: "https://example.com", Audiences: []string{"a", ""}},
			wantErr: "auth: at least one audience is required, and none may be empty"},
		{name: "negative leeway", cfg: AuthorizerConfig{Issuer: "https://example.com", Audiences: []string{"a"}, Leeway: -time.Second},
			wantErr: "auth: leeway, refresh interval and key age must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAuthorizer(tc.cfg)
			if got := errText(err); got != tc.wantErr || a != nil {
				t.Fatalf("got %v, error %q; want error %q", a, got, tc.wantErr)
			}
		})
	}
}

// TestConcurrentFirstUse checks that callers arriving together share one fetch.
func TestConcurrentFirstUse(t *testing.T) {
	board := &switchboard{}
	srv := httptest.NewUnstartedServer(board)
	url := "http://" + srv.Listener.Addr().String()
	iss, err := NewIssuer(url, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	iss.Now = func() time.Time { return testNow }
	board.set(iss)
	srv.Start()
	t.Cleanup(srv.Close)
	a := newTestAuthorizer(t, iss, nil)
	token, err := iss.Mint("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	const callers = 16
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			_, err := a.Authorize(context.Background(), "Bearer "+token, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if discovery, jwks := board.counts(); discovery != 1 || jwks != 1 {
		t.Fatalf("got %d discoveries and %d JWKS fetches, want 1 and 1", discovery, jwks)
	}
}
