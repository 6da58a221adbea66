package orders_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"gopkg.in/yaml.v3"

	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/examples/orders"
)

// plain is a YAML node as plain values, a CloudFormation short form ("!Sub x") as
// its long one ({"Fn::Sub": x}, {"Ref": x}), so that two spellings of one template
// compare equal.
func plain(n *yaml.Node) any {
	if tag, ok := strings.CutPrefix(n.Tag, "!"); ok && !strings.HasPrefix(tag, "!") {
		long := "Fn::" + tag
		if tag == "Ref" {
			long = tag
		}
		bare := *n
		bare.Tag = ""
		return map[string]any{long: plain(&bare)}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		return plain(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			s = append(s, plain(c))
		}
		return s
	case yaml.AliasNode:
		return plain(n.Alias)
	}
	return n.Value
}

func parse(t *testing.T, src string) map[string]any {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	m, ok := plain(&doc).(map[string]any)
	if !ok {
		t.Fatalf("not a mapping: %v", plain(&doc))
	}
	return m
}

// get follows path through nested mappings; nil where it leads nowhere.
func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func template(t *testing.T) map[string]any {
	t.Helper()
	src, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, string(src))
}

// TestTheDeadlinesTableIsTheModules holds template.yaml's Deadlines table equal,
// name and all, to the resource the deadlines module gives for a deployment,
// which the module holds equal to the table its tests create.
func TestTheDeadlinesTableIsTheModules(t *testing.T) {
	ours := get(template(t), "Resources", "DeadlinesTable")
	theirs := get(parse(t, dynamo.CloudFormation()), "DeadlinesTable")
	if ours == nil || theirs == nil {
		t.Fatalf("DeadlinesTable: ours %v, the module's %v", ours, theirs)
	}
	if !reflect.DeepEqual(ours, theirs) {
		t.Errorf("template.yaml's DeadlinesTable:\n%v\nthe module's:\n%v", ours, theirs)
	}
}

// TestTheOrdersTableIsTheTestsOrders holds template.yaml's Orders table to the
// keys and stream of orders.Definition, the table the tests create.
func TestTheOrdersTableIsTheTestsOrders(t *testing.T) {
	props := get(template(t), "Resources", "OrdersTable", "Properties")
	def := orders.Definition("x")
	var attrs, keys []any
	for _, a := range def.AttributeDefinitions {
		attrs = append(attrs, map[string]any{"AttributeName": aws.ToString(a.AttributeName), "AttributeType": string(a.AttributeType)})
	}
	for _, k := range def.KeySchema {
		keys = append(keys, map[string]any{"AttributeName": aws.ToString(k.AttributeName), "KeyType": string(k.KeyType)})
	}
	for name, want := range map[string]any{
		"AttributeDefinitions": attrs,
		"KeySchema":            keys,
		"BillingMode":          string(def.BillingMode),
		"StreamSpecification":  map[string]any{"StreamViewType": string(def.StreamSpecification.StreamViewType)},
	} {
		if got := get(props, name); !reflect.DeepEqual(got, want) {
			t.Errorf("OrdersTable %s: %v, want %v", name, got, want)
		}
	}
}

// TestTheFunctionsAreGivenTheirTables: both functions read ORDERS_TABLE and
// DEADLINES_TABLE (deadline.New), which name the template's two tables.
func TestTheFunctionsAreGivenTheirTables(t *testing.T) {
	tmpl := template(t)
	want := map[string]any{"ORDERS_TABLE": map[string]any{"Ref": "OrdersTable"}, "DEADLINES_TABLE": map[string]any{"Ref": "DeadlinesTable"}}
	if got := get(tmpl, "Globals", "Function", "Environment", "Variables"); !reflect.DeepEqual(got, want) {
		t.Errorf("the functions' environment %v, want %v", got, want)
	}
	for _, fn := range []string{"ProjectorFunction", "SweepFunction"} {
		if env := get(tmpl, "Resources", fn, "Properties", "Environment"); env != nil {
			t.Errorf("%s overrides the environment: %v", fn, env)
		}
	}
	if got := get(tmpl, "Resources", "SweepFunction", "Properties", "Events", "EveryMinute", "Properties", "ScheduleExpression"); got != "rate(1 minute)" {
		t.Errorf("the sweep's schedule %v, want rate(1 minute)", got)
	}
}
