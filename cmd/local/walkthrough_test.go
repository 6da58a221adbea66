package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/emulator"
)

// walkThrough is the README's curl walk-through, as a script: it runs against
// make run's default address, API=http://127.0.0.1:3000 on its first line.
const walkThrough = "testdata/walkthrough.sh"

// walkStep is what one step of the walk-through answers: its status, and words its
// answer holds.
type walkStep struct {
	status int
	holds  []string
}

// walkSteps are the walk-through's steps (its curl commands outside token and
// await), in order.
var walkSteps = []walkStep{
	{201, nil},                                  // an operator registers a bike
	{403, []string{"forbidden"}},                // alice is no operator
	{401, nil},                                  // no token
	{200, []string{`"available":true`}},         // the bike, to anyone
	{202, []string{`"rentalId":"`}},             // alice asks for it
	{202, []string{`"rentalId":"`}},             // the same key: the same answer
	{200, []string{`"status":"`, `"history":`}}, // her rental
	{200, []string{`"rentals":`}},               // her rentals
	{404, nil},                                  // not bob's
	{409, []string{"bike-unavailable"}},         // the bike is taken
	{201, nil},                                  // another bike
	{409, []string{"too-many-pending-requests"}},
	{200, []string{`"status":"confirmed"`}},  // the provider's webhook
	{200, []string{`"duplicate":true`}},      // again: applied once
	{401, nil},                               // the body changed under the signature
	{200, []string{`"status":"approved"`}},   // the rental, approved
	{201, nil},                               // a bike for bob
	{202, []string{`"rentalId":"`}},          // bob asks for it
	{200, []string{`"outcome":"cancelled"`}}, // an operator gives up on the payment
	{200, []string{`"outcome":"nothing-to-do"`}},
	{200, []string{`"status":"cancelled"`, `"refund":"owed"`}}, // bob pays too late
}

// recorder runs before the walk-through: its curl records each step's status and
// answer under $STEPS (numbered across subshells by a file), and passes the
// helpers' calls (token, await) through unrecorded.
const recorder = `
curl() {
  case "${FUNCNAME[1]}" in token|await) command curl "$@"; return;; esac
  local n=$(( $(cat "$STEPS/count" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$STEPS/count"
  command curl -o "$STEPS/$n.out" -w '%{http_code}' "$@" > "$STEPS/$n.status"
  cat "$STEPS/$n.out"
}
`

// TestTheWalkThroughRunsTwiceOnOneStack runs the README's walk-through twice in a
// row against one stack brought up as make run brings it up: every step answers
// what it says, the second time too (each run has ids of its own).
func TestTheWalkThroughRunsTwiceOnOneStack(t *testing.T) {
	if _, err := emulator.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("moto_server is required under CI=true: %v", err)
		}
		t.Skipf("SKIPPED, moto_server unavailable: %v", err)
	}
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walk-through needs %s: %v", tool, err)
		}
	}
	script := readFile(t, walkThrough)
	const defaultAPI = "API=http://127.0.0.1:3000\n"
	if !strings.HasPrefix(script, defaultAPI) {
		t.Fatalf("%s does not start with %q", walkThrough, defaultAPI)
	}
	checkComments(t, script)

	_, done, stdout, stderr := runner(t)
	api := awaitAPI(t, done, stdout, stderr)
	for run := 1; run <= 2; run++ {
		steps := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		sh := exec.CommandContext(ctx, "bash", "-c", recorder+"API="+api+"\n"+strings.TrimPrefix(script, defaultAPI))
		sh.Env = append(os.Environ(), "STEPS="+steps)
		out, err := sh.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("run %d: the walk-through failed: %v\n%s", run, err, out)
		}
		count, _ := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(steps, "count"))))
		if count != len(walkSteps) {
			t.Fatalf("run %d: %d steps ran, want %d\n%s", run, count, len(walkSteps), out)
		}
		for i, want := range walkSteps {
			n := strconv.Itoa(i + 1)
			status, answer := readFile(t, filepath.Join(steps, n+".status")), readFile(t, filepath.Join(steps, n+".out"))
			if status != strconv.Itoa(want.status) {
				t.Errorf("run %d, step %d: status %s, want %d; answer:\n%s", run, i+1, status, want.status, answer)
			}
			for _, w := range want.holds {
				if !strings.Contains(answer, w) {
					t.Errorf("run %d, step %d: the answer does not hold %s:\n%s", run, i+1, w, answer)
				}
			}
		}
	}
}

// awaitAPI waits, up to 90 seconds, for the runner to print its API's address.
func awaitAPI(t *testing.T, done <-chan error, stdout, stderr string) string {
	t.Helper()
	addr := regexp.MustCompile(`API: (http://127\.0\.0\.1:[0-9]+)`)
	deadline := time.After(90 * time.Second)
	for {
		if m := addr.FindStringSubmatch(readFile(t, stdout)); m != nil && strings.Contains(readFile(t, stdout), "Operator console: ") {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("the runner ended (%v) before it was up; stderr:\n%s", err, readFile(t, stderr))
		case <-deadline:
			t.Fatalf("the runner was not up within 90s; stderr:\n%s", readFile(t, stderr))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkComments holds the walk-through's comments to walkSteps: the step a status
// comment ends (# 201 …, # 403: …) says the status the step answers.
func checkComments(t *testing.T, script string) {
	t.Helper()
	said := regexp.MustCompile(`#\s+([1-5][0-9][0-9])\b`)
	var statuses []int
	for _, line := range strings.Split(script, "\n") {
		if m := said.FindStringSubmatch(line); m != nil && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			n, _ := strconv.Atoi(m[1])
			statuses = append(statuses, n)
		}
	}
	if len(statuses) != len(walkSteps) {
		t.Fatalf("%s says the status of %d steps, walkSteps lists %d", walkThrough, len(statuses), len(walkSteps))
	}
	for i, s := range statuses {
		if s != walkSteps[i].status {
			t.Errorf("step %d: the walk-through says %d, walkSteps %d", i+1, s, walkSteps[i].status)
		}
	}
}

// TestTheReadmeShowsTheWalkThrough: the README's walk-through is the script the
// test above runs, line for line.
func TestTheReadmeShowsTheWalkThrough(t *testing.T) {
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	script := readFile(t, walkThrough)
	if !strings.Contains(readme, "```sh\n"+script+"```\n") {
		t.Fatalf("the README's curl walk-through is not %s, the one the tests run twice: put it there as a sh block", walkThrough)
	}
}
