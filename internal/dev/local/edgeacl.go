package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// webACL is the part of an AWS::WAFv2::WebACL's properties the edge plays, as the
// template gives it (every number a string, as the template's scalars are). A field
// it does not know fails the decoding.
type webACL struct {
	Name                 string
	Description          string
	Scope                string
	DefaultAction        struct{ Allow *struct{} }
	VisibilityConfig     any
	CustomResponseBodies map[string]struct{ ContentType, Content string }
	Rules                []aclRule
}

type aclRule struct {
	Name     string
	Priority int `json:",string"`
	Action   struct {
		Block *struct{ CustomResponse *aclResponse }
	}
	VisibilityConfig any
	Statement        aclStatement
}

type aclResponse struct {
	ResponseCode          int `json:",string"`
	CustomResponseBodyKey string
	ResponseHeaders       []struct{ Name, Value string }
}

type aclStatement struct {
	AndStatement            *struct{ Statements []aclStatement }
	OrStatement             *struct{ Statements []aclStatement }
	NotStatement            *struct{ Statement aclStatement }
	ByteMatchStatement      *aclByteMatch
	IPSetReferenceStatement *struct{ Arn string }
	RateBasedStatement      *aclRate
}

// ipSets are the template's AWS::WAFv2::IPSet resources by the ARN an
// IPSetReferenceStatement names them with, each its address ranges.
type ipSets map[string][]netip.Prefix

type aclByteMatch struct {
	FieldToMatch struct {
		UriPath      *struct{}
		Method       *struct{}
		SingleHeader *struct{ Name string }
	}
	PositionalConstraint string
	SearchString         string
	TextTransformations  []aclTransformation
}

type aclTransformation struct {
	Priority int `json:",string"`
	Type     string
}

type aclRate struct {
	Limit               int `json:",string"`
	EvaluationWindowSec int `json:",string"`
	AggregateKeyType    string
	ScopeDownStatement  *aclStatement
}

// contentTypes are the CustomResponseBodies content types and what they answer.
var contentTypes = map[string]string{"APPLICATION_JSON": "application/json", "TEXT_PLAIN": "text/plain", "TEXT_HTML": "text/html"}

// edge builds what a plays, with the IP sets its statements may reference: its
// rules in priority order, each a blocking rule.
func (a webACL) edge(sets ipSets) (*Edge, error) {
	if a.DefaultAction.Allow == nil {
		return nil, errors.New("the default action must be Allow")
	}
	e := &Edge{bodies: map[string]edgeBody{}}
	for key, b := range a.CustomResponseBodies {
		ct, ok := contentTypes[b.ContentType]
		if !ok {
			return nil, fmt.Errorf("response body %s: content type %q", key, b.ContentType)
		}
		e.bodies[key] = edgeBody{contentType: ct, content: []byte(b.Content)}
	}
	rules := slices.Clone(a.Rules)
	slices.SortStableFunc(rules, func(x, y aclRule) int { return x.Priority - y.Priority })
	for i, r := range rules {
		if i > 0 && r.Priority == rules[i-1].Priority {
			return nil, fmt.Errorf("rules %s and %s share priority %d", rules[i-1].Name, r.Name, r.Priority)
		}
		rule, err := a.rule(r, e.bodies, sets)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		e.rules = append(e.rules, rule)
		e.capacity += r.Statement.capacity()
	}
	return e, nil
}

// capacity is what s costs in web ACL capacity units, as AWS WAF's developer guide
// prices each statement it may hold once the edge has accepted it: a string match
// 2 (exactly, starts with, ends with) or 10 (contains), plus 10 a text
// transformation other than NONE; an IP set reference 1; a rate-based statement 2,
// keyed on the address, plus its scope-down statement; And, Or and Not what they
// hold.
func (s aclStatement) capacity() int {
	sum := func(in []aclStatement) int {
		n := 0
		for _, c := range in {
			n += c.capacity()
		}
		return n
	}
	switch {
	case s.AndStatement != nil:
		return sum(s.AndStatement.Statements)
	case s.OrStatement != nil:
		return sum(s.OrStatement.Statements)
	case s.NotStatement != nil:
		return s.NotStatement.Statement.capacity()
	case s.ByteMatchStatement != nil:
		n := 2
		if s.ByteMatchStatement.PositionalConstraint == "CONTAINS" {
			n = 10
		}
		for _, t := range s.ByteMatchStatement.TextTransformations {
			if t.Type != "NONE" {
				n += 10
			}
		}
		return n
	case s.IPSetReferenceStatement != nil:
		return 1
	case s.RateBasedStatement != nil:
		n := 2
		if q := s.RateBasedStatement.ScopeDownStatement; q != nil {
			n += q.capacity()
		}
		return n
	}
	return 0
}

