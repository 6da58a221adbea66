package dynamo_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/bikerental/bikerental/deadlines/dynamo"
)

// TestTheCloudFormationResourceIsTheDefinition: the deployed table has the
// attributes, keys, index and billing of the one tests create, with the TTL on
// the markers' expiry, point-in-time recovery and encryption at rest.
func TestTheCloudFormationResourceIsTheDefinition(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(dynamo.CloudFormation()), &doc); err != nil {
		t.Fatal(err)
	}
	resources, ok := fromYAML(t, &doc).(map[string]any)
	if !ok || len(resources) != 1 {
		t.Fatalf("want one resource, got %v", resources)
	}
	resource := resources["DeadlinesTable"].(map[string]any)
	if resource["Type"] != "AWS::DynamoDB::Table" {
		t.Errorf("Type %v", resource["Type"])
	}
	props := resource["Properties"].(map[string]any)
	if want := map[string]any{"Fn::Sub": "${AWS::StackName}-deadlines"}; !reflect.DeepEqual(props["TableName"], want) {
		t.Errorf("TableName %v, want %v", props["TableName"], want)
	}
	ttl := dynamo.TTL("x").TimeToLiveSpecification
	for name, want := range map[string]any{
		"TimeToLiveSpecification":          map[string]any{"AttributeName": aws.ToString(ttl.AttributeName), "Enabled": aws.ToBool(ttl.Enabled)},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"SSESpecification":                 map[string]any{"SSEEnabled": true},
	} {
		if !reflect.DeepEqual(props[name], want) {
			t.Errorf("%s %v, want %v", name, props[name], want)
		}
		delete(props, name)
	}
	delete(props, "TableName")
	def := asJSON(t, dynamo.Definition("x")).(map[string]any)
	delete(def, "TableName")
	if !reflect.DeepEqual(props, def) {
		t.Errorf("the resource's other properties:\n%v\nwant Definition's:\n%v", props, def)
	}
}

// fromYAML is n as plain values, a CloudFormation short form ("!Sub x") as its
// long one ({"Fn::Sub": x}, {"Ref": x}).
func fromYAML(t *testing.T, n *yaml.Node) any {
	t.Helper()
	if tag, ok := strings.CutPrefix(n.Tag, "!"); ok && !strings.HasPrefix(tag, "!") {
		long := "Fn::" + tag
		if tag == "Ref" {
			long = tag
		}
		plain := *n
		plain.Tag = ""
		return map[string]any{long: fromYAML(t, &plain)}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		return fromYAML(t, n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i < len(n.Content); i += 2 {
			m[n.Content[i].Value] = fromYAML(t, n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			s = append(s, fromYAML(t, c))
		}
		return s
	}
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// asJSON is v as JSON values, without the fields it leaves unset (nil, empty or
// ""): the SDK's names of a table's properties are CloudFormation's.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return pruned(out)
}

func pruned(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e = pruned(e); e == nil || e == "" || reflect.DeepEqual(e, []any{}) || reflect.DeepEqual(e, map[string]any{}) {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
	case []any:
		for i, e := range v {
			v[i] = pruned(e)
		}
	}
	return v
}

// TestCreateMakesTheDefinedTableWithItsTTL, and a second Create changes nothing.
func TestCreateMakesTheDefinedTableWithItsTTL(t *testing.T) {
	client, name := newTable(t)
	if err := dynamo.Create(context.Background(), client, name); err != nil {
		t.Fatalf("Create again: %v", err)
	}
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	def := dynamo.Definition(name)
	got := out.Table
	if len(got.GlobalSecondaryIndexes) != 1 || aws.ToString(got.GlobalSecondaryIndexes[0].IndexName) != aws.ToString(def.GlobalSecondaryIndexes[0].IndexName) ||
		got.GlobalSecondaryIndexes[0].Projection.ProjectionType != types.ProjectionTypeKeysOnly ||
		!reflect.DeepEqual(asJSON(t, got.KeySchema), asJSON(t, def.KeySchema)) ||
		!reflect.DeepEqual(asJSON(t, got.GlobalSecondaryIndexes[0].KeySchema), asJSON(t, def.GlobalSecondaryIndexes[0].KeySchema)) {
		t.Errorf("created %s: keys %v, indexes %v; want Definition's", name, asJSON(t, got.KeySchema), asJSON(t, got.GlobalSecondaryIndexes))
	}
	ttl, err := client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled ||
		aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expiresAt" {
		t.Errorf("TTL %+v, %v; want enabled on expiresAt", ttl.TimeToLiveDescription, err)
	}
}
