// Package samtemplate reads template.yaml, the service's AWS SAM template, so that
// tests can check it against the code (table keys and indexes, function settings,
// environment variables and routes) and the local runner can play what it declares
// (the routes' throttling). It understands CloudFormation's short-form
// intrinsic functions (!Ref, !Sub, !GetAtt) well enough to resolve parameters to
// their defaults.
package samtemplate

import (
	"fmt"
	"os"
	"regexp"
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
// literal as it is, !Ref of a parameter as its default, !Sub with its parameter
// references replaced. A !Ref to a resource, a !GetAtt, or a !Sub naming a resource
// is resolved by resource, which may be nil to fail on them.
func (n Node) Resolve(resource func(expr string) (string, bool)) (string, error) {
	switch n.Tag() {
	case "":
		if n.n == nil || n.n.Kind != yaml.ScalarNode {
			return "", fmt.Errorf("samtemplate: line %d: not a scalar", n.line())
		}
		return n.n.Value, nil
	case "!Ref":
		return n.t.ref(n.n.Value, resource)
	case "!GetAtt":
		if resource != nil {
			if v, ok := resource(n.n.Value); ok {
				return v, nil
			}
		}
		return "", fmt.Errorf("samtemplate: line %d: cannot resolve !GetAtt %s", n.line(), n.n.Value)
	case "!Sub":
		var err error
		out := subVar.ReplaceAllStringFunc(n.n.Value, func(m string) string {
			v, e := n.t.ref(m[2:len(m)-1], resource)
			if e != nil && err == nil {
				err = e
			}
			return v
		})
		return out, err
	}
	return "", fmt.Errorf("samtemplate: line %d: cannot resolve %s", n.line(), n.Tag())
}

func (n Node) line() int {
	if n.n == nil {
		return 0
	}
	return n.n.Line
}

func (t *Template) ref(name string, resource func(string) (string, bool)) (string, error) {
	if p := t.Root().Get("Parameters", name); p.Exists() {
		return p.Get("Default").Str(), nil
	}
	if resource != nil {
		if v, ok := resource(name); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("samtemplate: cannot resolve %s", name)
}
