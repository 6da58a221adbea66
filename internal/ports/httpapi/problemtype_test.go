package httpapi_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/testkit/apicontract"
)

// anchor is how README.md gives a problem type the anchor its URI names.
var anchor = regexp.MustCompile(`<a id="problem-([a-z0-9-]+)"></a>`)

// TestEveryProblemTypeHasItsAnchorInTheREADME holds README.md's "Problem types" to
// the API's declaration of them: every type the code can answer has the anchor its
// URI names, on a row that gives its status, and the README lists no other. The
// OpenAPI document's ProblemType lists the same URIs, and about:blank.
func TestEveryProblemTypeHasItsAnchorInTheREADME(t *testing.T) {
	root, err := apicontract.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // a problem type's name → the README line of its anchor
	for line := range strings.SplitSeq(string(readme), "\n") {
		for _, m := range anchor.FindAllStringSubmatch(line, -1) {
			if _, twice := rows[m[1]]; twice {
				t.Errorf("README.md gives problem-%s twice", m[1])
			}
			rows[m[1]] = line
		}
	}
	types := httpapi.ProblemTypes()
	if len(types) == 0 {
		t.Fatal("the API declares no problem types")
	}
	declared := map[string]bool{}
	uris := []string{httpapi.AboutBlank.URI()}
	for _, typ := range types {
		name := typ.Name()
		declared[name] = true
		uris = append(uris, typ.URI())
		if !strings.HasSuffix(typ.URI(), "/README.md#problem-"+name) || typ.Status() < 400 {
			t.Errorf("problem type %q: URI %s, status %d", name, typ.URI(), typ.Status())
		}
		row, ok := rows[name]
		if !ok {
			t.Errorf("README.md has no anchor problem-%s for the problem type the API answers with status %d", name, typ.Status())
			continue
		}
		if !strings.Contains(row, "| "+strconv.Itoa(typ.Status())+" |") {
			t.Errorf("README.md's row of problem-%s does not give its status %d: %s", name, typ.Status(), row)
		}
	}
	for name := range rows {
		if !declared[name] {
			t.Errorf("README.md lists problem-%s, which the API does not declare", name)
		}
	}
	var enum []string
	for _, v := range apicontract.MustLoad(t).Document().Components.Schemas["ProblemType"].Value.Enum {
		s, _ := v.(string)
		enum = append(enum, s)
	}
	slices.Sort(enum)
	slices.Sort(uris)
	if !slices.Equal(enum, uris) {
		t.Errorf("api/openapi.yaml's ProblemType lists\n%s\nthe API declares\n%s", strings.Join(enum, "\n"), strings.Join(uris, "\n"))
	}
}
