package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

func TestIssuerDocuments(t *testing.T) {
	iss, srv := startIssuer(t)
	cases := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantType   string
		wantBody   map[string]any // decoded JSON; nil: not checked here
	}{
		{name: "discovery document", method: http.MethodGet, path: DiscoveryPath, wantStatus: 200, wantType: "application/json",
			wantBody: map[string]any{
				"issuer":                                srv.URL,
				"jwks_uri":                              srv.URL + JWKSPath,
				"response_types_supported":              []any{"token"},
				"subject_types_supported":               []any{"public"},
				"id_token_signing_alg_values_supported": []any{"RS256"},
				"claims_supported":                      []any{"iss", "sub", "aud", "iat", "nbf", "exp", "jti", "scope"},
			}},
		{name: "JWKS", method: http.MethodGet, path: JWKSPath, wantStatus: 200, wantType: "application/json"},
		{name: "POST to the discovery document", method: http.MethodPost, path: DiscoveryPath, wantStatus: 405, wantType: "application/problem+json",
			wantBody: map[string]any{"type": "about:blank", "title": "Method Not Allowed", "status": 405.0, "detail": "only GET is allowed"}},
		{name: "unknown document", method: http.MethodGet, path: "/.well-known/other", wantStatus: 404, wantType: "application/problem+json",
			wantBody: map[string]any{"type": "about:blank", "title": "Not Found", "status": 404.0, "detail": "no such document"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, body := get(t, tc.method, srv.URL+tc.path, "")
			if status != tc.wantStatus || ctype != tc.wantType {
				t.Fatalf("got %d %s, want %d %s: %s", status, ctype, tc.wantStatus, tc.wantType, body)
			}
			if tc.wantBody == nil {
				return
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.wantBody) {
				t.Fatalf("got %v\nwant %v", got, tc.wantBody)
			}
		})
	}

	t.Run("JWKS holds the public key only", func(t *testing.T) {
		_, _, body := get(t, http.MethodGet, srv.URL+JWKSPath, "")
		var doc struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Keys) != 1 {
			t.Fatalf("got %d keys, want 1", len(doc.Keys))
		}
		var members []string
		for k := range doc.Keys[0] {
			members = append(members, k)
		}
		slices.Sort(members)
		if want := []string{"alg", "e", "kid", "kty", "n", "use"}; !slices.Equal(members, want) {
			t.Fatalf("key members %v, want %v", members, want)
		}
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
			if _, ok := doc.Keys[0][private]; ok || strings.Contains(string(body), `"`+private+`":`) {
				t.Fatalf("JWKS has private member %q: %s", private, body)
			}
		}
		want := map[string]any{"alg": "RS256", "kid": iss.KeyID(), "kty": "RSA", "use": "sig", "e": "AQAB"}
		for k, v := range want {
			if doc.Keys[0][k] != v {
				t.Errorf("%s = %v, want %v", k, doc.Keys[0][k], v)
			}
		}
		set, err := jwk.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		key, _ := set.Key(0)
		if _, isPrivate := key.(jwk.RSAPrivateKey); isPrivate {
			t.Fatal("the JWKS key parses as a private key")
		}
		if n, _ := doc.Keys[0]["n"].(string); len(n) != 342 { // 2048 bits, base64url without padding
			t.Errorf("modulus is %d characters, want 342 (RSA-2048)", len(n))
		}
	})
}

func TestIssuerWithPath(t *testing.T) {
	iss, err := NewIssuer("http://127.0.0.1:9/auth/", testAudience)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		path       string
		wantStatus int
	}{
		{name: "discovery below the path", path: "/auth" + DiscoveryPath, wantStatus: 200},
		{name: "JWKS below the path", path: "/auth" + JWKSPath, wantStatus: 200},
		{name: "discovery at the root", path: DiscoveryPath, wantStatus: 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			iss.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.wantStatus {
				t.Fatalf("got %d, want %d", rec.Code, tc.wantStatus)
			}
		})
	}
	rec := httptest.NewRecorder()
	iss.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth"+DiscoveryPath, nil))
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["issuer"] != "http://127.0.0.1:9/auth/" || doc["jwks_uri"] != "http://127.0.0.1:9/auth"+JWKSPath {
		t.Fatalf("got issuer %v, jwks_uri %v", doc["issuer"], doc["jwks_uri"])
	}
}

