package apicontract_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"

	"github.com/bikerental/bikerental/internal/testkit/apicontract"
)

// TestEveryComponentIsUsed reads the document as YAML and follows every $ref from
// the parts outside components (and the security requirements' scheme names),
// transitively: every component must be reached, as a linter of the document
// requires. A component nothing refers to is one no tool reads.
func TestEveryComponentIsUsed(t *testing.T) {
	c := apicontract.MustLoad(t)
	raw, err := os.ReadFile(c.File())
	if err != nil {
		t.Fatal(err)
	}
	if unused := unusedComponents(t, raw); len(unused) > 0 {
		t.Errorf("components nothing refers to: %s", strings.Join(unused, ", "))
	}
}

// TestUnusedComponentsAreFound is the check above on a document with a component
// that only an unused component refers to, and one that nothing does.
func TestUnusedComponentsAreFound(t *testing.T) {
	doc := `
openapi: 3.1.0
security: [{bearer: []}]
paths:
  /a:
    get:
      responses:
        '200': {$ref: '#/components/responses/Used'}
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
    unusedScheme: {type: http, scheme: basic}
  responses:
    Used: {description: x, content: {application/json: {schema: {$ref: '#/components/schemas/Deep'}}}}
    Orphan: {description: x, content: {application/json: {schema: {$ref: '#/components/schemas/OrphansOwn'}}}}
  schemas:
    Deep: {type: object, properties: {a: {$ref: '#/components/schemas/Deeper'}}}
    Deeper: {type: string}
    OrphansOwn: {type: string}
`
	got := unusedComponents(t, []byte(doc))
	want := []string{"responses/Orphan", "schemas/OrphansOwn", "securitySchemes/unusedScheme"}
	if !slices.Equal(got, want) {
		t.Errorf("unused = %v, want %v", got, want)
	}
}

// unusedComponents returns "kind/name" of every component of the YAML document
// raw that is not reached from outside components, sorted.
func unusedComponents(t *testing.T, raw []byte) []string {
	t.Helper()
	var root map[string]any
	if err := yaml.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	components, _ := root["components"].(map[string]any)
	reached := map[string]bool{}
	var queue []string
	visit := func(node any) {
		var walk func(any)
		walk = func(n any) {
			switch v := n.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok {
					if key, ok := strings.CutPrefix(ref, "#/components/"); ok && !reached[key] {
						reached[key] = true
						queue = append(queue, key)
					}
				}
				if reqs, ok := v["security"].([]any); ok {
					for _, req := range reqs {
						for name := range req.(map[string]any) {
							reached["securitySchemes/"+name] = true
						}
					}
				}
				for _, child := range v {
					walk(child)
				}
			case []any:
				for _, child := range v {
					walk(child)
				}
			}
		}
		walk(node)
	}
	for key, part := range root {
		if key != "components" {
			visit(map[string]any{key: part})
		}
	}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		kind, name, _ := strings.Cut(key, "/")
		if group, ok := components[kind].(map[string]any); ok {
			visit(group[name])
		}
	}
	var unused []string
	for kind, group := range components {
		for name := range group.(map[string]any) {
			if !reached[kind+"/"+name] {
				unused = append(unused, kind+"/"+name)
			}
		}
	}
	sort.Strings(unused)
	return unused
}

// TestEveryPathParameterAndRequestBodyHasAnExample holds what tools that generate
// requests from the document need: an example of every path parameter and of
// every request body's every media type.
func TestEveryPathParameterAndRequestBodyHasAnExample(t *testing.T) {
	doc := apicontract.MustLoad(t).Document()
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := strings.ToUpper(method) + " " + path
			for _, p := range slices.Concat(item.Parameters, op.Parameters) {
				if p.Value.In == openapi3.ParameterInPath && p.Value.Example == nil && len(p.Value.Examples) == 0 {
					t.Errorf("%s: path parameter %s has no example", where, p.Value.Name)
				}
			}
			if op.RequestBody == nil {
				continue
			}
			for mediaType, content := range op.RequestBody.Value.Content {
				if content.Example == nil && len(content.Examples) == 0 {
					t.Errorf("%s: request body %s has no example", where, mediaType)
				}
			}
		}
	}
}

// TestEveryExampleValidates validates every example of the document against its
// schema: those of parameters, of request and response bodies, and the schemas'
// own, so that an example a tool sends is one the API takes. The document is read
// without the loader's own validation, so that this test holds the rule by
// itself.
func TestEveryExampleValidates(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile(apicontract.MustLoad(t).File())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	check := func(where string, schema *openapi3.SchemaRef, value any) {
		t.Helper()
		n++
		if schema == nil || schema.Value == nil {
			t.Errorf("%s: an example without a schema", where)
			return
		}
		if err := schema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			t.Errorf("%s: the example %v does not validate: %v", where, value, err)
		}
	}
	parameter := func(where string, p *openapi3.Parameter) {
		where += " parameter " + p.Name
		if p.Example != nil {
			check(where, p.Schema, p.Example)
		}
		for name, ex := range p.Examples {
			check(where+" example "+name, p.Schema, ex.Value.Value)
		}
	}
	content := func(where string, c openapi3.Content) {
		for mediaType, m := range c {
			if m.Example != nil {
				check(where+" "+mediaType, m.Schema, m.Example)
			}
			for name, ex := range m.Examples {
				check(where+" "+mediaType+" example "+name, m.Schema, ex.Value.Value)
			}
		}
	}
	for _, p := range doc.Components.Parameters {
		parameter("components", p.Value)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := strings.ToUpper(method) + " " + path
			for _, p := range slices.Concat(item.Parameters, op.Parameters) {
				parameter(where, p.Value)
			}
			if op.RequestBody != nil {
				content(where+" request", op.RequestBody.Value.Content)
			}
			for status, r := range op.Responses.Map() {
				content(where+" "+status, r.Value.Content)
			}
		}
	}
	seen := map[*openapi3.Schema]bool{}
	var schema func(where string, s *openapi3.SchemaRef)
	schema = func(where string, s *openapi3.SchemaRef) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		seen[s.Value] = true
		if s.Value.Example != nil {
			check(where, s, s.Value.Example)
		}
		for i, ex := range s.Value.Examples {
			check(fmt.Sprintf("%s example %d", where, i), s, ex)
		}
		for name, p := range s.Value.Properties {
			schema(where+"."+name, p)
		}
		for _, group := range []openapi3.SchemaRefs{s.Value.OneOf, s.Value.AnyOf, s.Value.AllOf} {
			for i, sub := range group {
				schema(fmt.Sprintf("%s[%d]", where, i), sub)
			}
		}
		schema(where+"[]", s.Value.Items)
	}
	for name, s := range doc.Components.Schemas {
		schema("components.schemas."+name, s)
	}
	if n == 0 {
		t.Fatal("the document has no examples at all")
	}
}
