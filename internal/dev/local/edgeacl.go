package local

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
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
	AndStatement       *struct{ Statements []aclStatement }
	OrStatement        *struct{ Statements []aclStatement }
	NotStatement       *struct{ Statement aclStatement }
	ByteMatchStatement *aclByteMatch
	RateBasedStatement *aclRate
}

type aclByteMatch struct {
	FieldToMatch struct {
		UriPath      *struct{}
		Method       *struct{}
		SingleHeader *struct{ Name string }
	}
	PositionalConstraint string
	SearchString         string
	TextTransformations  []struct {
		Priority int `json:",string"`
		Type     string
	}
}

type aclRate struct {
	Limit               int `json:",string"`
	EvaluationWindowSec int `json:",string"`
	AggregateKeyType    string
}

// contentTypes are the CustomResponseBodies content types and what they answer.
var contentTypes = map[string]string{"APPLICATION_JSON": "application/json", "TEXT_PLAIN": "text/plain", "TEXT_HTML": "text/html"}

// edge builds what a plays: its rules in priority order, each a blocking rule.
func (a webACL) edge() (*Edge, error) {
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
		rule, err := a.rule(r, e.bodies)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		e.rules = append(e.rules, rule)
	}
	return e, nil
}

func (a webACL) rule(r aclRule, bodies map[string]edgeBody) (edgeRule, error) {
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
		return out, nil
	}
	m, err := r.Statement.match()
	if err != nil {
		return edgeRule{}, err
	}
	out.match = m
	return out, nil
}

// match builds a match statement; a rate-based one may only be a rule's own.
func (s aclStatement) match() (edgeStatement, error) {
	switch {
	case s.AndStatement != nil:
		return s.list(s.AndStatement.Statements, func(l []edgeStatement) edgeStatement { return andStatement(l) })
	case s.OrStatement != nil:
		return s.list(s.OrStatement.Statements, func(l []edgeStatement) edgeStatement { return orStatement(l) })
	case s.NotStatement != nil:
		inner, err := s.NotStatement.Statement.match()
		if err != nil {
			return nil, err
		}
		return notStatement{inner}, nil
	case s.ByteMatchStatement != nil:
		return s.ByteMatchStatement.match()
	}
	return nil, errors.New("a statement the local edge does not play")
}

func (aclStatement) list(in []aclStatement, build func([]edgeStatement) edgeStatement) (edgeStatement, error) {
	if len(in) < 2 {
		return nil, errors.New("an And or Or statement needs two statements at least")
	}
	var out []edgeStatement
	for _, c := range in {
		m, err := c.match()
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
	if len(b.TextTransformations) != 1 {
		return nil, errors.New("one text transformation, NONE or LOWERCASE, is played")
	}
	switch b.TextTransformations[0].Type {
	case "NONE":
	case "LOWERCASE":
		out.lowercase = true
	default:
		return nil, fmt.Errorf("text transformation %q", b.TextTransformations[0].Type)
	}
	return out, nil
}
