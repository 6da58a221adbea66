package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// DefaultMinRefreshInterval is how often, at most, an Authorizer refetches the
// issuer's keys because a token names a key id it does not hold.
const DefaultMinRefreshInterval = time.Minute

// DefaultMaxKeyAge is how long an Authorizer uses the keys it fetched before it
// fetches them again: the two hours for which API Gateway caches them.
const DefaultMaxKeyAge = 2 * time.Hour

// defaultHTTPTimeout bounds each request to the issuer when the config names no client.
const defaultHTTPTimeout = 10 * time.Second

// AuthorizerConfig is the configuration of an API Gateway JWT authorizer.
type AuthorizerConfig struct {
	// Issuer is the issuer URL: the "iss" every token must carry, and the base of
	// the discovery document ({Issuer}/.well-known/openid-configuration) that names
	// the JWKS. An absolute http or https URL.
	Issuer string
	// Audiences are the accepted audiences; at least one is required. A token's
	// "aud" must contain one of them, or, only when it has no "aud", its
	// "client_id" must be one of them.
	Audiences []string
	// HTTPClient fetches the discovery document and the JWKS (a client with a
	// 10-second timeout if nil).
	HTTPClient *http.Client
	// Now is the clock tokens are checked against (time.Now if nil); the key
	// cache's ages and rate limit are measured on it too.
	Now func() time.Time
	// Leeway is the clock skew tolerated on exp, nbf and iat: 0, as API Gateway
	// documents, unless set. It must not be negative.
	Leeway time.Duration
	// MinRefreshInterval is the least time between two fetches of the keys
	// (DefaultMinRefreshInterval if zero).
	MinRefreshInterval time.Duration
	// MaxKeyAge is how long fetched keys are used before they are fetched again
	// (DefaultMaxKeyAge if zero).
	MaxKeyAge time.Duration
}

// Authorizer checks bearer tokens as API Gateway's HTTP API JWT authorizer does.
// It is safe for concurrent use.
type Authorizer struct {
	issuer    string
	audiences []string
	now       func() time.Time
	leeway    time.Duration
	keys      *keyCache
}

