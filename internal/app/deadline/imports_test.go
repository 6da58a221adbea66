package deadline_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestTheMachineryKnowsNoDomain holds the deadline package to the standard library
// and the event store's contract: it knows nothing of payments, rentals or bikes,
// whose kinds are declared elsewhere (deadlinekinds).
func TestTheMachineryKnowsNoDomain(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/bikerental/bikerental/"
	for _, imp := range pkg.Imports {
		if rest, ok := strings.CutPrefix(imp, module); ok && rest != "internal/eventstore" {
			t.Errorf("deadline imports %s: want the standard library and internal/eventstore only", imp)
		}
		if first := strings.Split(imp, "/")[0]; strings.Contains(first, ".") && !strings.HasPrefix(imp, module) {
			t.Errorf("deadline imports the third-party %s", imp)
		}
	}
	if len(pkg.Imports) == 0 {
		t.Error("no imports read: the test reads the wrong directory")
	}
}