func (a webACL) rule(r aclRule, bodies map[string]edgeBody, sets ipSets) (edgeRule, error) {
	block := r.Action.Block
	if block == nil {
		return edgeRule{}, errors.New("only Block actions are played")
	}
	out := edgeRule{name: r.Name, answer: edgeAnswer{status: http.StatusForbidden}}
	if c := block.CustomResponse; c != nil {
		if c.ResponseCode < 200 || c.ResponseCode > 599 {
			return edgeRule{}, fmt.Errorf("response code %d", c.ResponseCode)
		}
		if _, ok := bodies[c.CustomResponseBodyKey]; c.CustomResponseBodyKey != "" && !ok {
			return edgeRule{}, fmt.Errorf("no response body %s", c.CustomResponseBodyKey)
		}
		out.answer = edgeAnswer{status: c.ResponseCode, body: c.CustomResponseBodyKey}
		for _, h := range c.ResponseHeaders {
			out.answer.headers = append(out.answer.headers, [2]string{h.Name, h.Value})
		}
	}
	if q := r.Statement.RateBasedStatement; q != nil {
		if q.AggregateKeyType != "IP" || q.Limit < 10 || !slices.Contains([]int{60, 120, 300, 600}, q.EvaluationWindowSec) {
			return edgeRule{}, fmt.Errorf("a rate-based statement is played keyed on IP, with a limit of at least 10 and a window of 60, 120, 300 or 600 s: %+v", *q)
		}
		out.rate = &edgeRate{limit: q.Limit, window: time.Duration(q.EvaluationWindowSec) * time.Second, seen: map[string][]time.Time{}}
		if q.ScopeDownStatement != nil {
			scope, err := q.ScopeDownStatement.match(sets)
			if err != nil {
				return edgeRule{}, fmt.Errorf("scope-down statement: %w", err)
			}
			out.rate.scope = scope
		}
		return out, nil
	}
	m, err := r.Statement.match(sets)
	if err != nil {
		return edgeRule{}, err
	}
	out.match = m
	return out, nil
}

// match builds a match statement; a rate-based one may only be a rule's own.
func (s aclStatement) match(sets ipSets) (edgeStatement, error) {
	switch {
	case s.AndStatement != nil:
		return s.list(s.AndStatement.Statements, sets, func(l []edgeStatement) edgeStatement { return andStatement(l) })
	case s.OrStatement != nil:
		return s.list(s.OrStatement.Statements, sets, func(l []edgeStatement) edgeStatement { return orStatement(l) })
	case s.NotStatement != nil:
		inner, err := s.NotStatement.Statement.match(sets)
		if err != nil {
			return nil, err
		}
		return notStatement{inner}, nil
	case s.ByteMatchStatement != nil:
		return s.ByteMatchStatement.match()
	case s.IPSetReferenceStatement != nil:
		ranges, ok := sets[s.IPSetReferenceStatement.Arn]
		if !ok {
			return nil, fmt.Errorf("an IP set the template does not declare: %q", s.IPSetReferenceStatement.Arn)
		}
		return ipSetMatch(ranges), nil
	}
	return nil, errors.New("a statement the local edge does not play")
}

