package auth

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// testNow is the fixed clock of the tests.
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	testAudience = "bikerental"
	testOperator = "bikerental/operator"
)

// startIssuer runs an Issuer's handlers (discovery, JWKS, tokens) on a real
// loopback server whose URL is the Issuer's.
func startIssuer(t *testing.T) (*Issuer, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	iss, err := NewIssuer("http://"+srv.Listener.Addr().String(), testAudience)
	if err != nil {
		t.Fatal(err)
	}
	iss.Now = func() time.Time { return testNow }
	srv.Config.Handler = iss.Handler(testOperator)
	srv.Start()
	t.Cleanup(srv.Close)
	if srv.URL != iss.URL() {
		t.Fatalf("server at %s, issuer %s", srv.URL, iss.URL())
	}
	return iss, srv
}

// newTestAuthorizer returns an Authorizer of iss's tokens with the fixed clock,
// after applying edit to its config.
func newTestAuthorizer(t *testing.T, iss *Issuer, edit func(*AuthorizerConfig)) *Authorizer {
	t.Helper()
	cfg := AuthorizerConfig{Issuer: iss.URL(), Audiences: []string{testAudience}, Now: func() time.Time { return testNow }}
	if edit != nil {
		edit(&cfg)
	}
	a, err := NewAuthorizer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rawKey returns the Issuer's RSA private key, to sign tokens Mint would not make.
func rawKey(t *testing.T, iss *Issuer) *rsa.PrivateKey {
	t.Helper()
	var k rsa.PrivateKey
	if err := jwk.Export(iss.private, &k); err != nil {
		t.Fatal(err)
	}
	return &k
}

// baseClaims are the claims of a valid renter token of iss at testNow.
func baseClaims(iss *Issuer) map[string]any {
	return map[string]any{
		"iss": iss.URL(),
		"sub": "alice",
		"aud": testAudience,
		"iat": testNow.Unix(),
		"nbf": testNow.Unix(),
		"exp": testNow.Add(time.Hour).Unix(),
		"jti": "jti-1",
	}
}

// with returns a copy of claims with set applied; a nil value removes the claim.
func with(claims map[string]any, set map[string]any) map[string]any {
	out := make(map[string]any, len(claims))
	for k, v := range claims {
		out[k] = v
	}
	for k, v := range set {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// sign signs the JSON of claims (or payload bytes as they are) with jwx under alg,
// with the protected headers hdr.
func sign(t *testing.T, alg jwa.SignatureAlgorithm, key any, claims any, hdr map[string]any) string {
	t.Helper()
	payload, ok := claims.([]byte)
	if !ok {
		var err error
		if payload, err = json.Marshal(claims); err != nil {
			t.Fatal(err)
		}
	}
	h := jws.NewHeaders()
	for k, v := range hdr {
		if err := h.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	out, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// unsignedToken builds a compact JWS by hand: the header and claims JSON encoded,
// and signature as given.
func unsignedToken(t *testing.T, hdr, claims any, signature string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(hdr) + "." + enc(claims) + "." + signature
}

// payloadOf decodes the claims of a compact token without checking it.
func payloadOf(t *testing.T, token string) map[string]any { return payloadOfPart(t, token, 1) }

// payloadOfPart decodes part i (0 the header, 1 the claims) of a compact token.
func payloadOfPart(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeClaims(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// get fetches url and returns the status, the Content-Type and the body.
func get(t *testing.T, method, url string, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// assertNoToken fails when text contains the token or any of its parts.
func assertNoToken(t *testing.T, text, token string) {
	t.Helper()
	if token == "" {
		return
	}
	if strings.Contains(text, token) {
		t.Fatalf("error %q contains the token", text)
	}
	for _, part := range strings.Split(token, ".") {
		if len(part) >= 8 && strings.Contains(text, part) {
			t.Fatalf("error %q contains part %q of the token", text, part)
		}
	}
}
