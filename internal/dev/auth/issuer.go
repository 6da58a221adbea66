package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// JWKSPath is where an Issuer serves its JWKS, below its issuer URL.
const JWKSPath = "/.well-known/jwks.json"

// DefaultTokenLifetime is the lifetime of the tokens an Issuer mints when asked for
// none, and of every token its token handler mints.
const DefaultTokenLifetime = time.Hour

// rsaKeyBits is the size of an Issuer's signing key.
const rsaKeyBits = 2048

// Issuer is the local token issuer, an OpenID provider in the small: it holds an
// RSA-2048 key generated when it was made, under a random key id, mints RS256 tokens
// with it, and serves the discovery document and the JWKS an Authorizer (or API
// Gateway) needs to check them. Its key lives only in memory, so tokens it minted
// are worthless to any other Issuer. It is safe for concurrent use.
type Issuer struct {
	// Now is the clock tokens are stamped with (time.Now if nil). Set it before
	// the Issuer is used.
	Now func() time.Time

	url      string
	audience string
	kid      string
	private  jwk.Key
	jwks     []byte // the public key set, rendered once
	metadata []byte // the discovery document, rendered once
	base     string // the issuer URL's path, without a trailing slash
}

// NewIssuer returns an Issuer whose tokens carry iss issuerURL (an absolute http or
// https URL, without query or fragment, at which its discovery handlers are to be
// served) and aud audience, with a freshly generated key.
func NewIssuer(issuerURL, audience string) (*Issuer, error) {
	u, err := url.Parse(issuerURL)
	if err != nil || checkHTTPURL(issuerURL) != nil || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("auth: issuer URL %q must be an absolute http(s) URL without query, fragment or user", issuerURL)
	}
	if audience == "" {
		return nil, errors.New("auth: audience is required")
	}
	raw, err := rsa.GenerateKey(rand.Reader, rsaKeyBits)
	if err != nil {
		return nil, fmt.Errorf("auth: generate key: %w", err)
	}
	kid := rand.Text()
	private, err := jwk.Import(raw)
	if err != nil {
		return nil, fmt.Errorf("auth: import key: %w", err)
	}
	public, err := jwk.PublicKeyOf(private)
	if err != nil {
		return nil, fmt.Errorf("auth: public key: %w", err)
	}
	for _, k := range []jwk.Key{private, public} {
		for name, v := range map[string]any{jwk.KeyIDKey: kid, jwk.AlgorithmKey: jwa.RS256(), jwk.KeyUsageKey: jwk.ForSignature} {
			if err := k.Set(name, v); err != nil {
				return nil, fmt.Errorf("auth: set %s: %w", name, err)
			}
		}
	}
	set := jwk.NewSet()
	if err := set.AddKey(public); err != nil {
		return nil, fmt.Errorf("auth: key set: %w", err)
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("auth: render JWKS: %w", err)
	}
	root := strings.TrimSuffix(issuerURL, "/")
	metadata, err := json.Marshal(map[string]any{
		"issuer":                                issuerURL,
		"jwks_uri":                              root + JWKSPath,
		"response_types_supported":              []string{"token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{jwa.RS256().String()},
		"claims_supported":                      []string{"iss", "sub", "aud", "iat", "nbf", "exp", "jti", "scope"},
	})
	if err != nil {
		return nil, fmt.Errorf("auth: render discovery document: %w", err)
	}
	return &Issuer{
		url: issuerURL, audience: audience, kid: kid, private: private,
		jwks: jwks, metadata: metadata, base: strings.TrimSuffix(u.EscapedPath(), "/"),
	}, nil
}

// URL returns the issuer URL, the "iss" of its tokens.
func (i *Issuer) URL() string { return i.url }

// Audience returns the "aud" of its tokens.
func (i *Issuer) Audience() string { return i.audience }

// KeyID returns the "kid" of its key, which every token it mints names.
func (i *Issuer) KeyID() string { return i.kid }

func (i *Issuer) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

// Mint returns a signed RS256 token for sub, valid from now (iat and nbf) for ttl
// (DefaultTokenLifetime if zero), with the Issuer's iss and aud (a string), a random
// jti, and, when scopes are given, a "scope" claim holding them space-separated. sub
// must not be empty, ttl not negative, and no scope empty or containing a space.
func (i *Issuer) Mint(sub string, scopes []string, ttl time.Duration) (string, error) {
	if sub == "" {
		return "", errors.New("auth: mint: sub is required")
	}
	if ttl < 0 {
		return "", errors.New("auth: mint: ttl must not be negative")
	}
	if ttl == 0 {
		ttl = DefaultTokenLifetime
	}
	for _, s := range scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			return "", fmt.Errorf("auth: mint: invalid scope %q", s)
		}
	}
	now := i.now().Truncate(time.Second)
	b := jwt.NewBuilder().
		Issuer(i.url).
		Subject(sub).
		Audience([]string{i.audience}).
		IssuedAt(now).
		NotBefore(now).
		Expiration(now.Add(ttl)).
		JwtID(rand.Text())
	if len(scopes) > 0 {
		b = b.Claim("scope", strings.Join(scopes, " "))
	}
	tok, err := b.Build()
	if err != nil {
		return "", fmt.Errorf("auth: mint: %w", err)
	}
	tok.Options().Enable(jwt.FlattenAudience)
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256(), i.private))
	if err != nil {
		return "", fmt.Errorf("auth: mint: %w", err)
	}
	return string(signed), nil
}

// ServeHTTP serves GET (and HEAD) of the discovery document at the issuer URL's path
// followed by DiscoveryPath, and of the JWKS, the public key only, at the path
// followed by JWKSPath; other paths get 404, other methods 405.
func (i *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	switch r.URL.EscapedPath() {
	case i.base + DiscoveryPath:
		body = i.metadata
	case i.base + JWKSPath:
		body = i.jwks
	default:
		writeProblem(w, http.StatusNotFound, "about:blank", "no such document")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeProblem(w, http.StatusMethodNotAllowed, "about:blank", "only GET is allowed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}
