package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/dev/auth"
)

// call is one API request.
type call struct {
	method, path string
	route        string // the route's pattern, for counting, e.g. "GET /rentals/{id}"
	body         []byte
	// token is the bearer token the request carries ("" for none: a webhook, a
	// public route).
	token  string
	header func() http.Header // built again for every attempt (a webhook is signed anew)
	// effect, when set, reads back through the API whether the request took effect;
	// after an unclean answer it tells the report whether the failure left a change
	// behind.
	effect func(context.Context) (bool, error)
	// once marks a request that must not be sent again after an unclean answer (its
	// caller finds out what happened); the others are idempotent and are sent again.
	once bool
}

// answer is the final answer to a call: a success, or a clean refusal.
type answer struct {
	route   string
	status  int
	body    []byte
	problem *problem // set for a 4xx
	// retryAfter is the delay a 503's Retry-After asks for.
	retryAfter time.Duration
}

// problem is the part of an RFC 9457 problem the generator reads.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// is reports whether p is the API's problem with the given anchor, e.g.
// "bike-unavailable".
func (p *problem) is(anchor string) bool {
	return p != nil && strings.HasSuffix(p.Type, "#problem-"+anchor)
}

// anchor returns the problem's short name: its type's anchor, or the type itself.
func (p *problem) anchor() string {
	if _, a, ok := strings.Cut(p.Type, "#problem-"); ok {
		return a
	}
	return p.Type
}

// Errors of send. All were counted before they were returned.
var (
	errUnclean = errors.New("load: unclean answer")
	errBusy    = errors.New("load: still busy after repeated 503s")
	// errRetryLater is a clean 503 to a call marked once: it is not sent again, as
	// the request may have taken effect; the caller finds out and decides.
	errRetryLater = errors.New("load: 503 to a request that is not safe to repeat")
)

// maxRetryAfter bounds the wait a Retry-After header may ask for.
const maxRetryAfter = 30 * time.Second

// How a request is sent again after an unclean answer: as a careful client would,
// so that the run goes on and the end states stay meaningful. The unclean answer is
// counted all the same.
const (
	maxUncleanRetries = 3
	uncleanRetryDelay = 500 * time.Millisecond
)

// send sends c and checks the answer's shape: it returns a 2xx or a clean 4xx
// refusal; it sends the request again after the delay of a 503's Retry-After, up to
// cfg.MaxBusyRetries times. It counts anything unclean, finds out with c.effect
// whether the failed request took effect, and sends it again (unless c.once) up to
// maxUncleanRetries times, then returns errUnclean. An error of ctx is returned as
// it is, and counts as nothing.
func (g *gen) send(ctx context.Context, c call) (answer, error) {
	busy, unclean := 0, 0
	for {
		ans, retryAfter, err := g.attempt(ctx, c)
		ans.retryAfter = retryAfter
		if errors.Is(err, errUnclean) {
			g.probe(ctx, c, "unclean")
			if c.once || unclean >= maxUncleanRetries {
				return ans, err
			}
			unclean++
			g.tally.outcome(OutcomeUncleanRetried)
			if err := sleep(ctx, uncleanRetryDelay); err != nil {
				return ans, err
			}
			continue
		}
		if err != nil || ans.status != http.StatusServiceUnavailable {
			return ans, err
		}
		if c.once {
			g.probe(ctx, c, "503 to")
			return ans, errRetryLater
		}
		if busy >= g.cfg.MaxBusyRetries {
			g.tally.outcome(OutcomeBusyExhausted)
			return ans, errBusy
		}
		busy++
		g.tally.outcome(OutcomeBusyRetried)
		if err := sleep(ctx, retryAfter); err != nil {
			return ans, err
		}
	}
}

// probe counts whether a request that got an unclean answer, or a 503, had taken
// effect: what labels the answer ("unclean", "503 to").
func (g *gen) probe(ctx context.Context, c call, what string) {
	if c.effect == nil {
		return
	}
	took, err := c.effect(ctx)
	switch {
	case err != nil:
		g.tally.outcome(fmt.Sprintf("%s %s: unknown whether it took effect", what, c.route))
	case took:
		g.tally.outcome(fmt.Sprintf("%s %s: it had taken effect", what, c.route))
	default:
		g.tally.outcome(fmt.Sprintf("%s %s: it had not taken effect", what, c.route))
	}
}

// attempt sends c once. For a clean 503 it returns the delay Retry-After asks for.
func (g *gen) attempt(ctx context.Context, c call) (answer, time.Duration, error) {
	ans := answer{route: c.route}
	req, err := http.NewRequestWithContext(ctx, c.method, g.cfg.BaseURL+c.path, bytes.NewReader(c.body))
	if err != nil {
		return ans, 0, err
	}
	if c.header != nil {
		for k, vs := range c.header() {
			req.Header[k] = vs
		}
	}
	if c.token != "" {
		req.Header.Set("Authorization", auth.Bearer(c.token))
	}
	g.tally.requests.Add(1)
	resp, err := g.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ans, 0, ctx.Err()
		}
		g.tally.unclean(fmt.Sprintf("%s: transport error: %v", c.route, err))
		return ans, 0, errUnclean
	}
	defer resp.Body.Close()
	ans.status = resp.StatusCode
	ans.body, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		if ctx.Err() != nil {
			return ans, 0, ctx.Err()
		}
		g.tally.unclean(fmt.Sprintf("%s: %d, reading the body: %v", c.route, resp.StatusCode, err))
		return ans, 0, errUnclean
	}
	g.tally.status(c.route, resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		seconds, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || seconds < 0 {
			g.tally.unclean(fmt.Sprintf("%s: 503 without a valid Retry-After (%q): %.300s", c.route, resp.Header.Get("Retry-After"), ans.body))
			return ans, 0, errUnclean
		}
		return ans, min(time.Duration(seconds)*time.Second, maxRetryAfter), nil
	case resp.StatusCode >= 500:
		g.tally.unclean(fmt.Sprintf("%s: %d: %.300s", c.route, resp.StatusCode, ans.body))
		return ans, 0, errUnclean
	case resp.StatusCode >= 400:
		p, why := parseProblem(resp, ans.body)
		if p == nil {
			g.tally.unclean(fmt.Sprintf("%s: %d that is not a clean problem (%s): %.300s", c.route, resp.StatusCode, why, ans.body))
			return ans, 0, errUnclean
		}
		ans.problem = p
	}
	return ans, 0, nil
}

// parseProblem returns the problem a 4xx answer carries, or nil and why it is not a
// clean one.
func parseProblem(resp *http.Response, body []byte) (*problem, string) {
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/problem+json" {
		return nil, fmt.Sprintf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, "malformed JSON"
	}
	if p.Type == "" || p.Status != resp.StatusCode {
		return nil, fmt.Sprintf("type %q, status %d", p.Type, p.Status)
	}
	return &p, ""
}
