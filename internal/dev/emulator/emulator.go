// Package emulator runs moto's server, a local implementation of the DynamoDB,
// DynamoDB Streams and EventBridge Scheduler APIs, on loopback, for tests and for
// the local runner. Clients reach it through a small proxy that lets one request in
// at a time, because moto does not make concurrent requests atomic (see
// docs/decisions/0001-serialize-requests-to-moto.md).
package emulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/bikerental/bikerental/internal/dev/childproc"
)

// MotoVersion is the version of moto the project is built and tested against.
const MotoVersion = "5.2.1"

// Region is the region the emulator's clients use; moto accepts any.
const Region = "us-east-1"

// AccessKey and SecretKey are the dummy credentials the emulator's clients use; moto
// accepts any.
const (
	AccessKey = "test"
	SecretKey = "test"
)

// ErrNotInstalled reports that no moto_server executable could be found.
var ErrNotInstalled = errors.New("emulator: moto_server not found (install it with `make moto`, or put it on PATH, or set MOTO_SERVER)")

// Server is a running moto server and the proxy in front of it.
type Server struct {
	// Endpoint is the URL clients use, e.g. "http://127.0.0.1:41234".
	Endpoint string

	proc    *childproc.Process
	proxy   *http.Server
	logger  *slog.Logger
	logPath string
	stop    sync.Once
	// stopping is set once Stop begins: a request then cut off is expected.
	stopping atomic.Bool
}

// Option configures Start.
type Option func(*Server)

// WithLogger sends what the proxy has to say to logger (discarded by default): a
// request it could not pass on to moto, at warn level. A request whose client gave
// up, or that Stop cut off, is nobody's concern and is not logged.
func WithLogger(logger *slog.Logger) Option {
	return func(s *Server) { s.logger = logger }
}

// Find returns the path of the moto_server executable: $MOTO_SERVER if set, else
// moto_server on PATH, else .venv/bin/moto_server in the module's root directory
// (where `make moto` installs it).
func Find() (string, error) {
	if p := os.Getenv("MOTO_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("moto_server"); err == nil {
		return p, nil
	}
	if root, err := ModuleRoot(); err == nil {
		p := filepath.Join(root, ".venv", "bin", "moto_server")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNotInstalled
}

// ModuleRoot returns the nearest directory at or above the working directory that
// holds a go.mod: where the Makefile installs the tools that tests and local runs
// look for (bin/, .venv/).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start starts moto_server on a free loopback port and waits, until ctx is done, for
// it to answer. The server's log goes to a temporary file whose tail is quoted in
// any start-up error. Stop it with Stop.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // the free port can be taken between choosing it and moto binding it
		s, err := start(ctx, bin, opts)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, bin string, opts []Option) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.CreateTemp("", "moto-*.log")
	if err != nil {
		return nil, err
	}
	logFile.Close()
	proc, err := childproc.Start("moto_server", exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port)), logFile.Name())
	if err != nil {
		os.Remove(logFile.Name())
		return nil, fmt.Errorf("emulator: %w", err)
	}
	s := newServer(opts)
	s.proc, s.logPath = proc, logFile.Name()

	backend := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := s.waitReady(ctx, backend.String()); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.serveProxy(backend); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func newServer(opts []Option) *Server {
	s := &Server{logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("emulator: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady(ctx context.Context, backend string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, backend+"/moto-api/", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.proc.Exited():
			return fmt.Errorf("emulator: moto_server exited during start-up: %s", s.proc.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("emulator: moto_server did not answer at %s: %w: %s", backend, ctx.Err(), s.proc.LogTail())
		case <-tick.C:
		}
	}
}

// serveProxy puts a loopback reverse proxy in front of moto that handles one request
// at a time. moto applies a TransactWriteItems by deep-copying the table and restores
// that copy when the transaction is cancelled, which silently drops whatever other
// requests wrote meanwhile; DynamoDB has no such behaviour, so the emulator must not
// either.
func (s *Server) serveProxy(backend *url.URL) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("emulator: listen for proxy: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(backend)
	// Both the proxy's and the server's error logs default to the standard logger,
	// which would print beside the stack's own logs, in another format: they go
	// through the stack's logger, and a request its client cancelled (a poller
	// stopping, a test ending) is not an error of the emulator's.
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() == nil && !errors.Is(err, context.Canceled) && !s.stopping.Load() {
			s.logger.LogAttrs(r.Context(), slog.LevelWarn, "emulator proxy: request not passed on to moto",
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	rp.ErrorLog = slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)
	var one sync.Mutex
	s.proxy = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			one.Lock()
			defer one.Unlock()
			rp.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	go s.proxy.Serve(l)
	s.Endpoint = "http://" + l.Addr().String()
	return nil
}

// Exited is closed when the moto server's process has ended.
func (s *Server) Exited() <-chan struct{} { return s.proc.Exited() }

// ExitReason says how the moto server's process ended, with the last lines of its
// log; call it once Exited is closed.
func (s *Server) ExitReason() string { return s.proc.ExitReason() }

// Stop stops the proxy and the moto server and removes its log. It is safe to call
// more than once.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		s.stopping.Store(true)
		if s.proxy != nil {
			s.proxy.Close()
		}
		s.proc.Stop()
		os.Remove(s.logPath)
	})
	return nil
}

// Config returns the SDK's default configuration (retryer, HTTP client and all) with
// every client sent to endpoint, with the dummy credentials the emulator accepts.
func Config(ctx context.Context, endpoint string) (aws.Config, error) {
	return config.LoadDefaultConfig(ctx,
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")),
		config.WithBaseEndpoint(endpoint),
	)
}

// Config returns Config for this server's endpoint.
func (s *Server) Config(ctx context.Context) (aws.Config, error) { return Config(ctx, s.Endpoint) }