func TestNewIssuerRefuses(t *testing.T) {
	cases := []struct {
		name, url, audience, wantErr string
	}{
		{name: "relative URL", url: "/issuer", audience: "a",
			wantErr: `auth: issuer URL "/issuer" must be an absolute http(s) URL without query, fragment or user`},
		{name: "query", url: "http://localhost:1/?x=1", audience: "a",
			wantErr: `auth: issuer URL "http://localhost:1/?x=1" must be an absolute http(s) URL without query, fragment or user`},
		{name: "fragment", url: "http://localhost:1/#x", audience: "a",
			wantErr: `auth: issuer URL "http://localhost:1/#x" must be an absolute http(s) URL without query, fragment or user`},
		{name: "no audience", url: "http://localhost:1", audience: "",
			wantErr: "auth: audience is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			iss, err := NewIssuer(tc.url, tc.audience)
			if got := errText(err); got != tc.wantErr || iss != nil {
				t.Fatalf("got %v, error %q; want error %q", iss, got, tc.wantErr)
			}
		})
	}
}

func TestIssuersHaveTheirOwnKeys(t *testing.T) {
	a, err := NewIssuer("http://localhost:1", testAudience)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewIssuer("http://localhost:1", testAudience)
	if err != nil {
		t.Fatal(err)
	}
	if a.KeyID() == b.KeyID() || a.KeyID() == "" || string(a.jwks) == string(b.jwks) {
		t.Fatalf("two issuers share kid %q or key", a.KeyID())
	}
}

func TestMint(t *testing.T) {
	iss, _ := startIssuer(t)
	a := newTestAuthorizer(t, iss, nil)
	unix := func(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }
	cases := []struct {
		name       string
		sub        string
		scopes     []string
		ttl        time.Duration
		wantErr    string
		wantClaims map[string]string // without jti, checked apart
		wantScopes []string
	}{
		{name: "renter, default lifetime", sub: "alice",
			wantClaims: map[string]string{"iss": iss.URL(), "sub": "alice", "aud": testAudience, "iat": unix(0), "nbf": unix(0), "exp": unix(time.Hour)}},
		{name: "scopes, short lifetime", sub: "ops", scopes: []string{testOperator, "bikerental/read"}, ttl: 5 * time.Minute,
			wantClaims: map[string]string{"iss": iss.URL(), "sub": "ops", "aud": testAudience, "iat": unix(0), "nbf": unix(0), "exp": unix(5 * time.Minute),
				"scope": testOperator + " bikerental/read"},
			wantScopes: []string{testOperator, "bikerental/read"}},
		{name: "no sub", sub: "", wantErr: "auth: mint: sub is required"},
		{name: "negative lifetime", sub: "alice", ttl: -time.Second, wantErr: "auth: mint: ttl must not be negative"},
		{name: "scope with a space", sub: "alice", scopes: []string{"a b"}, wantErr: `auth: mint: invalid scope "a b"`},
		{name: "empty scope", sub: "alice", scopes: []string{""}, wantErr: `auth: mint: invalid scope ""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := iss.Mint(tc.sub, tc.scopes, tc.ttl)
			if got := errText(err); got != tc.wantErr {
				t.Fatalf("got error %q, want %q", got, tc.wantErr)
			}
			if tc.wantErr != "" {
				return
			}
			hdr := payloadOfPart(t, tok, 0)
			if want := map[string]any{"alg": "RS256", "kid": iss.KeyID(), "typ": "JWT"}; !reflect.DeepEqual(hdr, want) {
				t.Errorf("header %v, want %v", hdr, want)
			}
			got, err := a.Authorize(context.Background(), tok, nil)
			if err != nil {
				t.Fatal(err)
			}
			claims := got.JWT.Claims
			if len(claims["jti"]) < 16 {
				t.Errorf("jti %q is not a random id", claims["jti"])
			}
			delete(claims, "jti")
			if !reflect.DeepEqual(claims, tc.wantClaims) {
				t.Errorf("claims:\n got %v\nwant %v", claims, tc.wantClaims)
			}
			if !reflect.DeepEqual(got.JWT.Scopes, tc.wantScopes) {
				t.Errorf("scopes %#v, want %#v", got.JWT.Scopes, tc.wantScopes)
			}
		})
	}
	t.Run("each token has its own jti", func(t *testing.T) {
		x, _ := iss.Mint("alice", nil, 0)
		y, _ := iss.Mint("alice", nil, 0)
		if payloadOf(t, x)["jti"] == payloadOf(t, y)["jti"] {
			t.Fatal("two tokens share a jti")
		}
	})
}
