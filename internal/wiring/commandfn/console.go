package commandfn

import (
	"fmt"

	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
)

// The operator console's settings; the command function reads them.
const (
	// EnvConsoleSignIn is how the console signs operators in: "local" (the local
	// runner's issuer), "oidc" (an OpenID provider: CONSOLE_ISSUER and
	// CONSOLE_CLIENT_ID, and CONSOLE_AUTH_URL for Cognito's hosted UI) or empty (no
	// sign-in; the console says so).
	EnvConsoleSignIn = "CONSOLE_SIGN_IN"
	// EnvConsoleIssuer is the OpenID provider's issuer URL (https).
	EnvConsoleIssuer = "CONSOLE_ISSUER"
	// EnvConsoleClientID is the console's app client: public, without a secret.
	EnvConsoleClientID = "CONSOLE_CLIENT_ID"
	// EnvConsoleAuthURL is the base URL of Cognito's hosted UI; empty reads the
	// endpoints from the issuer's OpenID discovery.
	EnvConsoleAuthURL = "CONSOLE_AUTH_URL"
	// EnvOperatorGroup, with CONSOLE_CLIENT_ID, is the user pool group whose members'
	// console tokens open the operator routes (empty: the scope alone decides).
	EnvOperatorGroup = "OPERATOR_GROUP"
)

// ConsoleSignIn returns the console's sign-in from its settings, refusing one
// that cannot work.
func ConsoleSignIn(getenv wiring.Getenv) (httpapi.ConsoleSignIn, error) {
	s := httpapi.ConsoleSignIn{Mode: getenv(EnvConsoleSignIn), Issuer: getenv(EnvConsoleIssuer),
		ClientID: getenv(EnvConsoleClientID), AuthURL: getenv(EnvConsoleAuthURL)}
	if err := s.Check(); err != nil {
		return httpapi.ConsoleSignIn{}, consoleRefusal(s, err)
	}
	return s, nil
}

// consoleRefusal names the setting of s that httpapi.ConsoleSignIn.Check refused
// (err): the mode, or with oidc the first part which, beside good stand-ins for the
// others, still fails the check.
func consoleRefusal(s httpapi.ConsoleSignIn, err error) error {
	if s.Mode != httpapi.ConsoleSignInOIDC {
		return wiring.BadSetting(EnvConsoleSignIn, s.Mode, fmt.Sprintf("%s, %s or unset", httpapi.ConsoleSignInLocal, httpapi.ConsoleSignInOIDC))
	}
	good := httpapi.ConsoleSignIn{Mode: httpapi.ConsoleSignInOIDC, Issuer: "https://issuer.invalid", ClientID: "client"}
	for _, part := range []struct {
		name, value string
		set         func(*httpapi.ConsoleSignIn)
		want        string
	}{
		{EnvConsoleIssuer, s.Issuer, func(c *httpapi.ConsoleSignIn) { c.Issuer = s.Issuer }, "the OpenID provider's issuer, an https URL without query, fragment or credentials"},
		{EnvConsoleClientID, s.ClientID, func(c *httpapi.ConsoleSignIn) { c.ClientID = s.ClientID }, "the console's app client id, without spaces, quotes, <, > or backslashes"},
		{EnvConsoleAuthURL, s.AuthURL, func(c *httpapi.ConsoleSignIn) { c.AuthURL = s.AuthURL }, "the hosted UI's base URL, https without query, fragment or credentials, or unset"},
	} {
		probe := good
		part.set(&probe)
		if probe.Check() == nil {
			continue
		}
		if part.value == "" {
			return wiring.MissingSetting(part.name, part.want+", needed with "+EnvConsoleSignIn+"="+httpapi.ConsoleSignInOIDC)
		}
		return wiring.BadSetting(part.name, part.value, part.want)
	}
	return wiring.BadSetting(EnvConsoleSignIn, s.Mode, err.Error())
}

// OperatorGroup returns OPERATOR_GROUP, checked.
func OperatorGroup(getenv wiring.Getenv) (string, error) {
	return wiring.Token(getenv, EnvOperatorGroup)
}
