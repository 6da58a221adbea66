package stripemock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/childproc"
)

func TestMain(m *testing.M) { Main(m) }

func get(t *testing.T, rawURL string, key string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestServerAnswersAsStripeOnLoopback: the shared server answers on 127.0.0.1 as
// Stripe's API does, reflecting the id in the path, and refuses what the API would
// refuse by its schema.
func TestServerAnswersAsStripeOnLoopback(t *testing.T) {
	s := Start(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Fatalf("URL %q: want http://127.0.0.1:<port>", s.URL)
	}

	resp, body := get(t, s.URL+"/v1/payment_intents/pi_123abc", SecretKey)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Stripe-Mock-Version") == "" {
		t.Fatalf("GET a PaymentIntent: %s %s", resp.Status, body)
	}
	var pi struct{ ID, Object string }
	if err := json.Unmarshal(body, &pi); err != nil || pi.ID != "pi_123abc" || pi.Object != "payment_intent" {
		t.Fatalf("GET a PaymentIntent: %+v, %v: want the id of the path", pi, err)
	}

	if resp, body := get(t, s.URL+"/v1/payment_intents/pi_123abc", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a key: %s %s, want 401", resp.Status, body)
	}
	if resp, body := get(t, s.URL+"/v1/payment_intents?no_such_parameter=1", SecretKey); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown parameter: %s %s, want 400", resp.Status, body)
	}
	if resp, body := get(t, s.URL+"/v1/no_such_resource", SecretKey); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown URL: %s %s, want 404", resp.Status, body)
	}
}

// TestServerListensOnNoTCPPort: stripe-mock itself has no TCP listener at all (its
// HTTP is on a Unix socket, its HTTPS is off), so nothing of it is reachable beyond
// loopback; only this process's proxy listens, on 127.0.0.1.
func TestServerListensOnNoTCPPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	s := Start(t)
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.proc.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", s.proc.Pid(), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		t.Fatal("stripe-mock holds no socket: the check would prove nothing")
	}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", s.proc.Pid(), table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] { // 0A: LISTEN
				t.Errorf("stripe-mock listens on TCP %s (%s)", f[1], table)
			}
		}
	}
}

// TestStopEndsTheServer: Stop ends the process, closes the proxy and removes the
// socket's directory; a second Stop does nothing.
func TestStopEndsTheServer(t *testing.T) {
	if _, err := Find(); err != nil {
		Start(t) // skips, or fails under CI=true
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s, err := StartServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := get(t, s.URL+"/v1/balance", SecretKey); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/balance: %s %s", resp.Status, body)
	}
	s.Stop()
	select {
	case <-s.Exited():
	default:
		t.Fatal("the process still runs after Stop")
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket's directory %s is left: %v", s.dir, err)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(s.URL + "/v1/balance"); err == nil {
		resp.Body.Close()
		t.Fatalf("the proxy still answers after Stop: %s", resp.Status)
	}
	s.Stop()
}

func TestFind(t *testing.T) {
	t.Run("STRIPE_MOCK wins and must exist", func(t *testing.T) {
		t.Setenv("STRIPE_MOCK", filepath.Join(t.TempDir(), "nothing-here"))
		if _, err := Find(); err == nil || !strings.Contains(err.Error(), "STRIPE_MOCK") {
			t.Fatalf("Find = %v, want an error about STRIPE_MOCK", err)
		}
	})
	t.Run("STRIPE_MOCK", func(t *testing.T) {
		exe := filepath.Join(t.TempDir(), "my-stripe-mock")
		if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("STRIPE_MOCK", exe)
		if got, err := Find(); err != nil || got != exe {
			t.Fatalf("Find = %q, %v; want %q", got, err, exe)
		}
	})
	t.Run("nowhere", func(t *testing.T) {
		t.Setenv("STRIPE_MOCK", "")
		t.Setenv("PATH", t.TempDir())
		t.Chdir(t.TempDir()) // no go.mod above: no bin/stripe-mock
		if _, err := Find(); !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("Find = %v, want ErrNotInstalled", err)
		}
	})
	t.Run("PATH", func(t *testing.T) {
		dir := t.TempDir()
		exe := filepath.Join(dir, "stripe-mock")
		if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("STRIPE_MOCK", "")
		t.Setenv("PATH", dir)
		t.Chdir(t.TempDir())
		if got, err := Find(); err != nil || got != exe {
			t.Fatalf("Find = %q, %v; want %q", got, err, exe)
		}
	})
}

// TestStartServerReportsAnExecutableThatIsNotStripeMock: a binary that exits at once
// is reported with its log, not waited for until the deadline.
func TestStartServerReportsAnExecutableThatIsNotStripeMock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses a shell script")
	}
	exe := filepath.Join(t.TempDir(), "stripe-mock")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho 'not stripe-mock' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRIPE_MOCK", exe)
	start := time.Now()
	_, err := StartServer(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "not stripe-mock") {
		t.Fatalf("StartServer = %v, want an exit during start-up quoting the log", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to notice", d)
	}
}

func TestVerdict(t *testing.T) {
	// Real child processes stand in for stripe-mock: one that keeps running, one that
	// has already exited.
	process := func(args ...string) *childproc.Process {
		p, err := childproc.Start(args[0], exec.Command(args[0], args[1:]...), filepath.Join(t.TempDir(), "log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	sleeping := process("sleep", "60")
	running := &Server{Path: "/x/stripe-mock", Version: Version, proc: sleeping}
	other := &Server{Path: "/x/stripe-mock", Version: "v0.100.0", proc: sleeping}
	gone := &Server{Path: "/x/stripe-mock", Version: Version, proc: process("true"), dir: t.TempDir()}
	<-gone.proc.Exited()
	notFound := fmt.Errorf("wrapped: %w", ErrNotInstalled)
	for _, c := range []struct {
		name      string
		err       error
		s         *Server
		ci        bool
		wantMsg   bool
		wantFatal bool
	}{
		{"missing, locally: skip", notFound, nil, false, true, false},
		{"missing, under CI: fail", notFound, nil, true, true, true},
		{"found but broken: fail", errors.New("exited during start-up"), nil, false, true, true},
		{"running", nil, running, false, false, false},
		{"running, under CI", nil, running, true, false, false},
		{"another version, locally", nil, other, false, false, false},
		{"another version, under CI: fail", nil, other, true, true, true},
		{"exited since: fail", nil, gone, false, true, true},
	} {
		msg, fatal := verdict(c.err, c.s, c.ci)
		if (msg != "") != c.wantMsg || fatal != c.wantFatal {
			t.Errorf("%s: verdict = %q, fatal %v", c.name, msg, fatal)
		}
	}
}