func (aclStatement) list(in []aclStatement, sets ipSets, build func([]edgeStatement) edgeStatement) (edgeStatement, error) {
	if len(in) < 2 {
		return nil, errors.New("an And or Or statement needs two statements at least")
	}
	var out []edgeStatement
	for _, c := range in {
		m, err := c.match(sets)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return build(out), nil
}

func (b aclByteMatch) match() (edgeStatement, error) {
	out := byteMatch{search: b.SearchString}
	f := b.FieldToMatch
	switch {
	case f.UriPath != nil:
		out.field = func(r *http.Request) (string, bool) { return r.URL.EscapedPath(), true }
	case f.Method != nil:
		out.field = func(r *http.Request) (string, bool) { return r.Method, true }
	case f.SingleHeader != nil && f.SingleHeader.Name != "":
		name := f.SingleHeader.Name
		out.field = func(r *http.Request) (string, bool) {
			vs := r.Header.Values(name)
			return strings.Join(vs, ","), len(vs) > 0
		}
	default:
		return nil, errors.New("a byte match is played on UriPath, Method or SingleHeader")
	}
	if out.compare = positional[b.PositionalConstraint]; out.compare == nil {
		return nil, fmt.Errorf("positional constraint %q", b.PositionalConstraint)
	}
	if b.SearchString == "" {
		return nil, errors.New("an empty search string")
	}
	transforms, err := transformations(b.TextTransformations, b.SearchString)
	if err != nil {
		return nil, err
	}
	out.transforms = transforms
	return out, nil
}

// transforms are the text transformations the edge plays, as AWS WAF documents them:
// URL_DECODE decodes each %XX (a % not followed by two hex digits is kept as it
// is), LOWERCASE maps A-Z to a-z and nothing else.
var transforms = map[string]func(string) string{"LOWERCASE": asciiLower, "URL_DECODE": urlDecode}

// transformations returns a byte match's text transformations in the order AWS WAF
// applies them: by priority, lowest first. NONE must stand alone; priorities must
// differ. A search string the transformed text could never equal (an upper-case
// letter after LOWERCASE) or whose match would turn on how an undocumented corner
// of URL_DECODE is read (a %, a + or a space in it) is refused.
func transformations(in []aclTransformation, search string) ([]func(string) string, error) {
	if len(in) == 0 {
		return nil, errors.New("a byte match needs a text transformation (NONE for none)")
	}
	if len(in) == 1 && in[0].Type == "NONE" {
		return nil, nil
	}
	sorted := slices.Clone(in)
	slices.SortFunc(sorted, func(x, y aclTransformation) int { return x.Priority - y.Priority })
	var out []func(string) string
	for i, t := range sorted {
		if i > 0 && t.Priority == sorted[i-1].Priority {
			return nil, fmt.Errorf("text transformations %s and %s share priority %d", sorted[i-1].Type, t.Type, t.Priority)
		}
		f, ok := transforms[t.Type]
		if !ok {
			return nil, fmt.Errorf("text transformation %q (NONE alone, LOWERCASE and URL_DECODE are played)", t.Type)
		}
		switch {
		case t.Type == "LOWERCASE" && asciiLower(search) != search:
			return nil, fmt.Errorf("search string %q has upper-case letters, which LOWERCASE leaves nothing to match", search)
		case t.Type == "URL_DECODE" && strings.ContainsAny(search, "%+ "):
			return nil, fmt.Errorf("search string %q holds a %%, + or space, whose match after URL_DECODE the edge cannot play for sure", search)
		}
		out = append(out, f)
	}
	return out, nil
}

// asciiLower maps the bytes A-Z to a-z, leaving every other byte as it is.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// urlDecode replaces each %XX (hex digits of either case) by its byte, once.
func urlDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// ipSetResource is the template's type of an IP set.
const ipSetResource = "AWS::WAFv2::IPSet"

// ipSetArn answers Fn::GetAtt of an IP set's Arn in tpl with the name the edge
// knows it by.
func ipSetArn(tpl *samtemplate.Template) func(expr string) (any, bool) {
	return func(expr string) (any, bool) {
		id, ok := strings.CutSuffix(expr, ".Arn")
		if !ok || tpl.Resource(id).Get("Type").Str() != ipSetResource {
			return nil, false
		}
		return "ipset/" + id, true
	}
}

// templateIPSets returns every IP set tpl declares, its addresses evaluated in env.
// An IP set the edge would play wrong is an error: one not of scope CLOUDFRONT or
// not of IPv4 addresses, an address that is not a CIDR block in its shortest form,
// and /0, which AWS WAF does not take.
func templateIPSets(tpl *samtemplate.Template, env samtemplate.Env) (ipSets, error) {
	sets := ipSets{}
	resources := tpl.Root().Get("Resources")
	for _, id := range resources.Keys() {
		if resources.Get(id, "Type").Str() != ipSetResource {
			continue
		}
		v, err := tpl.Eval(resources.Get(id, "Properties"), env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		var set struct {
			Name, Description, Scope, IPAddressVersion string
			Addresses                                  []string
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&set); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		if set.Scope != "CLOUDFRONT" || set.IPAddressVersion != "IPV4" {
			return nil, fmt.Errorf("%s: an IP set is played of scope CLOUDFRONT and IPV4 addresses, not %s and %s", id, set.Scope, set.IPAddressVersion)
		}
		var ranges []netip.Prefix
		for _, a := range set.Addresses {
			p, err := netip.ParsePrefix(a)
			if err != nil || !p.Addr().Is4() || p.Bits() == 0 || p != p.Masked() {
				return nil, fmt.Errorf("%s: address %q is not an IPv4 CIDR block in its shortest form (and not /0)", id, a)
			}
			ranges = append(ranges, p)
		}
		sets["ipset/"+id] = ranges
	}
	return sets, nil
}
