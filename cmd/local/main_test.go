package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
)

// refusalForm is the one form of a refused setting (wiring.SettingError), as make
// run prints it: the variable, its value quoted or left out, and what it wants.
func refusalForm(variable string) *regexp.Regexp {
	v := regexp.QuoteMeta(variable)
	return regexp.MustCompile(`^(bad setting ` + v + `=".*"|bad setting ` + v + ` \(not shown\)|missing setting ` + v + `): want \S.*$`)
}

// TestABadSettingIsRefusedBeforeAnythingStarts: make run checks every setting, its
// own and the functions', before it claims its port or brings the stack up (the
// emulator first): the stack's start is never reached, and what it says is the
// refusal of that variable in the one form, without the chain of who read it.
func TestABadSettingIsRefusedBeforeAnythingStarts(t *testing.T) {
	for _, tc := range []struct{ variable, value string }{
		{"PORT", "http"},
		{"PORT", "65536"},
		{"SWEEP_INTERVAL", "5"},
		{"SWEEP_INTERVAL", "-5s"},
		{"LOG_FORMAT", "xml"},
		{"RENTAL_CURRENCY", "euro"},
		{"RENTAL_PRICE_CENTS", "0"},
		{"RECORDING_MODE", "fax"},
		{"DEADLINES_SHARDS", "300"},
		{"PAYMENT_TIMEOUT", "15"},
		{"DEADLINE_MODE", "exact"},
		{"PAYMENT_PROVIDER", "paypal"},
		{"PAYMENT_WEBHOOK_SECRET", "short"},
		{"OPERATOR_SCOPE", "ops scope"},
		{"MAX_PENDING_PER_RENTER", "none"},
		{"DEADLINES_TABLE", "p"},
		{"LOG_LEVEL", "loud"},
		{"STUCK_GRACE", "-1m"},
		{"RENTAL_PERIOD", "0"},
		{"SWEEP_CONCURRENCY", "many"},
		{"STUCK_REPAIR", "sometimes"},
		{"DEADLINE_TARGET_ARN", "the-sweep"},
		{"DEADLINE_SCHEDULE_GROUP", "a/b"},
		{"METRICS_SERVICE", " "},
		{"EVENTS_TABLE", "x"},
		{"CONSOLE_SIGN_IN", "password"},
		{"OPERATOR_GROUP", "ops team"},
		{"STREAM_CONCURRENCY", "0"},
		{"SETTLED_MARKER_TTL", "1"},
		{"PAYMENT_PROVIDER_TIMEOUT", "1h"},
		{"PAYMENT_WEBHOOK_SECRET_ID", "bike rental"},
		{"STRIPE_SECRET_ID", "bike rental"},
	} {
		t.Run(tc.variable+"="+tc.value, func(t *testing.T) {
			getenv := withDefaults(func(k string) string {
				if k == tc.variable {
					return tc.value
				}
				return ""
			})
			reached := false
			start := func(context.Context, local.Options) (*local.Up, error) {
				reached = true
				return nil, errors.New("this test starts nothing")
			}
			err := run(context.Background(), getenv, start)
			se, ok := wiring.Refused(err)
			if !ok || se.Name != tc.variable {
				t.Fatalf("run = %v, want a refusal of %s", err, tc.variable)
			}
			if got := explain(err); got != se.Error() || !refusalForm(tc.variable).MatchString(got) {
				t.Errorf("make run would say %q, want the refusal of %s alone in its one form", got, tc.variable)
			}
			if reached {
				t.Errorf("run started the stack before refusing %s=%q", tc.variable, tc.value)
			}
		})
	}
	t.Run("control: good settings start the stack", func(t *testing.T) {
		getenv := withDefaults(func(k string) string {
			if k == "PORT" {
				return "0"
			}
			return ""
		})
		reached := false
		start := func(context.Context, local.Options) (*local.Up, error) {
			reached = true
			return nil, errors.New("this test starts nothing")
		}
		if err := run(context.Background(), getenv, start); err == nil || !reached {
			t.Errorf("run = %v, reached the start: %v", err, reached)
		}
	})
}

