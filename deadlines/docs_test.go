package deadlines_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheCorePackageDocumentsRunnableExamples holds the package's documentation to
// what go doc -http (and pkg.go.dev) shows: examples attached to the package or
// to its exported names, each with an Output comment, so that go test runs it and
// fails when it no longer prints what the documentation says.
func TestTheCorePackageDocumentsRunnableExamples(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, modulePath)
	if err != nil {
		t.Fatal(err)
	}
	var shown []*doc.Example
	shown = append(shown, pkg.Examples...)
	for _, f := range pkg.Funcs {
		shown = append(shown, f.Examples...)
	}
	for _, ty := range pkg.Types {
		shown = append(shown, ty.Examples...)
		for _, f := range ty.Funcs {
			shown = append(shown, f.Examples...)
		}
		for _, m := range ty.Methods {
			shown = append(shown, m.Examples...)
		}
	}
	var run []string
	for _, ex := range shown {
		if ex.Output == "" && !ex.EmptyOutput {
			t.Errorf("Example%s has no Output comment: go test compiles it but never runs it", ex.Name)
			continue
		}
		if strings.TrimSpace(ex.Doc) == "" {
			t.Errorf("Example%s has no doc comment to say what it shows", ex.Name)
		}
		run = append(run, "Example"+ex.Name)
	}
	if len(run) < 3 {
		t.Errorf("the package shows %d runnable examples (%v), want at least 3", len(run), run)
	}
	t.Logf("runnable examples shown: %v", run)
}
