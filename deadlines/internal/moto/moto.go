// Package moto gives the module's tests a local DynamoDB: moto's server
// (moto_server), started on a loopback port once per test binary on first use and
// stopped when the tests end, reached through the real AWS SDK with static fake
// credentials. When it cannot be started a test fails under CI=true and is skipped
// with the reason otherwise.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { moto.Main(m) }
package moto

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Region, AccessKey and SecretKey are what every client of the server uses: moto
// accepts any, and nothing is read from the machine's environment or files.
const (
	Region    = "us-east-1"
	AccessKey = "test"
	SecretKey = "test"
)

// StartTimeout bounds how long a start waits for the server to answer.
const StartTimeout = 60 * time.Second

// ErrNotInstalled reports that no moto_server executable was found.
var ErrNotInstalled = errors.New("moto: moto_server not found: put it on PATH (pip install 'moto[server]') or set MOTO_SERVER")

var (
	once     sync.Once
	shared   *server
	startErr error
	tables   atomic.Int64
)

// Main runs the tests and stops the server if one was started; call it from
// TestMain. Examples have no testing.TB to skip with: when moto_server is not
// installed and CI is not "true", Main skips them (adding "^Example" to -test.skip)
// and says so.
func Main(m *testing.M) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if _, err := find(); err != nil && os.Getenv("CI") != "true" {
		skip := flag.Lookup("test.skip")
		pattern := "^Example"
		if old := skip.Value.String(); old != "" {
			pattern = old + "|" + pattern
		}
		skip.Value.Set(pattern)
		fmt.Fprintf(os.Stderr, "SKIPPED examples, which need moto: %v\n", err)
	}
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// Endpoint returns the shared server's URL, starting it on first use. If it cannot
// be started the test fails under CI=true, and is skipped with the reason
// otherwise.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	endpoint, err := start()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("moto_server is required under CI=true: %v", err)
		}
		tb.Skipf("SKIPPED: %v", err)
	}
	return endpoint
}

// Config returns a configuration of the SDK pointed at the shared server: static
// fake credentials, Region, and an HTTP client that uses no proxy; the SDK's
// retryer and everything else at their defaults.
func Config(tb testing.TB) aws.Config {
	tb.Helper()
	return configFor(Endpoint(tb))
}

// DynamoDB returns a DynamoDB client of the shared server.
func DynamoDB(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return dynamodb.NewFromConfig(Config(tb))
}

// Client returns a DynamoDB client of the shared server, starting it on first use,
// for examples, which have no testing.TB (Main skips them when moto_server is not
// installed).
func Client() (*dynamodb.Client, error) {
	endpoint, err := start()
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(configFor(endpoint)), nil
}

func configFor(endpoint string) aws.Config {
	return aws.Config{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey, Source: "moto"}, nil
		}),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.Proxy = nil }),
	}
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// TableName returns a table name that no other call in this test binary returns,
// made of prefix and the test's name, so that tests may run in parallel on the one
// server.
func TableName(tb testing.TB, prefix string) string {
	name := unsafe.ReplaceAllString(tb.Name(), "_")
	if len(name) > 150 {
		name = name[:150]
	}
	return fmt.Sprintf("%s-%s-%d", prefix, name, tables.Add(1))
}

func start() (string, error) {
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		shared, startErr = startServer(ctx)
	})
	if startErr != nil {
		return "", startErr
	}
	return shared.endpoint, nil
}

// find returns the moto_server to run: $MOTO_SERVER, or moto_server on PATH.
func find() (string, error) {
	if p := os.Getenv("MOTO_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("moto_server"); err == nil {
		return p, nil
	}
	return "", ErrNotInstalled
}

// server is a running moto_server and the proxy in front of it.
type server struct {
	endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	logPath  string
	proxy    *http.Server
}

// startServer starts moto_server on a free loopback port, waits until ctx is done
// for it to answer, and puts the proxy in front of it. A port taken between
// choosing it and moto binding it is tried again, with another.
func startServer(ctx context.Context) (*server, error) {
	bin, err := find()
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		s, err := startOnce(ctx, bin)
		if err == nil || try == 3 || ctx.Err() != nil {
			return s, err
		}
	}
}

func startOnce(ctx context.Context, bin string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp("", "moto-*.log")
	if err != nil {
		return nil, fmt.Errorf("moto: log file: %w", err)
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr, cmd.SysProcAttr, cmd.Env = log, log, sysProcAttr(), serverEnv(os.Environ())
	if err := cmd.Start(); err != nil {
		os.Remove(log.Name())
		return nil, fmt.Errorf("moto: start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{}), logPath: log.Name()}
	go func() { cmd.Wait(); close(s.exited) }()
	backend := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := s.waitReady(ctx, backend.String()); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.serveProxy(backend); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// serverEnv is env without the settings of AWS clients and of proxies, which moto
// reads too (a region, an account, a profile's files): the server is the same
// whatever the machine or a test has set.
func serverEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		name = strings.ToUpper(name)
		return strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "MOTO_") || strings.HasSuffix(name, "_PROXY")
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("moto: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady asks the server's own API until it answers, the process ends, or ctx
// is done.
func (s *server) waitReady(ctx context.Context, backend string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{}}
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
		case <-s.exited:
			return fmt.Errorf("moto: moto_server exited during start-up (%v): %s", s.cmd.ProcessState, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("moto: moto_server did not answer at %s: %w: %s", backend, ctx.Err(), s.logTail())
		case <-tick.C:
		}
	}
}

// serveProxy puts a loopback reverse proxy in front of moto that passes on one
// request at a time. moto's best-known race, losing concurrent writes to a table
// when a TransactWriteItems is cancelled (it restores its copy of the table),
// cannot happen here: the module sends no transaction, only single-item
// UpdateItem and GetItem, and Query. But what Apply guarantees (a settled row
// never comes back, in any order of delivery) rests on DynamoDB's checking an
// item's condition and writing it atomically, and moto 5.2.1 serves each request
// on a thread of its own and checks the condition, then writes, under no lock of
// its own: only Python's global interpreter lock keeps the two together. 9,600
// conditional creates of 300 items by 32 racing writers straight to moto never
// saw two succeed, so the race is rare; but it is there, and a rare race is a
// flaky test blamed on the code under test. One request at a time makes the
// atomicity hold by construction; moto runs under the interpreter lock, so little
// is lost.
func (s *server) serveProxy(backend *url.URL) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("moto: listen for the proxy: %w", err)
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
	os.Remove(s.logPath)
}

// logTail is the end of the server's log, at most 2,000 bytes.
func (s *server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b[max(0, len(b)-2000):])
}
