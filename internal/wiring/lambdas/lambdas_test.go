package lambdas_test

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

// TestEveryMainRunsItsBuilder: each function's main is the one line that runs the
// builder this table names for it, and every directory under functions/ is in the
// table.
func TestEveryMainRunsItsBuilder(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	dirs, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]lambdas.Function{}
	for _, f := range lambdas.All() {
		table[f.Name] = f
	}
	for _, d := range dirs {
		f, ok := table[d.Name()]
		if !ok {
			t.Errorf("functions/%s is not in the table", d.Name())
			continue
		}
		if f.Package != "./functions/"+d.Name() {
			t.Errorf("%s: package %s, want ./functions/%s", f.Name, f.Package, d.Name())
		}
		src, err := os.ReadFile(filepath.Join(root, "functions", d.Name(), "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		full := runtime.FuncForPC(reflect.ValueOf(f.Build).Pointer()).Name() // .../wiring/commandfn.CommandFunction
		call := "wiring.Run(" + full[strings.LastIndex(full, "/")+1:] + ")"
		if !strings.Contains(string(src), call) {
			t.Errorf("functions/%s/main.go does not run %s", d.Name(), call)
		}
		delete(table, d.Name())
	}
	for name := range table {
		t.Errorf("%s is in the table but has no directory under functions/", name)
	}
}
