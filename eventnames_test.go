package bikerental_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/app/eventfilter"
)

// goSource is a parsed non-test Go file of the tree, with the directory of its
// package.
type goSource struct {
	dir  string
	file *ast.File
}

// productSources parses every non-test Go file of the tree, skipping what the
// layer test skips.
func productSources(t *testing.T, fset *token.FileSet) []goSource {
	t.Helper()
	var out []goSource
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, goSource{dir: filepath.ToSlash(filepath.Dir(path)), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventTypeOwners returns, for each event type name that an EventType method
// returns, the directory of the package that declares that method: as a string
// literal, or as a constant of its own package.
func eventTypeOwners(sources []goSource) map[string]string {
	consts := map[string]map[string]string{} // dir -> constant -> string value
	for _, s := range sources {
		for _, decl := range s.file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := stringLit(vs.Values[i]); ok {
							if consts[s.dir] == nil {
								consts[s.dir] = map[string]string{}
							}
							consts[s.dir][n.Name] = v
						}
					}
				}
			}
		}
	}
	owners := map[string]string{}
	for _, s := range sources {
		for _, decl := range s.file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "EventType" || fn.Body == nil || len(fn.Body.List) != 1 {
				continue
			}
			ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				continue
			}
			name, ok := stringLit(ret.Results[0])
			if id, isIdent := ret.Results[0].(*ast.Ident); isIdent {
				name, ok = consts[s.dir][id.Name]
			}
			if ok {
				owners[name] = s.dir
			}
		}
	}
	return owners
}

// stringLit is the value of e when it is a string literal.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// stray is a string literal that names an event type outside its owner.
type stray struct{ at, name string }

// strayNames returns each string literal of s that is one of names and is not
// owned by s's package.
func strayNames(fset *token.FileSet, s goSource, names []string, owners map[string]string) []stray {
	var out []stray
	ast.Inspect(s.file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok {
			return true
		}
		if v, ok := stringLit(lit); ok && slices.Contains(names, v) && owners[v] != s.dir {
			out = append(out, stray{at: fset.Position(lit.Pos()).String(), name: v})
		}
		return true
	})
	return out
}

// TestEventNamesHaveOneHome: every event type the service writes
// (eventfilter.EventTypes) is spelled as a string only by the package whose
// EventType method returns it; product code elsewhere asks that declaration
// (X{}.EventType(), payment.Settles, rentalpayment.Ends, ...). Tests aside.
func TestEventNamesHaveOneHome(t *testing.T) {
	fset := token.NewFileSet()
	sources := productSources(t, fset)
	owners := eventTypeOwners(sources)
	names := eventfilter.EventTypes()
	for _, name := range names {
		if owners[name] == "" {
			t.Errorf("no EventType method returns %q: the owners' scan missed it", name)
		}
	}
	for _, s := range sources {
		for _, st := range strayNames(fset, s, names, owners) {
			t.Errorf("%s: %q is spelled outside its owner, %s: ask its declaration", st.at, st.name, owners[st.name])
		}
	}
}

// TestStrayEventNamesAreFound proves the scan bites: an owner's literal, through
// a constant or not, is its own, and the same name elsewhere is reported.
func TestStrayEventNamesAreFound(t *testing.T) {
	fset := token.NewFileSet()
	parse := func(dir, src string) goSource {
		f, err := parser.ParseFile(fset, dir+"/x.go", src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		return goSource{dir: dir, file: f}
	}
	owner := parse("internal/domain/a", "package a\nconst TypeB = \"B\"\ntype A struct{}\nfunc (A) EventType() string { return \"A\" }\ntype B struct{}\nfunc (B) EventType() string { return TypeB }\n")
	user := parse("internal/app/c", "package c\nvar x = []string{\"A\", `B`, \"C\"}\n")
	owners := eventTypeOwners([]goSource{owner, user})
	if owners["A"] != "internal/domain/a" || owners["B"] != "internal/domain/a" {
		t.Fatalf("owners %v, want A and B in internal/domain/a", owners)
	}
	names := []string{"A", "B"}
	if got := strayNames(fset, owner, names, owners); len(got) != 0 {
		t.Errorf("the owner's own names reported: %v", got)
	}
	if got := strayNames(fset, user, names, owners); len(got) != 2 {
		t.Errorf("stray names %v, want A and B", got)
	}
}
