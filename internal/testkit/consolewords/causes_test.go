package consolewords_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/app/rentalview"
)

// root is the module's root, from this package's directory.
var root = filepath.Join("..", "..", "..")

// consoleSource reads one of the console's files.
func consoleSource(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "internal", "ports", "httpapi", "console", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// causeCases are causation ids of every kind the code writes, and the edges of
// their forms; each is named in words by the console and by CauseOf.
var causeCases = []string{
	"",
	"evt-approved", // an event of the history
	"request:5f0c1a2b-7d1c",
	"sweep:2026-12-01T18:40:55.123Z",
	"deadline:rp_bike-42-01J",
	"provider-event:generic:evt-1",
	"provider-event:stripe:evt_1:with:colons",
	"provider-event:stripe:sha256:9f86d081884c7d659a2feaa0c55ad015",
	"provider-event:generic",
	"provider-event:",
	"rentalctl:cancel:2026-12-01T18:40:55Z",
	"provider-payment:stripe:pi_3abc",
	"provider-payment:stripe:sha256:9f86d081",
	"request:<img src=x onerror=alert(1)>",
	"someone-else:x",
	"no-colon",
}

// history is the rental's history the causes are named against: an event a
// cause may name by its id.
var history = []rentalview.Entry{
	{EventID: "evt-requested", Stream: "bike-bike-42", Version: 7, Type: "BikeRequested"},
	{EventID: "evt-approved", Stream: "rentalpayment-bike-42-01J", Version: 2, Type: "RentalPaymentProcessCompleted"},
}

// consoleCauses runs the console's own cause function (rental.js) in headless
// Chromium over ids, against history, and returns its words.
func consoleCauses(t *testing.T, ids []string) []string {
	src := consoleSource(t, "rental.js")
	// The module's imports are of functions cause never calls; without them, and
	// without export, the file is a function body that returns cause.
	src = regexp.MustCompile(`(?m)^import .*;$`).ReplaceAllString(src, "")
	src = regexp.MustCompile(`(?m)^export `).ReplaceAllString(src, "")
	srcJSON, _ := json.Marshal(src + "\nreturn cause;")
	idsJSON, _ := json.Marshal(ids)
	histJSON, _ := json.Marshal(history)
	expr := `(() => {
		const cause = new Function(` + string(srcJSON) + `)();
		const hist = ` + string(histJSON) + `;
		const byId = new Map(hist.filter((e) => e.eventId).map((e) => [e.eventId, e]));
		return ` + string(idsJSON) + `.map((id) => cause({ causationId: id }, byId));
	})()`
	ctx := browser(t)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("open a page in Chromium: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](expr))
	if err != nil {
		t.Fatalf("run the console's cause in Chromium: %v", err)
	}
	return got
}

// browser starts one headless Chromium for the test, or skips the test when there
// is none (fails under CI=true: make chromium installs it).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path != "" {
			break
		}
		if p, err := exec.LookPath(name); err == nil {
			path = p
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on PATH (or CHROMIUM): install it with make chromium")
		}
		t.Skip("no chromium on PATH (or CHROMIUM): install it with make chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx
}

// TestTheConsoleAndRentalctlNameCausesAlike: for a causation id of every kind, and
// the edges of their forms, the console's rental page (its own JavaScript, in
// Chromium) and rentalctl history (rentalview.View.CauseOf) say the same words.
func TestTheConsoleAndRentalctlNameCausesAlike(t *testing.T) {
	view := rentalview.View{History: history}
	got := consoleCauses(t, causeCases)
	if len(got) != len(causeCases) {
		t.Fatalf("the console named %d causes, want %d", len(got), len(causeCases))
	}
	for i, id := range causeCases {
		if want := view.CauseOf(rentalview.Entry{CausationID: id}); got[i] != want {
			t.Errorf("cause %q: the console says %q, rentalctl %q", id, got[i], want)
		}
	}
}

// TestEveryKindOfCauseIsNamedOnBothSides: the kinds of causation id the console's
// cause function knows are the kinds CauseOf knows (rentalview.CauseKinds), every
// one of them is among causeCases, and every kind the code writes (a literal
// "<kind>:…" built into a causation id) is one of them; so a kind added on one
// side, or written by new code, fails here until both sides name it.
func TestEveryKindOfCauseIsNamedOnBothSides(t *testing.T) {
	src := consoleSource(t, "rental.js")
	body, ok := between(src, "function cause(", "\n}\n")
	if !ok {
		t.Fatal("rental.js has no function cause")
	}
	var console []string
	for _, m := range regexp.MustCompile(`case '([a-z-]+)':`).FindAllStringSubmatch(body, -1) {
		console = append(console, m[1])
	}
	kinds := rentalview.CauseKinds()
	if a, b := sorted(console), sorted(kinds); !slices.Equal(a, b) {
		t.Errorf("the console names the causes %v, rentalview.CauseKinds %v", a, b)
	}
	for _, k := range kinds {
		if !slices.ContainsFunc(causeCases, func(id string) bool { return strings.HasPrefix(id, k+":") }) {
			t.Errorf("no case of the cause %s in causeCases", k)
		}
	}
	for kind, where := range writtenKinds(t) {
		if !slices.Contains(kinds, kind) {
			t.Errorf("%s writes causation ids of the kind %q, which neither the console nor rentalctl names", where, kind)
		}
	}
}

// writtenKinds finds the kinds of causation id the service's code (and the
// deadlines module's, which names what caused a sweep's commands) builds: a string
// literal "<kind>:…" followed by + on a line that speaks of a causation id or a
// cause (CausationID: "request:" + id, cause := "sweep:" + now) or hands a
// deadline's kind its cause (k.Act(ctx, row, "deadline:"+key)); tags are not
// causes.
func writtenKinds(t *testing.T) map[string]string {
	t.Helper()
	literal := regexp.MustCompile(`"([a-z][a-z-]*):[^"]*"\s*\+`)
	causeLine := regexp.MustCompile(`(?i)caus|\.Act\(`)
	found := map[string]string{}
	for _, dir := range []string{"internal", "cmd", "deadlines"} { // the deadlines module writes the sweep's causes
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for n, line := range strings.Split(string(b), "\n") {
				if !causeLine.MatchString(line) || strings.Contains(line, "Tags:") {
					continue
				}
				for _, m := range literal.FindAllStringSubmatch(line, -1) {
					found[m[1]] = strings.TrimPrefix(path, root+string(filepath.Separator)) + ":" + strconv.Itoa(n+1)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 5 {
		t.Fatalf("found only %v written as causation ids: the search has gone blind", found)
	}
	return found
}

func between(s, from, to string) (string, bool) {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, to)
	return body, ok
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
