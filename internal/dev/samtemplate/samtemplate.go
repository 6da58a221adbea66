// Package samtemplate reads template.yaml, the service's AWS SAM template, so that
// tests can check it against the code (table keys and indexes, function settings,
// environment variables, routes and roles) and the local runner can play what it
// declares (the routes' throttling). It evaluates CloudFormation's intrinsic
// functions and conditions (short and long forms) for given parameter values, and
// the roles' policy statements, so that a test can ask what a role allows in a
// mode.
package samtemplate

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed SAM template.
type Template struct {
	root *yaml.Node
}

// Load parses the template at path.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, b)
}

// Parse parses a template's bytes, such as the one the repository embeds.
func Parse(b []byte) (*Template, error) { return parse("the template", b) }

func parse(name string, b []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("samtemplate: %s: %w", name, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("samtemplate: %s is not a mapping", name)
	}
	return &Template{root: doc.Content[0]}, nil
}

// Route is one HttpApi event of a function: an API Gateway route to it.
type Route struct {
	// Method and Path are the route's, such as "POST" and "/rentals".
	Method, Path string
	// Properties are the event's properties (Auth, RouteSettings, ...).
	Properties Node
}

// Routes returns the HttpApi events of the function with logical id function, in
// template order.
func (t *Template) Routes(function string) []Route {
	var out []Route
	events := t.Resource(function).Get("Properties", "Events")
	for _, name := range events.Keys() {
		ev := events.Get(name)
		if ev.Get("Type").Str() != "HttpApi" {
			continue
		}
		p := ev.Get("Properties")
		out = append(out, Route{Method: p.Get("Method").Str(), Path: p.Get("Path").Str(), Properties: p})
	}
	return out
}

// Node is a position in the template.
type Node struct {
	n *yaml.Node
	t *Template
}

// Root returns the template's top level.
func (t *Template) Root() Node { return Node{t.root, t} }

// Resource returns the resource with the given logical id, or a missing Node.
func (t *Template) Resource(logicalID string) Node { return t.Root().Get("Resources", logicalID) }

// Resources returns the logical ids of the resources of a type, in template order.
func (t *Template) Resources(typ string) []string {
	var ids []string
	res := t.Root().Get("Resources")
	for _, id := range res.Keys() {
		if res.Get(id, "Type").Str() == typ {
			ids = append(ids, id)
		}
	}
	return ids
}

// Exists reports whether the node is present.
func (n Node) Exists() bool { return n.n != nil }

// Get follows keys through mappings; a missing key yields a missing Node.
func (n Node) Get(keys ...string) Node {
	cur := n.n
	for _, k := range keys {
		if cur == nil || cur.Kind != yaml.MappingNode {
			return Node{nil, n.t}
		}
		var next *yaml.Node
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value == k {
				next = cur.Content[i+1]
				break
			}
		}
		cur = next
	}
	return Node{cur, n.t}
}

// Keys returns a mapping's keys in order.
func (n Node) Keys() []string {
	if n.n == nil || n.n.Kind != yaml.MappingNode {
		return nil
	}
	var keys []string
	for i := 0; i < len(n.n.Content); i += 2 {
		keys = append(keys, n.n.Content[i].Value)
	}
	return keys
}

// Items returns a sequence's elements.
func (n Node) Items() []Node {
	if n.n == nil || n.n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]Node, len(n.n.Content))
	for i, c := range n.n.Content {
		out[i] = Node{c, n.t}
	}
	return out
}

// Str returns a scalar's literal text ("" for anything else).
func (n Node) Str() string {
	if n.n == nil || n.n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.n.Value
}

// Tag returns a node's intrinsic function tag, such as "!Ref", or "".
func (n Node) Tag() string {
	if n.n == nil || !strings.HasPrefix(n.n.Tag, "!") || strings.HasPrefix(n.n.Tag, "!!") {
		return ""
	}
	return n.n.Tag
}

