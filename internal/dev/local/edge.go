package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/bikerental/bikerental"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// templateEdge is the template's web ACL in front of the HTTP API (FloodGuard=edge).
const templateEdge = "EdgeWebAcl"

// Edge plays the AWS WAF web ACL template.yaml puts in front of the HTTP API with
// FloodGuard=edge: its rules in priority order, each request stopping at the first
// rule that blocks it, before the stage's throttling and the JWT authorizer see it.
// It plays the statements the template uses (And, Or, Not, byte matches on the
// path, the method and a header with the text transformations NONE, LOWERCASE and
// URL_DECODE, and a rate-based statement keyed on the client's address, scoped down
// by such a statement or not) and refuses at start any other, so that what the
// gateway plays is what AWS runs. It is safe for concurrent use.
type Edge struct {
	rules    []edgeRule
	bodies   map[string]edgeBody
	capacity int
	now      func() time.Time
}

// EdgeCapacity is the most web ACL capacity units the template's web ACL may take:
// the 1,500 AWS WAF's base price includes (a web ACL may take up to 5,000, each 500
// beyond 1,500 charged per million requests).
const EdgeCapacity = 1500

// Capacity returns the web ACL capacity units the edge's rules cost, statement by
// statement, as AWS WAF's developer guide prices them. It is an upper bound: AWS WAF
// may count once a transformation that two statements of a rule apply to one part
// of the request.
func (e *Edge) Capacity() int { return e.capacity }

// EdgeVerdict is what the edge did with a request: the rule that blocked it and the
// answer it gave, or nothing (Rule "") when the request goes on to the API.
type EdgeVerdict struct {
	Rule    string
	Status  int
	Header  http.Header
	Body    []byte
	blocked bool
}

// Blocked reports whether the edge answered the request itself.
func (v EdgeVerdict) Blocked() bool { return v.blocked }

type edgeRule struct {
	name   string
	match  edgeStatement // nil for a rate rule
	rate   *edgeRate
	answer edgeAnswer
}

type edgeAnswer struct {
	status  int
	headers [][2]string
	body    string // a key of the web ACL's CustomResponseBodies, or ""
}

type edgeBody struct {
	contentType string
	content     []byte
}

// TemplateEdge returns the edge the repository's template.yaml declares, on the
// clock now (time.Now if nil).
func TemplateEdge(now func() time.Time) (*Edge, error) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		return nil, err
	}
	return EdgeOf(tpl, now)
}

// EdgeOf returns the edge tpl's EdgeWebAcl declares, with the parameters' defaults,
// on the clock now (time.Now if nil). It is an error for the web ACL to be missing,
// to allow nothing by default, or to hold a statement, action or setting the gateway
// cannot play.
func EdgeOf(tpl *samtemplate.Template, now func() time.Time) (*Edge, error) {
	return EdgeWith(tpl, nil, now)
}

// EdgeWith is EdgeOf with the template's parameters set to params where it names
// them (their defaults elsewhere).
func EdgeWith(tpl *samtemplate.Template, params map[string]string, now func() time.Time) (*Edge, error) {
	if now == nil {
		now = time.Now
	}
	props := tpl.Resource(templateEdge).Get("Properties")
	if !props.Exists() {
		return nil, fmt.Errorf("local: the template has no %s", templateEdge)
	}
	env := samtemplate.Env{Params: params, Resource: ipSetArn(tpl)}
	sets, err := templateIPSets(tpl, env)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	v, err := tpl.Eval(props, env)
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", templateEdge, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", templateEdge, err)
	}
	var acl webACL
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&acl); err != nil {
		return nil, fmt.Errorf("local: %s: %w", templateEdge, err)
	}
	e, err := acl.edge(sets)
	if err != nil {
		return nil, fmt.Errorf("local: %s: %w", templateEdge, err)
	}
	e.now = now
	return e, nil
}

