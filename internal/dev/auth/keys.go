package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

// DiscoveryPath is where an OpenID provider serves its discovery document, below
// its issuer URL.
const DiscoveryPath = "/.well-known/openid-configuration"

// maxDiscoveryBytes bounds the discovery document read from the issuer.
const maxDiscoveryBytes = 1 << 20

// keyCache holds the issuer's signing keys. All of its state is guarded by sem, a
// one-slot semaphore: holding it while fetching makes concurrent callers wait for
// the one fetch in flight (or for their own context) instead of fetching again.
type keyCache struct {
	issuer     string
	client     *http.Client
	now        func() time.Time
	minRefresh time.Duration
	maxAge     time.Duration

	sem       chan struct{}
	set       jwk.Set   // last set fetched, nil before the first success
	fetchedAt time.Time // when set was fetched
	triedAt   time.Time // last counted fetch attempt, successful or not
	lastErr   error     // why the last attempt failed, nil if it succeeded
}

func newKeyCache(issuer string, client *http.Client, now func() time.Time, minRefresh, maxAge time.Duration) *keyCache {
	return &keyCache{issuer: issuer, client: client, now: now, minRefresh: minRefresh, maxAge: maxAge, sem: make(chan struct{}, 1)}
}

func (c *keyCache) lock(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *keyCache) unlock() { <-c.sem }

// key returns the key whose kid is kid. The cached set is refetched first when it
// is older than maxAge, and again when it lacks kid; either refetch happens at most
// once per minRefresh, so a stream of tokens with made-up kids costs the issuer one
// request per minRefresh at most. A failed refetch keeps the keys already held.
func (c *keyCache) key(ctx context.Context, kid string) (jwk.Key, error) {
	if err := c.lock(ctx); err != nil {
		return nil, fmt.Errorf("%w: signing keys unavailable: %w", ErrUnauthorized, err)
	}
	defer c.unlock()
	now := c.now()
	if (c.set == nil || now.Sub(c.fetchedAt) >= c.maxAge) && c.mayFetch(now) {
		c.fetch(ctx, now)
	}
	if c.set != nil {
		if k, ok := c.set.LookupKeyID(kid); ok {
			return k, nil
		}
		if c.mayFetch(now) {
			c.fetch(ctx, now)
			if k, ok := c.set.LookupKeyID(kid); ok {
				return k, nil
			}
		}
		return nil, unauthorized("unknown key id")
	}
	return nil, fmt.Errorf("%w: signing keys unavailable: %w", ErrUnauthorized, c.lastErr)
}

// refresh fetches the keys now, whatever the rate limit.
func (c *keyCache) refresh(ctx context.Context) error {
	if err := c.lock(ctx); err != nil {
		return err
	}
	defer c.unlock()
	c.fetch(ctx, c.now())
	return c.lastErr
}

func (c *keyCache) mayFetch(now time.Time) bool {
	return c.triedAt.IsZero() || now.Sub(c.triedAt) >= c.minRefresh
}

// fetch discovers the JWKS URI and fetches the set; the caller holds sem. An attempt
// cut short by the caller's own context is not counted against the rate limit, so
// one impatient client cannot lock the others out of the keys.
func (c *keyCache) fetch(ctx context.Context, now time.Time) {
	set, err := fetchKeys(ctx, c.client, c.issuer)
	if err != nil {
		c.lastErr = err
		if ctx.Err() == nil {
			c.triedAt = now
		}
		return
	}
	c.set, c.fetchedAt, c.triedAt, c.lastErr = set, now, now, nil
}

// fetchKeys reads issuer's discovery document and the key set its jwks_uri names.
func fetchKeys(ctx context.Context, client *http.Client, issuer string) (jwk.Set, error) {
	jwksURI, err := discoverJWKS(ctx, client, issuer)
	if err != nil {
		return nil, err
	}
	set, err := jwk.Fetch(ctx, jwksURI, jwk.WithHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS %s: %w", jwksURI, err)
	}
	return set, nil
}

// discoverJWKS returns the jwks_uri of issuer's discovery document, which must name
// issuer as its issuer (OpenID Connect Discovery 1.0, section 4.3).
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + DiscoveryPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("discovery %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery %s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes+1))
	if err != nil {
		return "", fmt.Errorf("discovery %s: %w", u, err)
	}
	if len(body) > maxDiscoveryBytes {
		return "", fmt.Errorf("discovery %s: document larger than %d bytes", u, maxDiscoveryBytes)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("discovery %s: %w", u, err)
	}
	if doc.Issuer != issuer {
		return "", fmt.Errorf("discovery %s: document names issuer %q, not %q", u, doc.Issuer, issuer)
	}
	if err := checkHTTPURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("discovery %s: jwks_uri: %w", u, err)
	}
	return doc.JWKSURI, nil
}

// checkHTTPURL accepts an absolute http or https URL with a host.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http(s) URL")
	}
	return nil
}
