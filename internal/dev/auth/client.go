package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Tokens fetches tokens from a local stack's POST /local/tokens and keeps one per
// subject, for the programs that drive the local stack over HTTP (the demo, the
// load generator, the benchmarks, the end-to-end test). It is safe for concurrent
// use. Tokens live DefaultTokenLifetime: a run longer than that needs a new Tokens.
type Tokens struct {
	// BaseURL is the local stack's API address, e.g. "http://127.0.0.1:3000".
	BaseURL string
	// Client makes the requests; nil means http.DefaultClient.
	Client *http.Client

	mu    sync.Mutex
	cache map[TokenRequest]string
}

// Renter returns a renter's token for sub.
func (t *Tokens) Renter(ctx context.Context, sub string) (string, error) {
	return t.get(ctx, TokenRequest{Sub: sub})
}

// Operator returns an operator's token (with the operator scope) for sub.
func (t *Tokens) Operator(ctx context.Context, sub string) (string, error) {
	return t.get(ctx, TokenRequest{Sub: sub, Operator: true})
}

// Bearer returns the Authorization header value for a token.
func Bearer(token string) string { return "Bearer " + token }

func (t *Tokens) get(ctx context.Context, want TokenRequest) (string, error) {
	t.mu.Lock()
	token, ok := t.cache[want]
	t.mu.Unlock()
	if ok {
		return token, nil
	}
	body, _ := json.Marshal(want)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(t.BaseURL, "/")+TokenPath, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	client := t.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("auth: fetch a token for %q: %w", want.Sub, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("auth: fetch a token for %q: %w", want.Sub, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("auth: POST %s for %q answered %d: %s (is this a local stack?)", TokenPath, want.Sub, resp.StatusCode, raw)
	}
	var out TokenResponse
	if err := json.Unmarshal(raw, &out); err != nil || out.Token == "" {
		return "", fmt.Errorf("auth: POST %s for %q: no token in the answer", TokenPath, want.Sub)
	}
	t.mu.Lock()
	if t.cache == nil {
		t.cache = map[TokenRequest]string{}
	}
	t.cache[want] = out.Token
	t.mu.Unlock()
	return out.Token, nil
}