// TestMain runs main itself when the test binary is started as the runner by the
// tests below, so that they run the program exactly as make run does.
func TestMain(m *testing.M) {
	if os.Getenv(asRunner) == "1" {
		os.Args = os.Args[:1]
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// asRunner, set to 1, makes the test binary run main.
const asRunner = "BIKERENTAL_TEST_RUN_LOCAL_MAIN"

// runner starts this test binary as the runner, with env over the test's
// environment (AWS_ENDPOINT_URL unset, so that it starts its own moto), its stdout
// and stderr into files of their own.
func runner(t *testing.T, env ...string) (cmd *exec.Cmd, done <-chan error, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	stdout, stderr = filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	out, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close(); errs.Close() })
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{asRunner + "=1", "PORT=0"}, env...)...)
	cmd.Stdout, cmd.Stderr = out, errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // a runner the test gave up on
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	return cmd, waited, stdout, stderr
}

// exitCode waits, until the deadline, for cmd to end and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd, done <-chan error, within time.Duration) int {
	t.Helper()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("wait: %v", err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(within):
		cmd.Process.Kill()
		t.Fatalf("the runner did not end within %s", within)
	}
	return -1
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAStopIsACleanExit: Ctrl-C (SIGINT) or SIGTERM stops a running stack and the
// runner ends with status 0, having written no error: nothing on stderr, and no
// log line above info on stdout.
func TestAStopIsACleanExit(t *testing.T) {
	if _, err := emulator.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("moto_server is required under CI=true: %v", err)
		}
		t.Skipf("SKIPPED, moto_server unavailable: %v", err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, done, stdout, stderr := runner(t)
			deadline := time.After(90 * time.Second)
			for !strings.Contains(readFile(t, stdout), "Operator console: ") {
				select {
				case err := <-done:
					t.Fatalf("the runner ended (%v) before it was up; stdout:\n%s\nstderr:\n%s", err, readFile(t, stdout), readFile(t, stderr))
				case <-deadline:
					t.Fatalf("the runner was not up within 90s; stdout:\n%s\nstderr:\n%s", readFile(t, stdout), readFile(t, stderr))
				case <-time.After(50 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := exitCode(t, cmd, done, 30*time.Second)
			out, errs := readFile(t, stdout), readFile(t, stderr)
			if code != 0 {
				t.Errorf("the runner ended with status %d after %s, want 0", code, sig)
			}
			if errs != "" {
				t.Errorf("the runner wrote to stderr after %s:\n%s", sig, errs)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") || strings.Contains(line, "exit status") {
					t.Errorf("the runner logged after %s: %s", sig, line)
				}
			}
		})
	}
}

// TestARefusalIsOneLine: a bad setting ends the runner with status 1 and one line
// on stderr, the setting's refusal in its one form, without the chain of the parts
// that read it; nothing is started.
func TestARefusalIsOneLine(t *testing.T) {
	for _, tc := range []struct{ variable, value, want string }{
		{"RENTAL_CURRENCY", "euro", `make run: bad setting RENTAL_CURRENCY="euro": want an ISO 4217 currency code, 3 letters, such as EUR` + "\n"},
		{"DEADLINE_MODE", "exact", `make run: bad setting DEADLINE_MODE="exact": want sweep or precise` + "\n"},
		{"PAYMENT_WEBHOOK_SECRET", "short", `make run: bad setting PAYMENT_WEBHOOK_SECRET (not shown): want a webhook secret of at least 16 bytes (it is 5 bytes)` + "\n"},
	} {
		t.Run(tc.variable, func(t *testing.T) {
			cmd, done, stdout, stderr := runner(t, tc.variable+"="+tc.value)
			if code := exitCode(t, cmd, done, 30*time.Second); code != 1 {
				t.Errorf("the runner ended with status %d, want 1", code)
			}
			if got := readFile(t, stderr); got != tc.want {
				t.Errorf("stderr = %q, want %q", got, tc.want)
			}
			if got := readFile(t, stdout); got != "" {
				t.Errorf("the runner wrote to stdout before refusing: %q", got)
			}
		})
	}
}
