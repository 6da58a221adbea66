package wiring

import (
	"fmt"

	"github.com/bikerental/bikerental/internal/ports/httpapi"
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
func ConsoleSignIn(getenv Getenv) (httpapi.ConsoleSignIn, error) {
	s := httpapi.ConsoleSignIn{Mode: getenv(EnvConsoleSignIn), Issuer: getenv(EnvConsoleIssuer),
		ClientID: getenv(EnvConsoleClientID), AuthURL: getenv(EnvConsoleAuthURL)}
	if err := s.Check(); err != nil {
		return httpapi.ConsoleSignIn{}, fmt.Errorf("%w: %s: %w", ErrBadSetting, EnvConsoleSignIn, err)
	}
	return s, nil
}

// OperatorGroup returns OPERATOR_GROUP, checked.
func OperatorGroup(getenv Getenv) (string, error) { return Token(getenv, EnvOperatorGroup) }