// Check runs r through the edge's rules and returns the verdict of the first that
// blocks it. A rate-based rule counts r whenever r reaches that rule and matches its
// scope-down statement (every r, without one), as AWS WAF counts: a request it
// blocks counts too.
func (e *Edge) Check(r *http.Request) EdgeVerdict {
	now := e.now()
	for _, rule := range e.rules {
		var hit bool
		if rule.rate != nil {
			hit = rule.rate.counts(r) && rule.rate.over(clientAddress(r), now)
		} else {
			hit = rule.match.matches(r)
		}
		if hit {
			return e.verdict(rule)
		}
	}
	return EdgeVerdict{}
}

func (e *Edge) verdict(rule edgeRule) EdgeVerdict {
	v := EdgeVerdict{Rule: rule.name, Status: rule.answer.status, Header: http.Header{}, blocked: true}
	for _, h := range rule.answer.headers {
		v.Header.Add(h[0], h[1])
	}
	if b, ok := e.bodies[rule.answer.body]; ok {
		v.Header.Set("Content-Type", b.contentType)
		v.Body = b.content
	}
	return v
}

// clientAddress is the request's source address, as the web ACL's IP key sees it.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// edgeStatement is a match statement of the web ACL.
type edgeStatement interface{ matches(r *http.Request) bool }

type andStatement []edgeStatement
type orStatement []edgeStatement
type notStatement struct{ edgeStatement }

func (s andStatement) matches(r *http.Request) bool {
	for _, c := range s {
		if !c.matches(r) {
			return false
		}
	}
	return true
}

func (s orStatement) matches(r *http.Request) bool {
	for _, c := range s {
		if c.matches(r) {
			return true
		}
	}
	return false
}

func (s notStatement) matches(r *http.Request) bool { return !s.edgeStatement.matches(r) }

// byteMatch is a ByteMatchStatement: a part of the request, transformed, compared
// with a string. A header the request lacks matches nothing, as in AWS WAF.
type byteMatch struct {
	field      func(r *http.Request) (string, bool)
	transforms []func(string) string // in the order they apply
	compare    func(s, search string) bool
	search     string
}

func (b byteMatch) matches(r *http.Request) bool {
	v, ok := b.field(r)
	if !ok {
		return false
	}
	for _, t := range b.transforms {
		v = t(v)
	}
	return b.compare(v, b.search)
}

var positional = map[string]func(s, search string) bool{
	"EXACTLY":     func(s, search string) bool { return s == search },
	"STARTS_WITH": strings.HasPrefix,
	"ENDS_WITH":   strings.HasSuffix,
	"CONTAINS":    strings.Contains,
}

// edgeRate is a RateBasedStatement keyed on the client's address: a request is over
// once more than limit requests of its address reached the rule, and matched its
// scope, within the window before it (itself included).
type edgeRate struct {
	limit  int
	window time.Duration
	scope  edgeStatement // nil: every request

	mu   sync.Mutex
	seen map[string][]time.Time // per address, the latest limit+1 at most, oldest first
}

// counts reports whether the rule counts r: whether r matches its scope.
func (q *edgeRate) counts(r *http.Request) bool { return q.scope == nil || q.scope.matches(r) }

func (q *edgeRate) over(key string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.seen) > 4096 {
		q.forget(now)
	}
	times := q.recent(q.seen[key], now)
	times = append(times, now)
	if len(times) > q.limit+1 {
		times = times[len(times)-q.limit-1:]
	}
	q.seen[key] = times
	return len(times) > q.limit
}

// recent returns the times still within the window before now.
func (q *edgeRate) recent(times []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(times) && now.Sub(times[i]) >= q.window {
		i++
	}
	return times[i:]
}

// forget drops the addresses with nothing left in the window, so that many sources
// cannot grow the table without bound.
func (q *edgeRate) forget(now time.Time) {
	for k, times := range q.seen {
		if len(q.recent(times, now)) == 0 {
			delete(q.seen, k)
		}
	}
}

// ipSetMatch is an IPSetReferenceStatement: the client's address is in one of the
// set's ranges.
type ipSetMatch []netip.Prefix

func (s ipSetMatch) matches(r *http.Request) bool {
	addr, err := netip.ParseAddr(clientAddress(r))
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range s {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
