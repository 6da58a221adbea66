// Package moto gives the example's tests a local DynamoDB: moto's server
// (moto_server, or the executable MOTO_SERVER names), started on a loopback port
// once per test binary on first use and stopped by Main when the tests end. When
// it cannot be started a test fails under CI=true and is skipped with the reason
// otherwise. It is for tests only.
package moto

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Region, AccessKey and SecretKey are what every client of the server uses.
const (
	Region    = "us-east-1"
	AccessKey = "test"
	SecretKey = "test"
)

var (
	once     sync.Once
	shared   *server
	startErr error
	names    atomic.Int64
)

// Main runs the tests and stops the server if one was started: call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// Endpoint returns the server's URL, starting it on first use.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared, startErr = start(ctx)
	})
	if startErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("moto_server is required under CI=true: %v", startErr)
		}
		tb.Skipf("SKIPPED: %v", startErr)
	}
	return shared.endpoint
}

// Config returns a configuration of the AWS SDK pointed at the server, with static
// fake credentials and no proxy.
func Config(tb testing.TB) aws.Config {
	tb.Helper()
	return aws.Config{
		Region:       Region,
		BaseEndpoint: aws.String(Endpoint(tb)),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey, Source: "moto"}, nil
		}),
	}
}

// SetEnv points the AWS SDK's default configuration, as a Lambda function loads
// it, at the server for the rest of the test: region, endpoint and credentials,
// and no shared configuration files or profile of the machine.
func SetEnv(t *testing.T) {
	t.Helper()
	endpoint := Endpoint(t)
	none := filepath.Join(t.TempDir(), "none")
	for name, value := range map[string]string{
		"AWS_REGION": Region, "AWS_ENDPOINT_URL": endpoint,
		"AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey, "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_PROFILE": "",
	} {
		t.Setenv(name, value)
	}
}

// TableName returns a table name no other call in this test binary returns.
func TableName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, names.Add(1))
}

type server struct {
	endpoint string // the proxy's
	backend  string // moto's own
	cmd      *exec.Cmd
	exited   chan struct{}
	log      string
	proxy    *http.Server
}

func start(ctx context.Context) (*server, error) {
	bin := os.Getenv("MOTO_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("moto_server"); err != nil {
			return nil, errors.New("moto_server not found: put it on PATH (pip install 'moto[server]') or set MOTO_SERVER")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	log, err := os.CreateTemp("", "moto-*.log")
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = log, log, sysProcAttr()
	// moto reads the AWS settings too: the server is the same whatever the machine has set.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "AWS_") && !strings.HasPrefix(name, "MOTO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		os.Remove(log.Name())
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{backend: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, exited: make(chan struct{}), log: log.Name()}
	go func() { cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.serveProxy(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// serveProxy puts a loopback proxy in front of moto that passes on one request at
// a time. moto 5.2.1 checks a write's condition and then writes under no lock of
// its own, so two conditional appends at one place could, rarely, both succeed;
// one request at a time makes a conditional write atomic, as DynamoDB's are.
func (s *server) serveProxy() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	backend, err := url.Parse(s.backend)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(backend)
	rp.Transport = &http.Transport{} // no proxy from the environment
	var one sync.Mutex
	s.proxy = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			one.Lock()
			defer one.Unlock()
			rp.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go s.proxy.Serve(l)
	s.endpoint = "http://" + l.Addr().String()
	return nil
}

// waitReady asks the server until it answers, the process ends, or ctx is done.
func (s *server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{}}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.backend+"/moto-api/", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("moto_server exited during start-up: %s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("moto_server did not answer at %s: %w: %s", s.backend, ctx.Err(), s.logTail())
		case <-tick.C:
		}
	}
}

// stop closes the proxy, ends the server (SIGTERM, then SIGKILL after five
// seconds) and removes its log.
func (s *server) stop() {
	if s.proxy != nil {
		s.proxy.Close()
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	os.Remove(s.log)
}

func (s *server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b[max(0, len(b)-2000):])
}
