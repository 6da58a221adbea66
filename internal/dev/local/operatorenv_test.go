package local_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/operatorenv"
)

// block is what a pasted OperatorEnv block leaves in a shell: the variables it
// exports, with their values as the shell reads them, and those it unsets.
type block struct {
	set   map[string]string
	unset []string
}

func parseBlock(t *testing.T, text string) block {
	t.Helper()
	b := block{set: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if rest, ok := strings.CutPrefix(line, "unset "); ok {
			b.unset = append(b.unset, strings.Fields(rest)...)
			continue
		}
		rest, ok := strings.CutPrefix(line, "export ")
		name, value, found := strings.Cut(rest, "=")
		if !ok || !found {
			t.Fatalf("block line %q is neither an export nor an unset", line)
		}
		if strings.HasPrefix(value, "'") {
			value = strings.ReplaceAll(strings.Trim(value, "'"), `'\''`, "'")
		}
		b.set[name] = value
	}
	return b
}

// operatorEnv starts a stack with settings on the shared emulator and returns its
// block.
func operatorEnv(t *testing.T, settings map[string]string) (block, string) {
	t.Helper()
	cfg := emulatortest.Config(t)
	env := map[string]string{wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvDeadlinesTable: emulatortest.TableName(t, "pending"),
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	for k, v := range settings {
		env[k] = v
	}
	up, err := local.StartWith(context.Background(), local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Stop)
	var out bytes.Buffer
	up.OperatorEnv(&out)
	return parseBlock(t, out.String()), out.String()
}

// TestTheOperatorBlockSetsEverythingRentalctlReads: the block make run prints names
// every variable rentalctl reads, once, exported with the stack's own value or
// unset, so that rentalctl pending shows the stack's PAYMENT_TIMEOUT.
func TestTheOperatorBlockSetsEverythingRentalctlReads(t *testing.T) {
	b, text := operatorEnv(t, map[string]string{wiring.EnvPaymentTimeout: "5s", wiring.EnvDeadlinesShards: "2"})
	for _, name := range operatorenv.Names() {
		_, exported := b.set[name]
		if n := strings.Count(text, " "+name+"=") + strings.Count(text, " "+name+"\n") + strings.Count(text, " "+name+" "); n != 1 || exported == slices.Contains(b.unset, name) {
			t.Errorf("%s appears %d times in the block (exported %v), want once, exported or unset:\n%s", name, n, exported, text)
		}
	}
	cfg := emulatortest.Config(t)
	for name, want := range map[string]string{
		"AWS_ENDPOINT_URL": *cfg.BaseEndpoint, "AWS_REGION": cfg.Region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		wiring.EnvPaymentTimeout: "5s", wiring.EnvDeadlinesShards: "2", operatorenv.ScheduleName: local.SweepSchedule,
	} {
		if got := b.set[name]; got != want {
			t.Errorf("the block exports %s=%q, want %q:\n%s", name, got, want, text)
		}
	}
	// rentalctl reads its deadline through the same rule as the functions.
	policy, err := wiring.DeadlinePolicy(func(k string) string { return b.set[k] })
	if err != nil || policy.Timeout != 5*time.Second || policy.Grace != 10*time.Minute {
		t.Errorf("the policy rentalctl reads from the block: %+v, %v; want a 5s timeout and the default grace", policy, err)
	}
	for _, name := range []string{"AWS_SESSION_TOKEN", operatorenv.RuleName, wiring.EnvStuckGrace} {
		if !slices.Contains(b.unset, name) {
			t.Errorf("the block leaves %s as the shell has it; want it unset:\n%s", name, text)
		}
	}
}

// TestTheOperatorBlockPrintsNoSecret: a Stripe key that is not stripe-mock's public
// one is referred to, never printed.
func TestTheOperatorBlockPrintsNoSecret(t *testing.T) {
	const key = "sk_live_not-to-be-printed"
	b, text := operatorEnv(t, map[string]string{"PAYMENT_PROVIDER": "stripe", "STRIPE_API_URL": "http://127.0.0.1:9", "STRIPE_SECRET_KEY": key})
	if strings.Contains(text, key) || b.set["STRIPE_SECRET_KEY"] != `"$STRIPE_SECRET_KEY"` {
		t.Errorf("the block shows the Stripe key:\n%s", text)
	}
	if b.set["STRIPE_API_URL"] != "http://127.0.0.1:9" || b.set["PAYMENT_PROVIDER"] != "stripe" {
		t.Errorf("the block's provider settings:\n%s", text)
	}
}

// TestTheOperatorsGuideShowsTheOperatorBlock: the operator's guide's block for
// rentalctl against make run names every variable rentalctl reads.
func TestTheOperatorsGuideShowsTheOperatorBlock(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(guide), "rentalctl against this stack: paste this into a shell")
	section, _, _ := strings.Cut(after, "```\n\n")
	if !ok {
		t.Fatal("docs/operators.md does not show make run's block for rentalctl")
	}
	for _, name := range operatorenv.Names() {
		if !strings.Contains(section, " "+name) {
			t.Errorf("docs/operators.md's block for rentalctl leaves out %s", name)
		}
	}
}
