package samtemplate

import (
	"fmt"
	"regexp"
	"strings"
)

// Statement is one IAM policy statement of a role, evaluated for an Env.
type Statement struct {
	// Role and Policy say where it is: the role's logical id and the policy's name.
	Role, Policy, Sid string
	Effect            string
	Actions           []string
	Resources         []string
	// Conditions maps an operator (StringEquals) to its keys and their values.
	Conditions map[string]map[string][]string
}

func (s Statement) String() string {
	return fmt.Sprintf("%s/%s %s: %v on %v", s.Role, s.Policy, s.Sid, s.Actions, s.Resources)
}

// RoleOf returns the logical id of the AWS::IAM::Role a function's Role names
// (Fn::GetAtt <Role>.Arn), or an error when the function has none of the
// template's own roles.
func (t *Template) RoleOf(function string) (string, error) {
	role := t.Resource(function).Get("Properties", "Role")
	name, arg, ok := role.Function()
	if !ok || name != "Fn::GetAtt" {
		return "", fmt.Errorf("samtemplate: %s has no Role: !GetAtt <an AWS::IAM::Role of the template>.Arn", function)
	}
	id, attr, _ := strings.Cut(arg.Str(), ".")
	if items := arg.Items(); len(items) == 2 {
		id, attr = items[0].Str(), items[1].Str()
	}
	if attr != "Arn" || t.Resource(id).Get("Type").Str() != "AWS::IAM::Role" {
		return "", fmt.Errorf("samtemplate: %s's Role is not the Arn of an AWS::IAM::Role of the template", function)
	}
	return id, nil
}

// FunctionStatements returns what a function may do in e: the statements of its Role,
// or, for a function without one, those of the role SAM makes for it: its Policies'
// inline documents (a policy template or a managed policy is refused) and the
// managed policy SAM always adds, AWSLambdaBasicExecutionRole (logs:CreateLogGroup,
// logs:CreateLogStream and logs:PutLogEvents on "*").
func (t *Template) FunctionStatements(function string, e Env) ([]Statement, error) {
	props := t.Resource(function).Get("Properties")
	if props.Get("Role").Exists() {
		role, err := t.RoleOf(function)
		if err != nil {
			return nil, err
		}
		return t.Statements(role, e)
	}
	out := []Statement{{Role: function + "Role", Policy: "AWSLambdaBasicExecutionRole", Effect: "Allow",
		Actions: []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []string{"*"}}}
	policies, err := t.Eval(props.Get("Policies"), e)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %s: %w", function, err)
	}
	list, _ := policies.([]any)
	for i, p := range list {
		doc, ok := p.(map[string]any)
		if !ok || doc["Statement"] == nil {
			return nil, fmt.Errorf("samtemplate: %s: policy %d is a managed policy or a policy template, which the template does not spell out", function, i)
		}
		st, err := statementsOf(function+"Role", fmt.Sprint(function, "Policy", i), doc)
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
	}
	return out, nil
}

// Statements returns a role's inline policy statements as they are in e. A role that
// is absent in e has none. Managed policies are refused: what they grant is not in
// the template.
func (t *Template) Statements(role string, e Env) ([]Statement, error) {
	r := t.Resource(role)
	if r.Get("Type").Str() != "AWS::IAM::Role" {
		return nil, fmt.Errorf("samtemplate: %s is not an AWS::IAM::Role", role)
	}
	if present, err := t.Present(r, e); err != nil || !present {
		return nil, err
	}
	if r.Get("Properties", "ManagedPolicyArns").Exists() || r.Get("Properties", "PermissionsBoundary").Exists() {
		return nil, fmt.Errorf("samtemplate: %s has managed policies or a boundary, which the template does not spell out", role)
	}
	policies, err := t.Eval(r.Get("Properties", "Policies"), e)
	if err != nil {
		return nil, fmt.Errorf("samtemplate: %s: %w", role, err)
	}
	var out []Statement
	list, _ := policies.([]any)
	for _, p := range list {
		pm, _ := p.(map[string]any)
		name, _ := pm["PolicyName"].(string)
		doc, _ := pm["PolicyDocument"].(map[string]any)
		st, err := statementsOf(role, name, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
	}
	return out, nil
}

func statementsOf(role, name string, doc map[string]any) ([]Statement, error) {
	var out []Statement
	stmts, ok := doc["Statement"].([]any)
	if !ok {
		return nil, fmt.Errorf("samtemplate: %s/%s has no statements", role, name)
	}
	for _, st := range stmts {
		sm, ok := st.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("samtemplate: %s/%s: a statement is not a mapping", role, name)
		}
		s := Statement{Role: role, Policy: name, Conditions: map[string]map[string][]string{}}
		s.Sid, _ = sm["Sid"].(string)
		s.Effect, _ = sm["Effect"].(string)
		for k := range sm {
			switch k {
			case "Sid", "Effect", "Action", "Resource", "Condition":
			default:
				return nil, fmt.Errorf("samtemplate: %s: statement %s has %s, which the tests do not evaluate", role, s.Sid, k)
			}
		}
		s.Actions, s.Resources = strings1(sm["Action"]), strings1(sm["Resource"])
		if len(s.Actions) == 0 || len(s.Resources) == 0 {
			return nil, fmt.Errorf("samtemplate: %s: statement %s has no actions or resources", role, s.Sid)
		}
		cond, _ := sm["Condition"].(map[string]any)
		for op, keys := range cond {
			km, _ := keys.(map[string]any)
			s.Conditions[op] = map[string][]string{}
			for k, v := range km {
				s.Conditions[op][k] = strings1(v)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func strings1(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// glob matches IAM's wildcards: * any run of characters, ? any one.
func glob(pattern, s string, fold bool) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	if fold {
		re = "(?i)" + re
	}
	return regexp.MustCompile(re).MatchString(s)
}

// Allows reports whether the statement allows action on resource, with the request
// context given (condition keys and their values). A condition operator it does not
// know (any but StringEquals, StringLike, ArnEquals and ArnLike) allows nothing.
func (s Statement) Allows(action, resource string, context map[string]string) bool {
	if s.Effect != "Allow" {
		return false
	}
	if !s.Matches(action, resource) {
		return false
	}
	for op, keys := range s.Conditions {
		like := op == "StringLike" || op == "ArnLike" || op == "ArnEquals"
		if !like && op != "StringEquals" {
			return false
		}
		for k, values := range keys {
			v, ok := context[k]
			if !ok {
				return false
			}
			match := false
			for _, want := range values {
				if (like && glob(want, v, false)) || (!like && want == v) {
					match = true
				}
			}
			if !match {
				return false
			}
		}
	}
	return true
}

// Matches reports whether the statement names action and resource, whatever its
// effect and conditions.
func (s Statement) Matches(action, resource string) bool {
	actionOK, resourceOK := false, false
	for _, a := range s.Actions {
		actionOK = actionOK || glob(a, action, true)
	}
	for _, r := range s.Resources {
		resourceOK = resourceOK || glob(r, resource, false)
	}
	return actionOK && resourceOK
}
