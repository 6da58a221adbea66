package memindex_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestTheInMemoryIndexKnowsNoServiceKinds: memindex imports no declaration of the
// service's kinds (deadlinekinds) and no domain package; tests that need the
// service's kinds declare them and give them to NewWith. The owed cancellations'
// lane it keeps is read through package owed, the one home of their decoder.
func TestTheInMemoryIndexKnowsNoServiceKinds(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/bikerental/bikerental/internal/"
	allowed := map[string]bool{"app/deadline": true, "app/owed": true, "app/parked": true, "eventstore": true}
	for _, imp := range pkg.Imports {
		if rest, ok := strings.CutPrefix(imp, module); ok && !allowed[rest] {
			t.Errorf("memindex imports %s: want the machinery, the owed and parked parts and the event store only", imp)
		}
	}
	if len(pkg.Imports) == 0 {
		t.Error("no imports read: the test reads the wrong directory")
	}
}
