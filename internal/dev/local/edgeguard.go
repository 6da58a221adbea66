package local

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// What the edge's rate rules must keep true of every route, held against the route
// limits the template declares (Edge.Holds; docs/decisions/0031-per-address-limits-follow-the-route-limits.md).
const (
	// GuardedSources addresses, each sending all its allowance, take at most
	// GuardedShare of any route's rate: what is left is the honest callers'.
	GuardedSources = 2
	GuardedShare   = 0.5
	// GuardedDrain bounds, on a route with limits of its own, how far one address's
	// allowance in a window may exceed the route's burst, in time at the route's
	// rate: sending all it may, one address holds the route's bucket empty for at
	// most that long a window.
	GuardedDrain = 2 * time.Second
)

// EdgeAllowance is what the edge lets one address send of requests like one: at
// most Limit in any Window, the tightest rate rule (Rule) that counts them, or
// nothing at all (Refused) when a match rule refuses them, whatever their rate.
// Limit is 0 when no rate rule counts them.
type EdgeAllowance struct {
	Rule    string
	Limit   int
	Window  time.Duration
	Refused bool
}

// PerSecond is the allowance as a steady rate.
func (a EdgeAllowance) PerSecond() float64 {
	if a.Refused || a.Window <= 0 {
		return 0
	}
	return float64(a.Limit) / a.Window.Seconds()
}

// Allowance returns what the edge lets one address send of requests like r, from
// its rules alone: it counts nothing.
func (e *Edge) Allowance(r *http.Request) EdgeAllowance {
	var tightest EdgeAllowance
	for _, rule := range e.rules {
		if rule.rate == nil {
			if rule.match.matches(r) {
				return EdgeAllowance{Rule: rule.name, Refused: true}
			}
			continue
		}
		if !rule.rate.counts(r) {
			continue
		}
		a := EdgeAllowance{Rule: rule.name, Limit: rule.rate.limit, Window: rule.rate.window}
		if tightest.Limit == 0 || a.PerSecond() < tightest.PerSecond() {
			tightest = a
		}
	}
	return tightest
}

// Holds returns an error naming every route of the API on which the edge's rate
// rules would let GuardedSources addresses take more than GuardedShare of the
// route's rate in t, or, on a route with limits of its own, one address exceed the
// route's burst by more than GuardedDrain of its rate. It tries each route as an
// attacker would: with a forged credential and without one, and with the path
// spelled as API Gateway still routes it (a trailing slash, a doubled leading one).
func (e *Edge) Holds(t Throttling) error {
	var errs []error
	for _, rt := range httpapi.Routes() {
		key := rt.Method + " " + rt.Pattern
		limit := t.Limit(key)
		_, own := t.Routes[key]
		for _, r := range attackerRequests(rt) {
			a := e.Allowance(r)
			if err := guarded(a, limit, own); err != nil {
				errs = append(errs, fmt.Errorf("%s (as %s %s): %w", key, r.Method, r.URL.EscapedPath(), err))
				break // one spelling that fails says it for the route
			}
		}
	}
	return errors.Join(errs...)
}

// guarded checks an allowance against a route's limit; own says the route has a
// limit of its own, not the stage's default.
func guarded(a EdgeAllowance, limit Limit, own bool) error {
	switch {
	case a.Refused:
		return nil
	case a.Limit == 0:
		return errors.New("no rate rule of the edge counts it")
	case GuardedSources*a.PerSecond() > GuardedShare*limit.Rate:
		return fmt.Errorf("%d addresses at %s's %d in %s take %.2f a second, over %.0f%% of the route's %g",
			GuardedSources, a.Rule, a.Limit, a.Window, GuardedSources*a.PerSecond(), 100*GuardedShare, limit.Rate)
	case own && float64(a.Limit-limit.Burst) > limit.Rate*GuardedDrain.Seconds():
		return fmt.Errorf("%s lets one address send %d in %s, more than the route's burst %d and %s of its rate %g",
			a.Rule, a.Limit, a.Window, limit.Burst, GuardedDrain, limit.Rate)
	}
	return nil
}

// attackerRequests are the requests an attacker would send to reach rt while
// spending as little as it can: with a forged credential of the route's kind and
// with none, on every spelling of its path that still reaches it.
func attackerRequests(rt httpapi.Route) []*http.Request {
	path := rt.Pattern
	for {
		i := strings.IndexByte(path, '{')
		j := strings.IndexByte(path, '}')
		if i < 0 || j < i {
			break
		}
		path = path[:i] + "x" + path[j+1:]
	}
	var out []*http.Request
	for _, p := range []string{path, path + "/", "/" + path, "/" + path + "/"} {
		if got, ok := httpapi.RouteFor(rt.Method, p); !ok || got != rt {
			continue
		}
		for _, forged := range []bool{false, true} {
			r, err := http.NewRequest(rt.Method, "http://edge"+p, nil)
			if err != nil {
				continue
			}
			r.RemoteAddr = "192.0.2.1:40000"
			if forged {
				r.Header.Set("Authorization", "Bearer x")
				for _, h := range []string{webhook.Header, stripe.SignatureHeader} {
					r.Header.Set(h, "t=1,v1=x")
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// templateEdgeThatHolds returns the template's edge, refusing one whose rate rules
// do not hold against the template's route limits (Edge.Holds).
func templateEdgeThatHolds() (*Edge, error) {
	edge, err := TemplateEdge(nil)
	if err != nil {
		return nil, err
	}
	throttling, err := TemplateThrottling()
	if err != nil {
		return nil, err
	}
	if err := edge.Holds(throttling); err != nil {
		return nil, fmt.Errorf("local: %s does not hold against the route limits: %w", templateEdge, err)
	}
	return edge, nil
}
