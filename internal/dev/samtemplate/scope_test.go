package samtemplate_test

import (
	"fmt"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// TestOperatorScopeIsTheUserPools checks that, with the stack's own user pool,
// whatever OperatorScope is, the pool's resource server defines exactly that scope,
// the operator client is granted it, and the operator routes and the command
// function require it: one value, so that changing it cannot lock the operators out.
func TestOperatorScopeIsTheUserPools(t *testing.T) {
	tpl := load(t)
	for _, scope := range []string{"", "fleet/admin", "ops-api/cancel.payments"} {
		e := samtemplate.Env{Params: map[string]string{}}
		if scope != "" {
			e.Params["OperatorScope"] = scope
		} else {
			def, _ := tpl.Param("OperatorScope", e)
			scope = def.(string)
		}
		t.Run(scope, func(t *testing.T) {
			if own, err := tpl.Condition("OwnUserPool", e); err != nil || !own {
				t.Fatalf("the default parameters do not give the stack its own user pool (%v)", err)
			}
			eval := func(n samtemplate.Node) any {
				t.Helper()
				v, err := tpl.Eval(n, e)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			server := tpl.Resource("OperatorResourceServer").Get("Properties")
			var defined []string
			for _, s := range server.Get("Scopes").Items() {
				defined = append(defined, fmt.Sprint(eval(server.Get("Identifier")), "/", eval(s.Get("ScopeName"))))
			}
			if len(defined) != 1 || defined[0] != scope {
				t.Errorf("the user pool's resource server defines %v, OperatorScope is %q", defined, scope)
			}
			client := tpl.Resource("OperatorClient").Get("Properties")
			if got := fmt.Sprint(eval(client.Get("AllowedOAuthScopes"))); got != fmt.Sprint([]any{scope}) {
				t.Errorf("the operator client is granted %s, want [%s]", got, scope)
			}
			if got := eval(tpl.Resource("CommandFunction").Get("Properties", "Environment", "Variables", "OPERATOR_SCOPE")); got != scope {
				t.Errorf("the command function's OPERATOR_SCOPE is %v, want %s", got, scope)
			}
			routes := tpl.Resource("CommandFunction").Get("Properties", "Events")
			operatorRoutes := 0
			for _, name := range routes.Keys() {
				scopes := routes.Get(name, "Properties", "Auth", "AuthorizationScopes")
				if !scopes.Exists() {
					continue
				}
				operatorRoutes++
				if got := fmt.Sprint(eval(scopes)); got != fmt.Sprint([]any{scope}) {
					t.Errorf("route %s requires %s, want [%s]", name, got, scope)
				}
			}
			if operatorRoutes == 0 {
				t.Error("no route requires the operator scope")
			}
		})
	}
}
