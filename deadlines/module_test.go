package deadlines_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The module's own path, and the service's beside it: the module imports nothing
// of the service.
const (
	modulePath  = "github.com/bikerental/bikerental/deadlines"
	servicePath = "github.com/bikerental/bikerental/"
)

// goList runs go list in the module's directory, outside any workspace.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.Bytes())
	}
	return strings.Fields(string(out))
}

// TestTheCoreNeedsOnlyTheStandardLibrary and the rest of the module nothing of the
// service that was its first user.
func TestTheModuleImportsNothingOfTheService(t *testing.T) {
	for _, p := range goList(t, "-deps", ".") {
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") && p != modulePath {
			t.Errorf("the core package imports %s: want the standard library alone", p)
		}
	}
	for _, p := range goList(t, "-deps", "-test", "./...") {
		if strings.HasPrefix(p, servicePath) && !strings.HasPrefix(strings.TrimSuffix(p, ".test"), modulePath) {
			t.Errorf("the module imports %s, of the service", p)
		}
	}
}

// words are what the module is not about: the domain of the service that was its
// first user, and the names of the service's own uses of it.
var words = regexp.MustCompile(`(?i)\b(bikes?|rentals?|renters?|payments?|refunds?|providers?|stripe|owed|parked)\b`)

// TestTheModuleKnowsNoDomain reads every file of the module (code, comments,
// tests, testdata) for a word of the service's domain.
func TestTheModuleKnowsNoDomain(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for i, line := range strings.Split(string(b), "\n") {
			if w := words.FindString(line); w != "" && path != "module_test.go" {
				t.Errorf("%s:%d says %q: the module knows no domain", path, i+1, w)
			}
		}
		return nil
	})
	if err != nil || files < 10 {
		t.Fatalf("read %d files: %v", files, err)
	}
}

// TestAModuleOutsideImportsEveryPackageAndBuilds makes a module in a temporary
// directory, as a new user would, that imports every package of this one through a
// replace to this checkout, and builds it outside any workspace.
func TestAModuleOutsideImportsEveryPackageAndBuilds(t *testing.T) {
	var imports []string
	for _, p := range goList(t, "./...") {
		if !strings.Contains(p, "/internal/") && !strings.HasSuffix(p, "/internal") {
			imports = append(imports, "\t_ \""+p+"\"\n")
		}
	}
	buildOutside(t, "package main\n\nimport (\n"+strings.Join(imports, "")+")\n\nfunc main() {}\n")
	t.Logf("an outside module imports and builds %d packages", len(imports))
}

// TestTheQuickStartBuilds builds the README's quick start, the first Go block of its
// section, as a program of a module outside.
func TestTheQuickStartBuilds(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Quick start\n")
	_, block, ok2 := strings.Cut(section, "\n```go\n")
	code, _, ok3 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no Go block under ## Quick start")
	}
	if lines := strings.Count(code, "\n") + 1; lines > 60 {
		t.Errorf("the quick start is %d lines: a quick start is about 30 lines of code and its imports", lines)
	}
	buildOutside(t, code+"\n")
}

// buildOutside makes a module in a temporary directory, as a new user would, whose
// main.go is mainGo, requiring this module through a replace to this checkout, and
// tidies, builds and vets it outside any workspace.
func buildOutside(t *testing.T, mainGo string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/orders\n\ngo 1.26.0\n\nrequire "+modulePath+" v0.0.0\n\nreplace "+modulePath+" => "+here+"\n")
	write("main.go", mainGo)
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v in a module outside: %v\n%s", args, err, out)
		}
	}
}

// TestTheREADMEsFiguresAreTheBenchmarks holds the tables of the README's sections on
// cost and sizing to the report make bench-deadlines writes from the benchmarks'
// output (docs/costs.md): every row of them is one of the report's, so that a
// figure is never typed by hand, nor left behind when the benchmarks run again.
func TestTheREADMEsFiguresAreTheBenchmarks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(filepath.Join("docs", "costs.md"))
	if err != nil {
		t.Fatal(err)
	}
	reported := map[string]bool{}
	for _, line := range strings.Split(string(report), "\n") {
		reported[line] = true
	}
	rows := 0
	for _, section := range []string{"## What a deadline costs", "## Sizing"} {
		_, text, ok := strings.Cut(string(readme), "\n"+section+"\n")
		if !ok {
			t.Errorf("README.md has no section %q", section)
			continue
		}
		text, _, _ = strings.Cut(text, "\n## ")
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, "|") {
				continue
			}
			rows++
			if !reported[line] {
				t.Errorf("README.md, %s: %q is in no table of docs/costs.md", section, line)
			}
		}
	}
	if rows < 10 {
		t.Errorf("README.md's cost and sizing sections have %d table rows: want the report's tables", rows)
	}
}
