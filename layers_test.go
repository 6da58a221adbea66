package bikerental_test

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/bikerental/bikerental"

// wings is the house's layer table: for each wing (a folder of internal/, or a
// top-level folder), the other wings its product code may import. Every wing may
// import itself and the standard library; what may import a third-party module is
// in thirdParty. docs/ARCHITECTURE.md draws this table; change both together.
var wings = map[string][]string{
	// The pure core: the deciders, their events and what those mean, ids.
	"domain": {},
	// General-purpose code that knows nothing of the service.
	"lib": {},
	// The event store's contract, its in-memory implementation, the runner.
	"eventstore": {"lib"},
	// What the service does, over the store's contract and the domain.
	"app": {"domain", "lib", "eventstore"},
	// The AWS and payment-provider implementations the application is given.
	"adapters": {"domain", "lib", "eventstore", "app"},
	// How the world calls in: HTTP routes, stream batches, sweep triggers.
	"ports": {"domain", "lib", "eventstore", "app", "adapters"},
	// The functions' builders and settings: the only place that picks adapters.
	"wiring": {"domain", "lib", "eventstore", "app", "adapters", "ports"},
	// What operators run: audit, rebuild, refunds, the work of rentalctl.
	"ops": {"domain", "lib", "eventstore", "app", "adapters", "ports", "wiring"},
	// The local stack, the emulators and the demo: never deployed.
	"dev": {"domain", "lib", "eventstore", "app", "adapters", "ports", "wiring", "ops", "template"},
	// Test support and the end-to-end tests.
	"testkit": {"domain", "lib", "eventstore", "app", "adapters", "ports", "wiring", "ops", "dev", "template"},
	// The command-line programs: flags, output and exit codes over ops, dev and wiring.
	"cmd": {"domain", "lib", "wiring", "ops", "dev"},
	// The deployed functions' main packages: each builds its handler in wiring.
	"functions": {"wiring"},
	// Benchmarks and load generators.
	"tools": {"domain", "lib", "eventstore", "app", "adapters", "ports", "wiring", "ops", "dev", "testkit", "template"},
	// The module's root package: the template, embedded.
	"template": {},
}

// pure is the wings that import the standard library only, and no input or
// output of their own beyond it.
var pure = []string{"domain", "lib", "eventstore", "app"}

// wingOf names the wing of a package directory relative to the module root.
func wingOf(rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch {
	case rel == ".":
		return "template"
	case parts[0] == "internal" && len(parts) > 1:
		return parts[1]
	default:
		return parts[0]
	}
}

// deadlinesModule is the deadlines module, a module of its own in this repository
// (deadlines/go.mod) which holds itself to its own rules: its core package needs
// the standard library alone, so the pure wings from app up may import it; its
// other packages (the DynamoDB table, the Lambda handlers, the schedules) are to
// the service as a third-party module's.
const deadlinesModule = module + "/deadlines"

// violation says why a package of wing may not import imp, or "" if it may.
func violation(wing, imp string) string {
	switch {
	case imp == deadlinesModule && slices.Contains([]string{"domain", "lib", "eventstore"}, wing):
		return wing + " imports the standard library only, not the deadlines module"
	case imp == deadlinesModule:
		return ""
	case strings.HasPrefix(imp, deadlinesModule+"/") && slices.Contains(pure, wing):
		return wing + " imports the standard library only, not a third-party module"
	case strings.HasPrefix(imp, deadlinesModule+"/"):
		return ""
	}
	if rel, ok := strings.CutPrefix(imp, module); ok {
		rel = strings.TrimPrefix(rel, "/")
		if rel == "" {
			rel = "."
		}
		to := wingOf(rel)
		if to == wing || slices.Contains(wings[wing], to) {
			return ""
		}
		return wing + " may import only " + strings.Join(append([]string{wing}, wings[wing]...), ", ") + ", not " + to
	}
	first := strings.Split(imp, "/")[0]
	if strings.Contains(first, ".") && slices.Contains(pure, wing) {
		return wing + " imports the standard library only, not a third-party module"
	}
	if wing == "domain" && (strings.HasPrefix(imp, "net/") || imp == "os" || imp == "os/exec" || imp == "database/sql") {
		return "input and output belong outside the domain"
	}
	return ""
}

