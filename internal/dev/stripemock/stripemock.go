// Package stripemock is test and local-run support: it runs stripe-mock, Stripe's
// stateless mock of its HTTP API generated from Stripe's OpenAPI specification, for
// the tests of the Stripe payment provider and PAYMENT_PROVIDER=stripe make run.
// It installs nothing: it finds a stripe-mock binary ($STRIPE_MOCK, else bin/stripe-mock under the module root, where `make
// stripe-mock` puts the pinned Version, else stripe-mock on PATH), starts it, waits
// until it answers and stops it.
//
// stripe-mock's own flags cannot make it listen on loopback only and over HTTP only:
// -http-port binds every interface, and -http-addr 127.0.0.1:0 leaves HTTPS running
// on every interface at port 12112. So stripe-mock is started with -http-unix on a
// socket in a private temporary directory (which turns its HTTPS listener off), and
// clients reach it through a reverse proxy in this process on 127.0.0.1 at a port the
// kernel picks: nothing listens beyond loopback and there is no free-port race.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { stripemock.Main(m) }
//
// and stripemock.Start(t) in the tests that need the server. When stripe-mock is not
// installed, those tests fail under CI=true and are skipped with the reason otherwise.
//
// stripe-mock validates requests against the API's schema (unknown or mistyped
// parameters, missing required ones, unknown URLs, a key that is not a test key) and
// answers with fixtures of the right shape, reflecting scalar request parameters, but
// it keeps no state: it does not show idempotency, an object's status after a call
// or any error that depends on an object's state.
package stripemock

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/childproc"
	"github.com/bikerental/bikerental/internal/dev/emulator"
)

// Version is the version of stripe-mock the project is tested against, as `make
// stripe-mock` installs it: go install github.com/stripe/stripe-mock@Version.
const Version = "v0.203.0"

// Module is stripe-mock's Go module path.
const Module = "github.com/stripe/stripe-mock"

// SecretKey is a secret key stripe-mock accepts: it wants "sk_test_" or "rk_test_"
// followed by something without an underscore.
const SecretKey = "sk_test_123"

// ErrNotInstalled reports that no stripe-mock executable could be found.
var ErrNotInstalled = errors.New("stripemock: stripe-mock not found (install it with `make stripe-mock`, put it on PATH, or set STRIPE_MOCK)")

// StartTimeout bounds how long StartServer waits for stripe-mock to answer, whatever
// the caller's context allows (it loads an 8 MB specification first: about a second).
const StartTimeout = 30 * time.Second

// Server is a running stripe-mock and the loopback proxy in front of it.
type Server struct {
	// URL is the base URL clients use, e.g. "http://127.0.0.1:41234": give it to
	// the Stripe client as its API URL.
	URL string
	// Path is the stripe-mock executable that runs.
	Path string
	// Version is the module version the executable was built from, read from its Go
	// build information ("v0.203.0" for `make stripe-mock`), or "" if it has none
	// (for instance a release binary built without module information).
	Version string

	dir   string // private directory holding the socket and the log
	proc  *childproc.Process
	proxy *http.Server
	stop  sync.Once
}

