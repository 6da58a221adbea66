package local

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bikerental/bikerental"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// Limit is a route's throttling as API Gateway's route settings give it: a steady
// Rate of requests a second, and a Burst of requests taken at once.
type Limit struct {
	Rate  float64
	Burst int
}

// Throttling is an HTTP API stage's throttling: Default for every route without its
// own limit (and for requests on no route), and Routes by "METHOD /path", as the
// template declares them.
type Throttling struct {
	Default Limit
	Routes  map[string]Limit
}

// Limit returns the limit of route ("METHOD /path", or "" for no route).
func (t Throttling) Limit(route string) Limit {
	if l, ok := t.Routes[route]; ok {
		return l
	}
	return t.Default
}

// The template's names: the HTTP API, the function its routes invoke, and the
// settings of a route's throttling.
const (
	templateAPI      = "HttpApi"
	templateFunction = "CommandFunction"
	settingRate      = "ThrottlingRateLimit"
	settingBurst     = "ThrottlingBurstLimit"
)

// TemplateThrottling returns the throttling the repository's template.yaml declares:
// the HTTP API's DefaultRouteSettings and each route's RouteSettings. A route
// setting that gives only one of rate and burst takes the other from the default.
func TemplateThrottling() (Throttling, error) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		return Throttling{}, err
	}
	return ThrottlingOf(tpl)
}

// ThrottlingOf returns the throttling tpl declares (see TemplateThrottling). It is
// an error for the HTTP API to declare no default, or for a setting not to be a
// positive number.
func ThrottlingOf(tpl *samtemplate.Template) (Throttling, error) {
	def, err := limitOf(tpl.Resource(templateAPI).Get("Properties", "DefaultRouteSettings"), nil)
	if err != nil {
		return Throttling{}, fmt.Errorf("local: %s's DefaultRouteSettings: %w", templateAPI, err)
	}
	out := Throttling{Default: def, Routes: map[string]Limit{}}
	for _, r := range tpl.Routes(templateFunction) {
		settings := r.Properties.Get("RouteSettings")
		if !settings.Exists() {
			continue
		}
		l, err := limitOf(settings, &def)
		if err != nil {
			return Throttling{}, fmt.Errorf("local: route %s %s's RouteSettings: %w", r.Method, r.Path, err)
		}
		out.Routes[r.Method+" "+r.Path] = l
	}
	return out, nil
}

// limitOf reads rate and burst from settings; either may be missing when def gives it.
func limitOf(settings samtemplate.Node, def *Limit) (Limit, error) {
	var l Limit
	rate, burst := settings.Get(settingRate), settings.Get(settingBurst)
	if def != nil {
		l = *def
	} else if !rate.Exists() || !burst.Exists() {
		return Limit{}, fmt.Errorf("%s and %s are both required", settingRate, settingBurst)
	}
	if rate.Exists() {
		v, err := rate.Resolve(nil)
		if err != nil {
			return Limit{}, err
		}
		if l.Rate, err = strconv.ParseFloat(v, 64); err != nil || !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
			return Limit{}, fmt.Errorf("%s %q is not a positive number", settingRate, v)
		}
	}
	if burst.Exists() {
		v, err := burst.Resolve(nil)
		if err != nil {
			return Limit{}, err
		}
		if l.Burst, err = strconv.Atoi(v); err != nil || l.Burst < 1 {
			return Limit{}, fmt.Errorf("%s %q is not a positive whole number", settingBurst, v)
		}
	}
	return l, nil
}

// Throttle plays API Gateway's throttling of a stage: one token bucket per route,
// holding up to the route's burst and refilled at its rate, from which every
// request takes a token. It is safe for concurrent use.
type Throttle struct {
	limits Throttling
	now    func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewThrottle returns a Throttle of limits on the clock now (time.Now if nil). Every
// bucket starts full.
func NewThrottle(limits Throttling, now func() time.Time) *Throttle {
	if now == nil {
		now = time.Now
	}
	return &Throttle{limits: limits, now: now, buckets: map[string]*bucket{}}
}

// Allow takes a token from the bucket of route ("METHOD /path", "" for no route)
// and reports whether there was one.
func (t *Throttle) Allow(route string) bool {
	l := t.limits.Limit(route)
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[route]
	if !ok {
		b = &bucket{tokens: float64(l.Burst), at: now}
		t.buckets[route] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = math.Min(float64(l.Burst), b.tokens+elapsed*l.Rate)
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