// NewAuthorizer checks cfg and returns an Authorizer for it. It does not reach the
// issuer: the keys are discovered and fetched on first use (or by Refresh), so the
// issuer may start after the Authorizer.
func NewAuthorizer(cfg AuthorizerConfig) (*Authorizer, error) {
	if err := checkHTTPURL(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("auth: issuer %q: %w", cfg.Issuer, err)
	}
	if len(cfg.Audiences) == 0 || slices.Contains(cfg.Audiences, "") {
		return nil, errors.New("auth: at least one audience is required, and none may be empty")
	}
	if cfg.Leeway < 0 || cfg.MinRefreshInterval < 0 || cfg.MaxKeyAge < 0 {
		return nil, errors.New("auth: leeway, refresh interval and key age must not be negative")
	}
	a := &Authorizer{issuer: cfg.Issuer, audiences: slices.Clone(cfg.Audiences), now: cfg.Now, leeway: cfg.Leeway}
	if a.now == nil {
		a.now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	minRefresh := cmpOr(cfg.MinRefreshInterval, DefaultMinRefreshInterval)
	maxAge := cmpOr(cfg.MaxKeyAge, DefaultMaxKeyAge)
	a.keys = newKeyCache(cfg.Issuer, client, a.now, minRefresh, maxAge)
	return a, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Refresh discovers and fetches the issuer's keys now, whatever the rate limit; a
// failure keeps the keys already held. Calling it is optional: Authorize fetches
// them when it needs them.
func (a *Authorizer) Refresh(ctx context.Context) error {
	if err := a.keys.refresh(ctx); err != nil {
		return fmt.Errorf("auth: refresh keys of %s: %w", a.issuer, err)
	}
	return nil
}

// rsaAlgorithms are the only signature algorithms API Gateway accepts.
var rsaAlgorithms = map[string]jwa.SignatureAlgorithm{
	jwa.RS256().String(): jwa.RS256(),
	jwa.RS384().String(): jwa.RS384(),
	jwa.RS512().String(): jwa.RS512(),
}

// Authorize checks the Authorization header of a request to a route that requires
// requiredScopes (none: any valid token will do), and returns what API Gateway puts
// in the payload 2.0 requestContext.authorizer: the token's claims as strings (see
// the claims rendering below) and its scopes.
//
// The token, bare or after "Bearer ", must be a compact JWS signed with RS256, RS384
// or RS512 by the issuer key its "kid" names; its "iss" must be the issuer; its
// "aud" must contain an accepted audience, or, when it has no "aud", its "client_id"
// must be one; it must have an "exp" after now, and its "nbf" and "iat", if any,
// must not be after now (all within the configured leeway). Any failure returns an
// error matching ErrUnauthorized. A valid token whose "scope" (space-separated) or,
// failing that, "scp" (string or array) holds none of requiredScopes returns an error
// matching ErrForbidden. No error's text contains the token.
//
// Claims are rendered as API Gateway renders them: strings as they are, numbers in
// decimal, booleans as true or false, arrays as "[a b c]", objects as "map[k:v]",
// null as "<nil>".
func (a *Authorizer) Authorize(ctx context.Context, authorization string, requiredScopes []string) (*events.APIGatewayV2HTTPRequestContextAuthorizerDescription, error) {
	token := bearerToken(authorization)
	if token == "" {
		return nil, unauthorized("missing token")
	}
	raw := []byte(token)
	msg, err := jws.Parse(raw, jws.WithCompact())
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, unauthorized("malformed token")
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	alg, ok := hdr.Algorithm()
	if !ok {
		return nil, unauthorized("malformed token")
	}
	alg, ok = rsaAlgorithms[alg.String()]
	if !ok {
		return nil, unauthorized("unsupported algorithm")
	}
	if _, ok := hdr.Critical(); ok {
		return nil, unauthorized("unsupported critical header")
	}
	kid, ok := hdr.KeyID()
	if !ok || kid == "" {
		return nil, unauthorized("missing key id")
	}
	key, err := a.keys.key(ctx, kid)
	if err != nil {
		return nil, err
	}
	if kty := key.KeyType(); kty != jwa.RSA() {
		return nil, unauthorized("key is not an RSA key")
	}
	if use, ok := key.KeyUsage(); ok && use != "sig" {
		return nil, unauthorized("key is not a signing key")
	}
	if kalg, ok := key.Algorithm(); ok && kalg.String() != alg.String() {
		return nil, unauthorized("algorithm does not match key")
	}
	payload, err := jws.Verify(raw, jws.WithKey(alg, key), jws.WithCompact(), jws.WithCritValidation(true))
	if err != nil {
		return nil, unauthorized("invalid signature")
	}

	claims, err := decodeClaims(payload)
	if err != nil {
		return nil, unauthorized("malformed claims")
	}
	tok, err := jwt.Parse(payload, jwt.WithVerify(false), jwt.WithValidate(false))
	if err != nil {
		return nil, unauthorized("malformed claims")
	}
	if err := jwt.Validate(tok,
		jwt.WithClock(jwt.ClockFunc(a.now)),
		jwt.WithAcceptableSkew(a.leeway),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithIssuer(a.issuer),
	); err != nil {
		return nil, unauthorized(validationReason(err))
	}
	if !a.audienceOK(tok, claims) {
		return nil, unauthorized("audience mismatch")
	}

	scopes := tokenScopes(claims)
	if len(requiredScopes) > 0 && !slices.ContainsFunc(requiredScopes, func(s string) bool { return slices.Contains(scopes, s) }) {
		return nil, fmt.Errorf("%w: insufficient scope", ErrForbidden)
	}
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claimStrings(claims), Scopes: scopes},
	}, nil
}

// bearerToken returns the token of an Authorization header: the whole value, or what
// follows the "Bearer " scheme (matched without regard to case).
func bearerToken(h string) string {
	h = strings.TrimSpace(h)
	if len(h) >= len("bearer") && strings.EqualFold(h[:len("bearer")], "bearer") {
		if rest := h[len("bearer"):]; rest == "" || rest[0] == ' ' || rest[0] == '\t' {
			return strings.TrimSpace(rest)
		}
	}
	return h
}

// audienceOK applies API Gateway's rule: "aud" when the token has one, else "client_id".
func (a *Authorizer) audienceOK(tok jwt.Token, claims map[string]any) bool {
	if _, present := claims[jwt.AudienceKey]; present {
		aud, _ := tok.Audience()
		return slices.ContainsFunc(aud, func(s string) bool { return slices.Contains(a.audiences, s) })
	}
	clientID, ok := claims["client_id"].(string)
	return ok && slices.Contains(a.audiences, clientID)
}

// validationReason names the claim check that failed.
func validationReason(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return "token expired"
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return "token not yet valid"
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return "token issued in the future"
	case errors.Is(err, jwt.InvalidIssuerError()):
		return "issuer mismatch"
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return "missing exp claim"
	}
	return "invalid claims"
}
