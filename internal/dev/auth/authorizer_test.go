package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

func TestAuthorize(t *testing.T) {
	iss, srv := startIssuer(t)
	key := rawKey(t, iss)
	kid := iss.KeyID()
	rs256 := func(claims any) string {
		return sign(t, jwa.RS256(), key, claims, map[string]any{"kid": kid})
	}
	mint := func(sub string, scopes []string) string {
		tok, err := iss.Mint(sub, scopes, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	renter := mint("alice", nil)
	operator := mint("ops", []string{testOperator})
	base := baseClaims(iss)

	// another RSA key, published nowhere, under the issuer's kid
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPublic, err := jwk.Import(&otherKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, _, jwksBytes := get(t, http.MethodGet, srv.URL+JWKSPath, "")
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	publicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	unix := func(d time.Duration) int64 { return testNow.Add(d).Unix() }
	stringsOf := func(claims map[string]any) map[string]string {
		out := map[string]string{}
		for k, v := range claims {
			out[k] = fmt.Sprint(v)
		}
		return out
	}

	type result struct {
		claims map[string]string
		scopes []string
	}
	cases := []struct {
		name     string
		token    string // the token, which no error may contain
		header   string // the Authorization header, if not "Bearer " + token
		required []string
		config   func(*AuthorizerConfig)
		wantErr  string // exact error text; "" for success
		wantIs   error
		want     result
	}{
		{name: "renter token with Bearer", token: renter,
			want: result{claims: renterClaimsOf(t, iss, renter, "alice")}},
		{name: "renter token bare", header: renter, token: renter,
			want: result{claims: renterClaimsOf(t, iss, renter, "alice")}},
		{name: "renter token with lower-case bearer and spaces", header: "  bearer   " + renter + " ", token: renter,
			want: result{claims: renterClaimsOf(t, iss, renter, "alice")}},
		{name: "operator token on operator route", token: operator, required: []string{testOperator},
			want: result{claims: with2(renterClaimsOf(t, iss, operator, "ops"), map[string]string{"scope": testOperator}), scopes: []string{testOperator}}},
		{name: "operator token where any of several scopes will do", token: operator, required: []string{"bikerental/other", testOperator},
			want: result{claims: with2(renterClaimsOf(t, iss, operator, "ops"), map[string]string{"scope": testOperator}), scopes: []string{testOperator}}},
		{name: "renter token on operator route", token: renter, required: []string{testOperator},
			wantIs: ErrForbidden, wantErr: "auth: forbidden: insufficient scope"},
		{name: "no header", header: "",
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: missing token"},
		{name: "Bearer with nothing", header: "Bearer ",
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: missing token"},
		{name: "garbage", token: "not-a-jwt",
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: malformed token"},
		{name: "garbage in three parts", token: "aaaaaaaaa.bbbbbbbbbb.cccccccccc",
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: malformed token"},
		{name: "signed by another RSA key with the same kid",
			token:   sign(t, jwa.RS256(), otherKey, base, map[string]any{"kid": kid}),
			wantIs:  ErrUnauthorized,
			wantErr: "auth: unauthorized: invalid signature"},
		{name: "key embedded in the header is ignored",
			token:  sign(t, jwa.RS256(), otherKey, base, map[string]any{"kid": kid, "jwk": otherPublic}),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: invalid signature"},
		{name: "unknown kid",
			token:   sign(t, jwa.RS256(), key, base, map[string]any{"kid": "no-such-key"}),
			wantIs:  ErrUnauthorized,
			wantErr: "auth: unauthorized: unknown key id"},
		{name: "no kid",
			token:  sign(t, jwa.RS256(), key, base, nil),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: missing key id"},
		{name: "alg none",
			token:  unsignedToken(t, map[string]any{"alg": "none"}, base, ""),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: unsupported algorithm"},
		{name: "alg none with the issuer's kid",
			token:  unsignedToken(t, map[string]any{"alg": "none", "kid": kid}, base, ""),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: unsupported algorithm"},
		{name: "no alg",
			token:  unsignedToken(t, map[string]any{"kid": kid}, base, "c2lnbmF0dXJl"),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: malformed token"},
		{name: "HS256 signed with the JWKS document as secret",
			token:  sign(t, jwa.HS256(), jwksBytes, base, map[string]any{"kid": kid}),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: unsupported algorithm"},
		{name: "HS256 signed with the public key PEM as secret",
			token:  sign(t, jwa.HS256(), publicPEM, base, map[string]any{"kid": kid}),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: unsupported algorithm"},
		{name: "ES256 token",
			token:  sign(t, jwa.ES256(), ecKey, base, map[string]any{"kid": kid}),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: unsupported algorithm"},
		{name: "RS384 token under an RS256 key",
			token:  sign(t, jwa.RS384(), key, base, map[string]any{"kid": kid}),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: algorithm does not match key"},
		{name: "critical header",
			token:  sign(t, jwa.RS256(), key, base, map[string]any{"kid": kid, "crit": []string{"x-custom"}, "x-custom": 1}),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: unsupported critical header"},
		{name: "payload not an object",
			token:  rs256([]byte(`["alice"]`)),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: malformed claims"},
		{name: "exp not a number",
			token:  rs256(with(base, map[string]any{"exp": "tomorrow"})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: malformed claims"},
		{name: "expired a second ago",
			token:  rs256(with(base, map[string]any{"exp": unix(-time.Second)})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: token expired"},
		{name: "expiring now",
			token:  rs256(with(base, map[string]any{"exp": unix(0)})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: token expired"},
		{name: "expired, within the configured leeway",
			token:  rs256(with(base, map[string]any{"exp": unix(-10 * time.Second)})),
			config: func(c *AuthorizerConfig) { c.Leeway = 30 * time.Second },
			want:   result{claims: stringsOf(with(base, map[string]any{"exp": unix(-10 * time.Second)}))}},
		{name: "expired, beyond the configured leeway",
			token:  rs256(with(base, map[string]any{"exp": unix(-31 * time.Second)})),
			config: func(c *AuthorizerConfig) { c.Leeway = 30 * time.Second },
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: token expired"},
		{name: "no exp",
			token:  rs256(with(base, map[string]any{"exp": nil})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: missing exp claim"},
		{name: "nbf in the future",
			token:  rs256(with(base, map[string]any{"nbf": unix(time.Second)})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: token not yet valid"},
		{name: "iat in the future",
			token:  rs256(with(base, map[string]any{"iat": unix(time.Second), "nbf": nil})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: token issued in the future"},
		{name: "no nbf nor iat",
			token: rs256(with(base, map[string]any{"iat": nil, "nbf": nil})),
			want:  result{claims: stringsOf(with(base, map[string]any{"iat": nil, "nbf": nil}))}},
		{name: "wrong issuer",
			token:  rs256(with(base, map[string]any{"iss": "https://evil.example"})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: issuer mismatch"},
		{name: "no issuer",
			token:  rs256(with(base, map[string]any{"iss": nil})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: issuer mismatch"},
		{name: "wrong audience",
			token:  rs256(with(base, map[string]any{"aud": "someone-else"})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: audience mismatch"},
		{name: "audience array holding an accepted one",
			token: rs256(with(base, map[string]any{"aud": []string{"x", testAudience}})),
			want:  result{claims: with2(stringsOf(base), map[string]string{"aud": "[x bikerental]"})}},
		{name: "second configured audience",
			token:  rs256(with(base, map[string]any{"aud": "mobile"})),
			config: func(c *AuthorizerConfig) { c.Audiences = []string{testAudience, "mobile"} },
			want:   result{claims: stringsOf(with(base, map[string]any{"aud": "mobile"}))}},
		{name: "no aud, matching client_id",
			token: rs256(with(base, map[string]any{"aud": nil, "client_id": testAudience})),
			want:  result{claims: stringsOf(with(base, map[string]any{"aud": nil, "client_id": testAudience}))}},
		{name: "no aud, other client_id",
			token:  rs256(with(base, map[string]any{"aud": nil, "client_id": "other"})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: audience mismatch"},
		{name: "no aud nor client_id",
			token:  rs256(with(base, map[string]any{"aud": nil})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: audience mismatch"},
		{name: "wrong aud, matching client_id: aud wins",
			token:  rs256(with(base, map[string]any{"aud": "someone-else", "client_id": testAudience})),
			wantIs: ErrUnauthorized, wantErr: "auth: unauthorized: audience mismatch"},
		{name: "scp array on operator route",
			token:    rs256(with(base, map[string]any{"scp": []string{"bikerental/read", testOperator}})),
			required: []string{testOperator},
			want:     result{claims: with2(stringsOf(base), map[string]string{"scp": "[bikerental/read bikerental/operator]"}), scopes: []string{"bikerental/read", testOperator}}},
		{name: "scp string on operator route",
			token:    rs256(with(base, map[string]any{"scp": "bikerental/read " + testOperator})),
			required: []string{testOperator},
			want:     result{claims: with2(stringsOf(base), map[string]string{"scp": "bikerental/read " + testOperator}), scopes: []string{"bikerental/read", testOperator}}},
		{name: "scp array without the route's scope",
			token:    rs256(with(base, map[string]any{"scp": []string{"bikerental/read"}})),
			required: []string{testOperator},
			wantIs:   ErrForbidden, wantErr: "auth: forbidden: insufficient scope"},
		{name: "claims of every JSON type",
			token: rs256([]byte(fmt.Sprintf(`{"iss":%q,"aud":"bikerental","exp":%d,"sub":"alice","email_verified":true,"banned":false,"count":42,"ratio":1.5,"big":1e3,"groups":["a","b",3],"addr":{"z":1,"a":"x"},"nothing":null}`, iss.URL(), unix(time.Hour)))),
			want: result{claims: map[string]string{
				"iss": iss.URL(), "aud": "bikerental", "exp": strconv.FormatInt(unix(time.Hour), 10), "sub": "alice",
				"email_verified": "true", "banned": "false", "count": "42", "ratio": "1.5", "big": "1000",
				"groups": "[a b 3]", "addr": "map[a:x z:1]", "nothing": "<nil>",
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAuthorizer(t, iss, tc.config)
			header := tc.header
			if header == "" && tc.token != "" {
				header = "Bearer " + tc.token
			}
			got, err := a.Authorize(context.Background(), header, tc.required)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got claims %v, want error %q", got, tc.wantErr)
				}
				if err.Error() != tc.wantErr || !errors.Is(err, tc.wantIs) {
					t.Fatalf("got error %q, want %q matching %v", err, tc.wantErr, tc.wantIs)
				}
				other := ErrUnauthorized
				if tc.wantIs == ErrUnauthorized {
					other = ErrForbidden
				}
				if errors.Is(err, other) {
					t.Fatalf("error %q matches %v too", err, other)
				}
				if got != nil {
					t.Fatalf("got claims %v with the error", got)
				}
				assertNoToken(t, err.Error(), tc.token)
				return
			}
			if err != nil {
				t.Fatalf("got error %q, want success", err)
			}
			if got.JWT == nil || got.IAM != nil || got.Lambda != nil {
				t.Fatalf("got authorizer %+v, want only JWT", got)
			}
			if !reflect.DeepEqual(got.JWT.Claims, tc.want.claims) {
				t.Errorf("claims:\n got %v\nwant %v", got.JWT.Claims, tc.want.claims)
			}
			if !reflect.DeepEqual(got.JWT.Scopes, tc.want.scopes) {
				t.Errorf("scopes: got %#v, want %#v", got.JWT.Scopes, tc.want.scopes)
			}
		})
	}
}

// renterClaimsOf is the claims map of a token iss minted for sub at testNow.
func renterClaimsOf(t *testing.T, iss *Issuer, tok, sub string) map[string]string {
	t.Helper()
	return map[string]string{
		"iss": iss.URL(), "sub": sub, "aud": testAudience,
		"iat": strconv.FormatInt(testNow.Unix(), 10), "nbf": strconv.FormatInt(testNow.Unix(), 10),
		"exp": strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10), "jti": payloadOf(t, tok)["jti"].(string),
	}
}

// with2 returns a copy of m with set applied.
func with2(m, set map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}
