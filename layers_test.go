package bikerental_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/bikerental/bikerental/"

// domain is the pure core: the deciders, their events and what those mean, ids.
// Each imports only the standard library and the others.
var domain = []string{
	"internal/eventtype",
	"internal/ident",
	"internal/payment",
	"internal/rental",
	"internal/renter",
	"internal/rentalpayment",
}

// TestTheDomainIsPure: no domain package imports the event store, the AWS SDK, an
// HTTP package or any application package; it holds the rule to the code's real
// imports, tests aside.
func TestTheDomainIsPure(t *testing.T) {
	for _, dir := range domain {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range pkg.Imports {
			if bad := offDomain(imp); bad != "" {
				t.Errorf("%s imports %s: %s", dir, imp, bad)
			}
		}
	}
}

// offDomain says why a domain package may not import imp, or "" if it may.
func offDomain(imp string) string {
	switch {
	case strings.HasPrefix(imp, module):
		if !slices.Contains(domain, strings.TrimPrefix(imp, module)) {
			return "a package outside the domain"
		}
	case strings.Contains(strings.Split(imp, "/")[0], "."):
		return "a module outside the standard library"
	case imp == "net/http" || strings.HasPrefix(imp, "net/") || imp == "os" || imp == "os/exec" || imp == "database/sql":
		return "input and output belong outside the domain"
	}
	return ""
}