// Find returns the path of the stripe-mock executable: $STRIPE_MOCK if set, else
// bin/stripe-mock in the module's root directory if it exists, else stripe-mock on
// PATH.
func Find() (string, error) {
	if p := os.Getenv("STRIPE_MOCK"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("stripemock: STRIPE_MOCK=%q: %w", p, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("stripemock: STRIPE_MOCK=%q: %w", p, err)
		}
		return abs, nil
	}
	if root, err := emulator.ModuleRoot(); err == nil {
		p := filepath.Join(root, "bin", "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return filepath.Abs(p)
	}
	return "", ErrNotInstalled
}

// StartServer finds stripe-mock and starts it, HTTP only and reachable on loopback
// only, and waits until it answers: until ctx is done or StartTimeout has passed.
// Its output goes to a log whose tail is quoted in any start-up error. Stop it with
// Stop.
func StartServer(ctx context.Context) (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	version := ""
	if info, err := buildinfo.ReadFile(bin); err == nil && info.Main.Path == Module {
		version = info.Main.Version
	}

	dir, err := privateDir()
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "http.sock")

	// -http-unix alone: HTTP on the socket, and HTTPS off (see the package doc).
	cmd := exec.Command(bin, "-http-unix", socket)
	cmd.Dir = dir
	proc, err := childproc.Start("stripe-mock", cmd, filepath.Join(dir, "stripe-mock.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("stripemock: %w", err)
	}
	s := &Server{Path: bin, Version: version, dir: dir, proc: proc}

	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	if err := s.waitReady(ctx, transport); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.serveProxy(transport); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// privateDir makes a directory only this user can enter, with a path short enough
// for a Unix socket (at most 104 bytes on some systems).
func privateDir() (string, error) {
	dir, err := os.MkdirTemp("", "stripe-mock-")
	if err == nil && len(dir) > 80 {
		os.RemoveAll(dir)
		dir, err = os.MkdirTemp("/tmp", "stripe-mock-")
	}
	if err != nil {
		return "", fmt.Errorf("stripemock: temporary directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("stripemock: %w", err)
	}
	return dir, nil
}

// waitReady polls the socket until stripe-mock answers a request as stripe-mock
// does (with its Stripe-Mock-Version header), the process exits, or the deadline
// passes.
func (s *Server) waitReady(ctx context.Context, transport http.RoundTripper) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	client := &http.Client{Transport: transport, Timeout: 2 * time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://stripe-mock/v1/balance", nil)
		if err != nil {
			return fmt.Errorf("stripemock: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+SecretKey)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.Header.Get("Stripe-Mock-Version") != "" {
				return nil
			}
			return fmt.Errorf("stripemock: %s answered %s without a Stripe-Mock-Version header: not stripe-mock?", s.Path, resp.Status)
		}
		select {
		case <-s.proc.Exited():
			return fmt.Errorf("stripemock: %s exited during start-up: %s", s.Path, s.ExitReason())
		case <-ctx.Done():
			return fmt.Errorf("stripemock: %s did not answer within %v: %w: %s", s.Path, StartTimeout, ctx.Err(), s.proc.LogTail())
		case <-tick.C:
		}
	}
}

// serveProxy puts a reverse proxy on 127.0.0.1, at a port the kernel chooses, in
// front of stripe-mock's socket. It passes requests on unchanged (no X-Forwarded
// headers).
func (s *Server) serveProxy(transport http.RoundTripper) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stripemock: listen on loopback: %w", err)
	}
	target := &url.URL{Scheme: "http", Host: "stripe-mock"}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "stripemock proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	s.proxy = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go s.proxy.Serve(l)
	s.URL = "http://" + l.Addr().String()
	return nil
}

// Exited is closed when the stripe-mock process has ended.
func (s *Server) Exited() <-chan struct{} { return s.proc.Exited() }

// ExitReason says how the stripe-mock process ended, with the last lines of its log;
// call it once Exited is closed.
func (s *Server) ExitReason() string { return s.proc.ExitReason() }

// Stop stops the proxy and stripe-mock, and removes the socket and the log. It is
// safe to call more than once.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		if s.proxy != nil {
			s.proxy.Close()
		}
		s.proc.Stop()
		os.RemoveAll(s.dir)
	})
	return nil
}

var (
	once     sync.Once
	shared   *Server
	startErr error
)

// Main runs the tests and stops the shared server if one was started. Call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	os.Exit(code)
}

// Start returns the test binary's shared stripe-mock, starting it on first use; Main
// stops it when the tests end. Without a stripe-mock executable the test is skipped
// with the reason, or fails under CI=true; a stripe-mock that is found but does not
// start, or under CI=true is not the pinned Version, fails the test.
func Start(tb testing.TB) *Server {
	tb.Helper()
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout+5*time.Second)
		defer cancel()
		shared, startErr = StartServer(ctx)
	})
	if msg, fatal := verdict(startErr, shared, os.Getenv("CI") == "true"); fatal {
		tb.Fatal(msg)
	} else if msg != "" {
		tb.Skip(msg)
	}
	return shared
}

// verdict says what Start makes of a start-up: a message and whether it fails the
// test (else it skips it), or "" to go on with the server.
func verdict(err error, s *Server, ci bool) (msg string, fatal bool) {
	switch {
	case errors.Is(err, ErrNotInstalled) && !ci:
		return fmt.Sprintf("SKIPPED, stripe-mock unavailable: %v", err), false
	case errors.Is(err, ErrNotInstalled):
		return fmt.Sprintf("stripe-mock is required under CI=true: %v", err), true
	case err != nil:
		return fmt.Sprintf("stripe-mock: %v", err), true
	}
	select {
	case <-s.Exited():
		return "stripe-mock is no longer running: " + s.ExitReason(), true
	default:
	}
	if ci && s.Version != Version {
		return fmt.Sprintf("stripe-mock at %s is version %q, want %s under CI=true: run make stripe-mock", s.Path, s.Version, Version), true
	}
	return "", false
}
