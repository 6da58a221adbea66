package samtemplate_test

import (
	"fmt"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// ruleFunctions are the functions CloudFormation allows in a template's Rules (in
// RuleCondition and Assertions), and the only ones: any other, nested or not, makes
// CloudFormation refuse the template.
var ruleFunctions = map[string]bool{
	"Fn::And": true, "Fn::Contains": true, "Fn::EachMemberEquals": true, "Fn::EachMemberIn": true, "Fn::Equals": true,
	"Fn::Not": true, "Fn::Or": true, "Fn::RefAll": true, "Fn::ValueOf": true, "Fn::ValueOfAll": true, "Ref": true,
}

// TestRulesUseRuleFunctionsOnly walks every entry of the template's Rules and
// refuses any function that is not a rule function.
func TestRulesUseRuleFunctionsOnly(t *testing.T) {
	tpl := load(t)
	rules := tpl.Root().Get("Rules")
	if len(rules.Keys()) == 0 {
		t.Fatal("the template has no Rules")
	}
	var walk func(path string, n samtemplate.Node)
	walk = func(path string, n samtemplate.Node) {
		if name, arg, ok := n.Function(); ok {
			if !ruleFunctions[name] {
				t.Errorf("%s: %s is not a rule function", path, name)
			}
			n, path = arg, path+"."+name
		}
		for _, k := range n.Keys() {
			walk(path+"."+k, n.Get(k))
		}
		for i, item := range n.Items() {
			walk(fmt.Sprintf("%s[%d]", path, i), item)
		}
	}
	for _, name := range rules.Keys() {
		rule := rules.Get(name)
		if !rule.Get("Assertions").Exists() {
			t.Errorf("rule %s has no assertions", name)
		}
		walk("Rules."+name, rule)
	}
}

// TestAudienceGoesWithIssuer evaluates the rule: with JwtIssuer set, JwtAudience
// must name audiences, none of them empty; without it, anything goes.
func TestAudienceGoesWithIssuer(t *testing.T) {
	tpl := load(t)
	rule := tpl.Root().Get("Rules", "AudienceGoesWithIssuer")
	for _, tc := range []struct {
		issuer, audience string
		ok               bool
	}{
		{"", "", true},
		{"https://issuer.example", "", false},
		{"https://issuer.example", "client-a", true},
		{"https://issuer.example", "client-a,client-b", true},
		{"https://issuer.example", "client-a,", false},
	} {
		e := samtemplate.Env{Params: map[string]string{"JwtIssuer": tc.issuer, "JwtAudience": tc.audience}}
		applies, err := tpl.Eval(rule.Get("RuleCondition"), e)
		if err != nil {
			t.Fatal(err)
		}
		ok := true
		if applies == true {
			for _, a := range rule.Get("Assertions").Items() {
				v, err := tpl.Eval(a.Get("Assert"), e)
				if err != nil {
					t.Fatal(err)
				}
				ok = ok && v == true
			}
		}
		if ok != tc.ok {
			t.Errorf("JwtIssuer=%q JwtAudience=%q: the rules pass it: %v, want %v", tc.issuer, tc.audience, ok, tc.ok)
		}
	}
}
