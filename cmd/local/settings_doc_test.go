package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
	"github.com/bikerental/bikerental/internal/wiring/operatorenv"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// settingsPage is the settings reference, a table with a row per variable.
var settingsPage = filepath.Join("..", "..", "docs", "settings.md")

// settingRow matches a row of the settings table: | `NAME` | default | meaning |.
var settingRow = regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]*)` \\| ([^|]*) \\| ([^|]*) \\|$")

// documentedSettings reads the settings page's table: each variable's default cell.
func documentedSettings(t *testing.T) map[string]string {
	t.Helper()
	page, err := os.ReadFile(settingsPage)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for line := range strings.SplitSeq(string(page), "\n") {
		m := settingRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, twice := rows[m[1]]; twice {
			t.Errorf("docs/settings.md lists %s twice", m[1])
		}
		if strings.TrimSpace(m[3]) == "" {
			t.Errorf("docs/settings.md gives %s no meaning", m[1])
		}
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	if len(rows) == 0 {
		t.Fatal("docs/settings.md has no table of settings")
	}
	return rows
}

// settingsRead is every variable make run reads while it checks its settings (its
// own and every function's, the runner's defaults filled in), over environments that
// take each branch that reads more (Stripe, precise deadlines, a real console
// sign-in), with every variable rentalctl reads.
func settingsRead(t *testing.T) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	for _, env := range []map[string]string{
		{},
		{paymentfn.EnvProvider: paymentfn.Stripe, paymentfn.EnvStripeAPIURL: "http://127.0.0.1:12111"},
		{paymentfn.EnvProvider: paymentfn.Stripe, paymentfn.EnvStripeSecretID: "bikerental/stripe"},
		{wiring.EnvDeadlineMode: wiring.ModePrecise},
		{commandfn.EnvConsoleSignIn: httpapi.ConsoleSignInOIDC, commandfn.EnvConsoleIssuer: "https://issuer.example", commandfn.EnvConsoleClientID: "console"},
	} {
		getenv := func(name string) string {
			read[name] = true
			return env[name]
		}
		if _, err := parseSettings(withDefaults(getenv)); err != nil {
			t.Fatalf("make run refuses %v: %v", env, err)
		}
	}
	for _, name := range operatorenv.Names() {
		read[name] = true
	}
	read[operatorenv.AWSEndpoint] = true // make run's too, where it decides to start moto
	return read
}

// codeDefaults is each setting's value when it is left unset, from the code that
// reads it: make run's own defaults, the local stack's, and the functions'.
func codeDefaults(t *testing.T) map[string]string {
	t.Helper()
	unset := func(string) string { return "" }
	out := map[string]string{}
	for name, v := range defaults { // make run's
		out[name] = v
	}
	period, err := wiring.RentalPeriod(unset)
	if err != nil {
		t.Fatal(err)
	}
	price, err := wiring.RentalPrice(unset)
	if err != nil {
		t.Fatal(err)
	}
	mode, err := wiring.RecordingMode(unset)
	if err != nil {
		t.Fatal(err)
	}
	service, err := wiring.MetricsService(unset)
	if err != nil {
		t.Fatal(err)
	}
	level, err := wiring.LogLevel(unset)
	if err != nil {
		t.Fatal(err)
	}
	deadlineMode, err := wiring.DeadlineMode(unset)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		wiring.EnvDeadlinesShards:        deadlinetable.DefaultShards,
		wiring.EnvMarkerTTL:              deadlinetable.DefaultMarkerTTL,
		wiring.EnvPaymentTimeout:         deadlinekinds.DefaultTimeout,
		wiring.EnvStuckGrace:             deadlinekinds.DefaultGrace,
		wiring.EnvRentalPeriod:           period,
		wiring.EnvSweepConcurrency:       deadlines.DefaultConcurrency,
		wiring.EnvSweepRate:              "rate(1 minute)", // what SweepInterval reads an unset one as
		wiring.EnvStreamConcurrency:      awslambda.DefaultConcurrency,
		wiring.EnvRecordingMode:          mode,
		wiring.EnvRentalPrice:            price.Amount,
		wiring.EnvRentalCurrency:         price.Currency,
		wiring.EnvMaxPendingPerRenter:    renter.DefaultMaxPending,
		wiring.EnvOperatorScope:          httpapi.DefaultOperatorScope,
		wiring.EnvMetricsService:         service,
		wiring.EnvLogLevel:               strings.ToLower(level.String()),
		wiring.EnvDeadlineMode:           deadlineMode,
		commandfn.EnvConsoleSignIn:       httpapi.ConsoleSignInLocal, // make run's (local.withConsoleDefaults)
		wiring.EnvStuckRepair:            "auto",                     // what wiring's stuckRepair reads an unset one as
		paymentfn.EnvProvider:            paymentfn.Generic,
		paymentfn.EnvProviderTimeout:     command.DefaultProviderTimeout,
		paymentfn.EnvStripeSecretKey:     stripemock.SecretKey,             // make run's, with stripe
		paymentfn.EnvStripeWebhookSecret: local.DefaultStripeWebhookSecret, // make run's, with stripe
	} {
		out[name] = fmt.Sprint(v)
	}
	return out
}

// sameDefault reports whether a row's default cell states want: its first code
// span, compared as a duration where want is one (15m0s is 15m).
func sameDefault(cell, want string) bool {
	_, rest, ok := strings.Cut(cell, "`")
	stated, _, closed := strings.Cut(rest, "`")
	if !ok || !closed {
		return false
	}
	if w, err := time.ParseDuration(want); err == nil && strings.ContainsAny(want, "hms") {
		s, err := time.ParseDuration(stated)
		return err == nil && s == w
	}
	return stated == want
}

// TestTheSettingsPageListsEverySettingTheCodeReads holds docs/settings.md to the
// code: a row for every variable make run (and with it every function) and rentalctl
// read, no row for one they do not, and each row's default the code's.
func TestTheSettingsPageListsEverySettingTheCodeReads(t *testing.T) {
	rows := documentedSettings(t)
	read := settingsRead(t)
	var missing, extra []string
	for name := range read {
		if _, ok := rows[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range rows {
		if !read[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("docs/settings.md has no row for %v, which the code reads", missing)
	}
	if len(extra) > 0 {
		t.Errorf("docs/settings.md lists %v, which no program reads", extra)
	}
	want := codeDefaults(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range rows {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		cell := rows[name]
		def, has := want[name]
		switch {
		case has && !sameDefault(cell, def):
			t.Errorf("docs/settings.md gives %s the default %q, the code %q", name, cell, def)
		case !has && cell != "—":
			t.Errorf("docs/settings.md gives %s the default %q, the code none (write —)", name, cell)
		}
	}
	for name := range want {
		if !read[name] {
			t.Errorf("the test knows a default for %s, which no program reads", name)
		}
	}
}
