package local

import (
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
)

// withConsoleDefaults signs the operator console in through the local runner's own
// issuer (POST /local/tokens) unless CONSOLE_SIGN_IN says otherwise.
func withConsoleDefaults(getenv wiring.Getenv) wiring.Getenv {
	return func(name string) string {
		if v := getenv(name); v != "" || name != commandfn.EnvConsoleSignIn {
			return v
		}
		return httpapi.ConsoleSignInLocal
	}
}

// ConsoleURL is the operator console's address on a stack serving the API at base
// (http://host:port).
func ConsoleURL(base string) string { return base + httpapi.ConsolePath }
