package samtemplate_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/samtemplate"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
)

// TestTheConsoleSignsInWhereTheTemplateSays checks the operator console's sign-in
// in each way the template can deploy it: with the stack's own pool once ConsoleUrl
// is set (a public authorization-code client with PKCE, called back at the console,
// whose tokens the authorizer accepts and the API holds to the operators' group),
// with JwtIssuer's client, and not at all; each time the command function's
// settings are ones it accepts.
func TestTheConsoleSignsInWhereTheTemplateSays(t *testing.T) {
	tpl := load(t)
	const console = "https://api.example.com/console"
	for _, c := range []struct {
		name         string
		params       map[string]string
		client       bool
		signIn, auth string
		group        bool
	}{
		{"own pool, no ConsoleUrl", map[string]string{}, false, "", "", false},
		{"own pool", map[string]string{"ConsoleUrl": console}, true, "oidc", "https://bikerental-dev-123456789012.auth.us-east-1.amazoncognito.com", true},
		{"JwtIssuer", map[string]string{"JwtIssuer": "https://issuer.example.com", "JwtAudience": "console-app", "ConsoleClientId": "console-app"}, false, "oidc", "", false},
		{"JwtIssuer with a Cognito pool's hosted sign-in", map[string]string{"JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc", "JwtAudience": "console-app", "ConsoleClientId": "console-app", "ConsoleAuthUrl": "https://ops.auth.us-east-1.amazoncognito.com"}, false, "oidc", "https://ops.auth.us-east-1.amazoncognito.com", false},
		{"JwtIssuer without a console client", map[string]string{"JwtIssuer": "https://issuer.example.com", "JwtAudience": "app"}, false, "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := env(tpl, c.params, testNames)
			eval := func(n samtemplate.Node) any {
				t.Helper()
				v, err := tpl.Eval(n, e)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			client := tpl.Resource("ConsoleClient")
			present, err := tpl.Present(client, e)
			if err != nil || present != c.client {
				t.Fatalf("console client present = %v (%v), want %v", present, err, c.client)
			}
			audience := fmt.Sprint(eval(tpl.Resource("HttpApi").Get("Properties", "Auth", "Authorizers", "TokenAuthorizer", "JwtConfiguration", "audience")))
			if c.client {
				p := client.Get("Properties")
				if fmt.Sprint(eval(p.Get("GenerateSecret"))) != "false" || fmt.Sprint(eval(p.Get("AllowedOAuthFlows"))) != "[code]" {
					t.Errorf("the console client is not a public authorization-code client: %v %v", eval(p.Get("GenerateSecret")), eval(p.Get("AllowedOAuthFlows")))
				}
				scope, _ := tpl.Param("OperatorScope", e)
				if got := fmt.Sprint(eval(p.Get("AllowedOAuthScopes"))); got != fmt.Sprint([]any{"openid", scope}) {
					t.Errorf("the console client's scopes are %s", got)
				}
				for _, urls := range []string{"CallbackURLs", "LogoutURLs"} {
					if got := fmt.Sprint(eval(p.Get(urls))); got != "["+console+"]" {
						t.Errorf("%s = %s, want [%s]", urls, got, console)
					}
				}
				if !containsWord(audience, "client-ConsoleClient") {
					t.Errorf("the authorizer's audience %s lacks the console client", audience)
				}
			} else if containsWord(audience, "client-ConsoleClient") {
				t.Errorf("the authorizer's audience %s names a console client that is not there", audience)
			}
			vars := tpl.Resource("CommandFunction").Get("Properties", "Environment", "Variables")
			got := map[string]string{}
			for _, k := range vars.Keys() {
				got[k] = fmt.Sprint(eval(vars.Get(k)))
			}
			if got[commandfn.EnvConsoleSignIn] != c.signIn || got[commandfn.EnvConsoleAuthURL] != c.auth || (got[commandfn.EnvOperatorGroup] != "") != c.group {
				t.Errorf("console settings %s=%q %s=%q %s=%q", commandfn.EnvConsoleSignIn, got[commandfn.EnvConsoleSignIn],
					commandfn.EnvConsoleAuthURL, got[commandfn.EnvConsoleAuthURL], commandfn.EnvOperatorGroup, got[commandfn.EnvOperatorGroup])
			}
			s, err := commandfn.ConsoleSignIn(func(k string) string { return got[k] })
			if err != nil {
				t.Fatalf("the command function refuses the template's console settings: %v", err)
			}
			if c.signIn != "" && (s.ClientID == "" || s.Issuer == "") {
				t.Errorf("console sign-in %+v lacks its issuer or client", s)
			}
		})
	}
}

func containsWord(list, word string) bool { return slices.Contains(splitList(list), word) }

func splitList(s string) []string {
	var out []string
	word := ""
	for _, r := range s {
		switch r {
		case '[', ']', ' ':
			if word != "" {
				out = append(out, word)
			}
			word = ""
		default:
			word += string(r)
		}
	}
	if word != "" {
		out = append(out, word)
	}
	return out
}