// TestTheLayersHold holds every package's product imports (tests aside) to the
// layer table, and fails with each offending import. The deadlines module and the
// examples (examples/orders) are modules of their own, with layers of their own.
func TestTheLayersHold(t *testing.T) {
	packages := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin" || name == "vendor" || path == "deadlines" || path == "examples") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			return err
		}
		wing := wingOf(path)
		if _, known := wings[wing]; !known {
			t.Errorf("%s is in %q, which is not a wing of the layer table", path, wing)
			return nil
		}
		packages++
		for _, imp := range pkg.Imports {
			if why := violation(wing, imp); why != "" {
				t.Errorf("%s imports %s: %s", filepath.ToSlash(path), imp, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if packages < 50 {
		t.Fatalf("checked %d packages; the walk missed the tree", packages)
	}
}

// TestTheLayerRulesRefuse proves the table bites: a wrong import of each kind is
// reported.
func TestTheLayerRulesRefuse(t *testing.T) {
	for _, c := range []struct{ wing, imp string }{
		{"domain", module + "/internal/eventstore"},
		{"domain", "net/http"},
		{"domain", "github.com/aws/aws-sdk-go-v2/aws"},
		{"app", module + "/internal/adapters/dynamo"},
		{"app", "github.com/aws/aws-sdk-go-v2/service/dynamodb"},
		{"adapters", module + "/internal/ports/httpapi"},
		{"wiring", module + "/internal/dev/local"},
		{"cmd", module + "/internal/testkit/iamtest"},
		{"functions", module + "/internal/app/process"},
		{"ops", module + "/internal/testkit/iamtest"},
		{"eventstore", module + "/deadlines"},
		{"app", module + "/deadlines/dynamo"},
		{"app", module + "/deadlines/awslambda"},
	} {
		if violation(c.wing, c.imp) == "" {
			t.Errorf("%s importing %s was allowed", c.wing, c.imp)
		}
	}
	for _, c := range []struct{ wing, imp string }{
		{"domain", module + "/internal/domain/ident"},
		{"app", module + "/internal/domain/payment"},
		{"ports", module + "/internal/adapters/dynamo"},
		{"wiring", "github.com/aws/aws-sdk-go-v2/aws"},
		{"app", module + "/deadlines"},
		{"adapters", module + "/deadlines/dynamo"},
		{"wiring", module + "/deadlines/awslambda"},
	} {
		if why := violation(c.wing, c.imp); why != "" {
			t.Errorf("%s importing %s was refused: %s", c.wing, c.imp, why)
		}
	}
}

// TestTheArchitecturePageShowsTheTable: docs/ARCHITECTURE.md's table of the wings is
// this one, wing for wing and import for import.
func TestTheArchitecturePageShowsTheTable(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, found := strings.Cut(string(page), "<!-- wings -->\n```\n")
	block, _, closed := strings.Cut(block, "```\n<!-- /wings -->")
	if !found || !closed {
		t.Fatal("docs/ARCHITECTURE.md has no table of the wings between <!-- wings --> and <!-- /wings -->")
	}
	drawn := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		wing, imports, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("line %q is not \"wing : imports\"", line)
		}
		var list []string
		for _, w := range strings.Split(imports, ",") {
			if w = strings.TrimSpace(w); w != "" {
				list = append(list, w)
			}
		}
		drawn[strings.TrimSpace(wing)] = list
	}
	for wing, want := range wings {
		got, ok := drawn[wing]
		if !ok {
			t.Errorf("the page does not show the wing %s", wing)
		} else if !slices.Equal(got, want) {
			t.Errorf("the page shows %s importing %v; the table says %v", wing, got, want)
		}
	}
	for wing := range drawn {
		if _, ok := wings[wing]; !ok {
			t.Errorf("the page shows a wing %s the table does not have", wing)
		}
	}
}