var subVar = regexp.MustCompile(`\$\{([A-Za-z0-9:.]+)\}`)

// Resolve returns a scalar's value with parameters replaced by their defaults: a
// literal as it is, !Ref of a parameter as its default, !Sub with its references
// replaced. A !Ref to a resource, a !GetAtt, or a !Sub naming a resource is
// resolved by resource, which may be nil to fail on them. It is Eval with the
// defaults, for a value that must be a string.
func (n Node) Resolve(resource func(expr string) (string, bool)) (string, error) {
	if n.n == nil {
		return "", errors.New("samtemplate: no such node")
	}
	var e Env
	if resource != nil {
		e.Resource = func(expr string) (any, bool) { return resource(expr) }
	}
	v, err := n.t.Eval(n, e)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("samtemplate: line %d: not a string", n.line())
	}
	return s, nil
}

func (n Node) line() int {
	if n.n == nil {
		return 0
	}
	return n.n.Line
}

// NoValue is what AWS::NoValue evaluates to: Eval leaves it out of the lists and
// mappings that hold it.
var NoValue = noValue{}

type noValue struct{}

// Env is what Eval evaluates a template with: parameter values over the
// parameters' defaults, and what the template's resources give to Ref and
// Fn::GetAtt.
type Env struct {
	// Params holds parameter values; a parameter it does not name has its default.
	Params map[string]string
	// Resource answers Ref of a resource (its logical id) and Fn::GetAtt
	// ("LogicalId.Attribute"); nil, or false, makes Eval fail on it.
	Resource func(expr string) (any, bool)
}

// The pseudo parameters Eval knows.
const (
	Partition = "aws"
	Region    = "us-east-1"
	AccountID = "123456789012"
)

// Param returns a parameter's value in e: its value in Params, or its default.
func (t *Template) Param(name string, e Env) (any, bool) {
	p := t.Root().Get("Parameters", name)
	if !p.Exists() {
		return nil, false
	}
	v, ok := e.Params[name]
	if !ok {
		v = p.Get("Default").Str()
	}
	if p.Get("Type").Str() == "CommaDelimitedList" {
		var out []any
		for _, s := range strings.Split(v, ",") {
			out = append(out, s)
		}
		return out, true
	}
	return v, true
}

