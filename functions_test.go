package bikerental_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFunctionLines is the most lines a function of the product code may span, from
// its func keyword to its closing brace: a longer one is split into steps that
// read better, or kept whole in longFunctions with the reason why.
const maxFunctionLines = 80

// longFunctions are the functions of the product code allowed more than
// maxFunctionLines, as "path/to/file.go Name" (methods by their name alone), each
// with the reason it is kept whole.
var longFunctions = []string{}

// productCode reports whether the Go file at path (relative to the module root,
// slash-separated) is product code: not a test, and in internal/ (but for the test
// support of internal/testkit, the local stack of internal/dev, and the packages
// that, as net/http/httptest does, hold a package's test support under a name ending
// in "test"), cmd/ or functions/.
func productCode(path string) bool {
	if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
		return false
	}
	dirs := strings.Split(filepath.Dir(path), "/")
	switch {
	case dirs[0] == "cmd" || dirs[0] == "functions":
		return true
	case dirs[0] != "internal" || len(dirs) < 2 || dirs[1] == "testkit" || dirs[1] == "dev":
		return false
	}
	return !slices.ContainsFunc(dirs[2:], func(d string) bool { return strings.HasSuffix(d, "test") || d == "testdata" })
}

// longFunctionsIn returns the functions of the Go source src (named path) that span
// more than maxFunctionLines, as "path Name (n lines)".
func longFunctionsIn(path string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var long []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunctionLines {
			long = append(long, fmt.Sprintf("%s %s (%d lines)", path, fn.Name.Name, n))
		}
	}
	return long, nil
}

// TestNoFunctionIsTooLong reads every file of the product code and fails naming each
// function longer than maxFunctionLines that longFunctions does not keep whole, and
// each entry of longFunctions that is no longer long.
func TestNoFunctionIsTooLong(t *testing.T) {
	files := 0
	kept := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		path = filepath.ToSlash(path)
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !productCode(path) {
			return nil
		}
		files++
		long, err := longFunctionsIn(path, nil)
		if err != nil {
			return err
		}
		for _, l := range long {
			name := l[:strings.LastIndex(l, " (")]
			if slices.Contains(longFunctions, name) {
				kept[name] = true
				continue
			}
			t.Errorf("%s: longer than %d lines; split it into steps that read better, or keep it whole in longFunctions, saying why", l, maxFunctionLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 80 {
		t.Fatalf("read %d files of product code; the walk missed the tree", files)
	}
	for _, name := range longFunctions {
		if !kept[name] {
			t.Errorf("longFunctions keeps %s whole, but it is no longer than %d lines (or gone): take it off the list", name, maxFunctionLines)
		}
	}
}

// TestTheLengthRuleBites proves the rule finds a long function, a long method and
// nothing in a short one, and that the walk's selection of product code is right.
func TestTheLengthRuleBites(t *testing.T) {
	body := strings.Repeat("\tx++\n", maxFunctionLines-2)
	src := "package p\n\nfunc short() {}\n\nfunc atTheLimit() {\n" + body + "}\n\ntype T struct{}\n\nfunc (T) tooLong() {\n" + body + "\tx++\n}\n\nvar x int\n"
	long, err := longFunctionsIn("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("p.go tooLong (%d lines)", maxFunctionLines+1)}; !slices.Equal(long, want) {
		t.Errorf("long functions %q, want %q", long, want)
	}
	for path, want := range map[string]bool{
		"internal/app/process/process.go":              true,
		"internal/app/process/process_test.go":         false,
		"internal/eventstore/eventstoretest/suite.go":  false,
		"internal/testkit/iamtest/actions.go":          false,
		"internal/dev/local/up.go":                     false,
		"cmd/rentalctl/main.go":                        true,
		"functions/command/main.go":                    true,
		"tools/load/load.go":                           false,
		"layers_test.go":                               false,
		"internal/ports/httpapi/testdata/fuzz/x.go":    false,
		"internal/adapters/provider/stripe/webhook.go": true,
	} {
		if got := productCode(path); got != want {
			t.Errorf("productCode(%s) = %v, want %v", path, got, want)
		}
	}
}
