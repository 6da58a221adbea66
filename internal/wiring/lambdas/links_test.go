package lambdas_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

const module = "github.com/bikerental/bikerental/"

// The parts only some functions run, by the packages that make them.
var (
	httpAPI   = []string{module + "internal/ports/httpapi"}
	providers = []string{module + "internal/adapters/provider/", "github.com/stripe/stripe-go/", "github.com/aws/aws-sdk-go-v2/service/secretsmanager"}
	schedules = []string{module + "deadlines/schedules", "github.com/aws/aws-sdk-go-v2/service/scheduler"}
	sweeping  = []string{module + "internal/wiring/sweepfn", module + "internal/app/repair", module + "internal/ports/lambda/sweepmetrics"}
	streams   = []string{module + "internal/wiring/streamfn"}
)

// mustNotLink is, for each function and for the package every function's recipe
// imports (internal/wiring), the packages it must not link: each function links
// what it runs and nothing of the others' parts.
var mustNotLink = map[string][][]string{
	lambdas.Command:     {schedules, sweeping, streams},
	lambdas.Process:     {httpAPI, schedules, sweeping},
	lambdas.Projector:   {httpAPI, providers, sweeping},
	lambdas.Sweep:       {httpAPI, schedules, streams},
	"./internal/wiring": {httpAPI, providers, schedules, sweeping, streams},
}

// TestEachFunctionLinksWhatItRuns lists each function's packages as its build
// links them (go list -deps, with the tags the functions are built with) and
// refuses a part it does not run: the projector links nothing of the HTTP API or
// the payment provider, and so on.
func TestEachFunctionLinksWhatItRuns(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	pkgs := map[string]string{"./internal/wiring": "./internal/wiring"}
	for _, f := range lambdas.All() {
		pkgs[f.Name] = f.Package
	}
	for name, pkg := range pkgs {
		cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, group := range mustNotLink[name] {
			for _, dep := range deps {
				for _, prefix := range group {
					if strings.HasPrefix(dep, prefix) {
						t.Errorf("%s links %s", name, dep)
					}
				}
			}
		}
		if len(deps) == 0 {
			t.Errorf("%s: go list named no package", name)
		}
	}
	if len(pkgs) != len(mustNotLink) {
		t.Errorf("%d functions and internal/wiring, %d rules: every function has its rule", len(pkgs), len(mustNotLink))
	}
}