// Condition evaluates the template's condition name in e.
func (t *Template) Condition(name string, e Env) (bool, error) {
	c := t.Root().Get("Conditions", name)
	if !c.Exists() {
		return false, fmt.Errorf("samtemplate: no condition %s", name)
	}
	v, err := t.Eval(c, e)
	if err != nil {
		return false, fmt.Errorf("samtemplate: condition %s: %w", name, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("samtemplate: condition %s is not a boolean", name)
	}
	return b, nil
}

// Present reports whether a resource (or output) with a Condition exists in e.
func (t *Template) Present(n Node, e Env) (bool, error) {
	c := n.Get("Condition")
	if !c.Exists() {
		return true, nil
	}
	return t.Condition(c.Str(), e)
}

// Function returns the intrinsic function a node calls, in its long name ("Ref",
// "Fn::If", "Condition"), and its argument; ok is false for a plain value.
func (n Node) Function() (name string, arg Node, ok bool) {
	if tag := n.Tag(); tag != "" {
		name = strings.TrimPrefix(tag, "!")
		if name != "Ref" && name != "Condition" {
			name = "Fn::" + name
		}
		// The argument is the node itself, without its tag.
		c := *n.n
		c.Tag = ""
		return name, Node{&c, n.t}, true
	}
	if keys := n.Keys(); len(keys) == 1 && (keys[0] == "Ref" || keys[0] == "Condition" || strings.HasPrefix(keys[0], "Fn::")) {
		return keys[0], n.Get(keys[0]), true
	}
	return "", Node{}, false
}

// Eval evaluates a node in e: scalars as strings, sequences as []any, mappings as
// map[string]any, conditions as bool, with the intrinsic functions Ref, Condition,
// Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::Split, Fn::If, Fn::Equals,
// Fn::Not, Fn::And and Fn::Or, and the rule function Fn::Contains. AWS::NoValue is NoValue, left out of lists and
// mappings.
func (t *Template) Eval(n Node, e Env) (any, error) {
	if !n.Exists() {
		return nil, errors.New("samtemplate: no such node")
	}
	if name, arg, ok := n.Function(); ok {
		v, err := t.call(name, arg, e)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n.line(), err)
		}
		return v, nil
	}
	switch n.n.Kind {
	case yaml.ScalarNode:
		return n.n.Value, nil
	case yaml.SequenceNode:
		out := []any{}
		for _, item := range n.Items() {
			v, err := t.Eval(item, e)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out = append(out, v)
			}
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		for _, k := range n.Keys() {
			v, err := t.Eval(n.Get(k), e)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out[k] = v
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("samtemplate: line %d: cannot evaluate", n.line())
}

func (t *Template) ref(name string, e Env) (any, error) {
	switch name {
	case "AWS::NoValue":
		return NoValue, nil
	case "AWS::Partition":
		return Partition, nil
	case "AWS::Region":
		return Region, nil
	case "AWS::AccountId":
		return AccountID, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	if v, ok := t.Param(name, e); ok {
		return v, nil
	}
	if e.Resource != nil {
		if v, ok := e.Resource(name); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("samtemplate: cannot resolve %s", name)
}

// call evaluates the intrinsic function name with its argument arg in e.
func (t *Template) call(name string, arg Node, e Env) (any, error) {
	switch name {
	case "Ref":
		return t.ref(arg.Str(), e)
	case "Condition":
		return t.Condition(arg.Str(), e)
	case "Fn::GetAtt":
		return getAtt(arg, e)
	case "Fn::Sub":
		return t.sub(arg, e)
	case "Fn::If":
		return t.ifThenElse(arg, e)
	case "Fn::Join":
		return t.withArgs(name, arg, e, 2, join)
	case "Fn::Select":
		return t.withArgs(name, arg, e, 2, selectItem)
	case "Fn::Split":
		return t.withArgs(name, arg, e, 2, split)
	case "Fn::Equals":
		return t.withArgs(name, arg, e, 2, equals)
	case "Fn::Contains": // a rule function
		return t.withArgs(name, arg, e, 2, contains)
	case "Fn::Not", "Fn::And", "Fn::Or":
		return t.withArgs(name, arg, e, -1, func(list []any) (any, error) { return logical(name, list) })
	}
	return nil, fmt.Errorf("samtemplate: cannot evaluate %s", name)
}

// withArgs evaluates the argument of the function name, a list of n values (any
// number if n is negative), and applies fn to it.
func (t *Template) withArgs(name string, arg Node, e Env, n int, fn func(list []any) (any, error)) (any, error) {
	v, err := t.Eval(arg, e)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok || (n >= 0 && len(list) != n) {
		return nil, fmt.Errorf("samtemplate: %s takes %d arguments", name, n)
	}
	return fn(list)
}

// getAtt evaluates Fn::GetAtt, in its short ("Resource.Attribute") or long
// ([Resource, Attribute]) form, through e.Resource.
func getAtt(arg Node, e Env) (any, error) {
	expr := arg.Str()
	if items := arg.Items(); len(items) == 2 {
		expr = items[0].Str() + "." + items[1].Str()
	}
	if e.Resource != nil {
		if v, ok := e.Resource(expr); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("samtemplate: cannot resolve Fn::GetAtt %s", expr)
}

// sub evaluates Fn::Sub, in its short (text) or long ([text, variables]) form:
// each ${Name} of the text is the variable of that name, else what subRef
// resolves it to. The first name that cannot be resolved is the error.
func (t *Template) sub(arg Node, e Env) (any, error) {
	text, vars := arg.Str(), map[string]any{}
	if items := arg.Items(); len(items) == 2 {
		text = items[0].Str()
		for _, k := range items[1].Keys() {
			v, err := t.Eval(items[1].Get(k), e)
			if err != nil {
				return nil, err
			}
			vars[k] = v
		}
	}
	var err error
	out := subVar.ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := vars[name]
		if !ok {
			var refErr error
			if v, refErr = t.subRef(name, e); refErr != nil && err == nil {
				err = refErr
			}
		}
		s, _ := v.(string)
		return s
	})
	return out, err
}

// subRef resolves a ${Name} of Fn::Sub that is not one of its variables: a
// Resource.Attribute through e.Resource, anything else (a parameter, a pseudo
// parameter such as AWS::Region, a resource) as Ref does.
func (t *Template) subRef(name string, e Env) (any, error) {
	if !strings.Contains(name, ".") || strings.HasPrefix(name, "AWS::") {
		return t.ref(name, e)
	}
	if e.Resource != nil {
		if v, found := e.Resource(name); found && v != nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("samtemplate: cannot resolve %s", name)
}

// ifThenElse evaluates Fn::If: [condition, value if true, value if false].
func (t *Template) ifThenElse(arg Node, e Env) (any, error) {
	items := arg.Items()
	if len(items) != 3 {
		return nil, errors.New("samtemplate: Fn::If takes 3 arguments")
	}
	ok, err := t.Condition(items[0].Str(), e)
	if err != nil {
		return nil, err
	}
	if ok {
		return t.Eval(items[1], e)
	}
	return t.Eval(items[2], e)
}

// join evaluates Fn::Join: [separator, list].
func join(list []any) (any, error) {
	sep, _ := list[0].(string)
	parts, ok := list[1].([]any)
	if !ok {
		return nil, errors.New("samtemplate: Fn::Join of no list")
	}
	var ss []string
	for _, p := range parts {
		s, _ := p.(string)
		ss = append(ss, s)
	}
	return strings.Join(ss, sep), nil
}

// selectItem evaluates Fn::Select: [index, list].
func selectItem(list []any) (any, error) {
	i, err := strconv.Atoi(fmt.Sprint(list[0]))
	items, ok := list[1].([]any)
	if err != nil || !ok || i < 0 || i >= len(items) {
		return nil, fmt.Errorf("samtemplate: Fn::Select cannot select index %v of %v", list[0], list[1])
	}
	return items[i], nil
}

// split evaluates Fn::Split: [separator, string].
func split(list []any) (any, error) {
	sep, _ := list[0].(string)
	s, ok := list[1].(string)
	if !ok {
		return nil, errors.New("samtemplate: Fn::Split of no string")
	}
	var out []any
	for _, p := range strings.Split(s, sep) {
		out = append(out, p)
	}
	return out, nil
}

// equals evaluates Fn::Equals: [value, value], compared as text.
func equals(list []any) (any, error) { return fmt.Sprint(list[0]) == fmt.Sprint(list[1]), nil }

// contains evaluates the rule function Fn::Contains: [list, value].
func contains(list []any) (any, error) {
	items, ok := list[0].([]any)
	if !ok {
		return nil, errors.New("samtemplate: Fn::Contains of no list")
	}
	return slices.Contains(items, list[1]), nil
}

// logical evaluates Fn::Not (of one condition), Fn::And and Fn::Or (of two or
// more).
func logical(name string, list []any) (any, error) {
	var bs []bool
	for _, v := range list {
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("samtemplate: %s of no condition", name)
		}
		bs = append(bs, b)
	}
	switch {
	case name == "Fn::Not" && len(bs) == 1:
		return !bs[0], nil
	case name == "Fn::And" && len(bs) >= 2:
		return !slices.Contains(bs, false), nil
	case name == "Fn::Or" && len(bs) >= 2:
		return slices.Contains(bs, true), nil
	}
	return nil, fmt.Errorf("samtemplate: %s with %d conditions", name, len(bs))
}
