// Package startup measures the Lambda functions' cold starts: the size of each
// function's stripped binary and how long it takes to start under the AWS Lambda
// Runtime Interface Emulator, next to a minimal aws-lambda-go function (hello) built
// the same way. cmd/startupbench (make bench-startup) runs it; nothing here asserts a
// timing.
package startup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildFlags are the flags every Lambda binary is built with (make build's), after
// CGO_ENABLED=0 GOOS=linux.
var BuildFlags = []string{"-tags", "lambda.norpc", "-ldflags", "-s -w", "-trimpath"}

// Build compiles the package pkg (e.g. "./functions/command") of the module in root
// for linux/goarch with BuildFlags into out, and returns the binary's size in bytes.
func Build(ctx context.Context, root, pkg, goarch, out string) (int64, error) {
	args := append([]string{"build"}, BuildFlags...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("startup: build %s for %s: %w\n%s", pkg, goarch, err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Sample is one cold start under the emulator.
type Sample struct {
	// Init is the emulator's own measure of the init phase (its INIT REPORT): from
	// starting the bootstrap until the bootstrap asks for its first event.
	Init time.Duration
	// FirstInvoke runs from sending the first invocation to the emulator, once it
	// listens, to its response: the init phase and the first event.
	FirstInvoke time.Duration
	// StartToResponse runs from starting the emulator's process to the first response:
	// the emulator's own start-up, the init phase and the first event.
	StartToResponse time.Duration
	// CPU is the time the bootstrap's threads spent on a CPU until the first
	// response, and Waited the time they were ready to run but waited for one
	// (from /proc/<pid>/task/*/schedstat). CPU is what the init phase and the first
	// event cost, whatever else the machine runs; Waited shows how busy it was.
	CPU, Waited time.Duration
	// Output is everything the emulator and the bootstrap wrote; FunctionOutput is
	// what the bootstrap wrote (with the emulator's START, END and REPORT lines).
	Output, FunctionOutput string
}

// Runner runs cold starts of bootstraps under the Runtime Interface Emulator.
type Runner struct {
	// RIE is the path of the aws-lambda-rie executable.
	RIE string
	// Env is the environment of the emulator, which passes it on to the bootstrap:
	// the function's environment. Nothing of this process's environment is added.
	Env []string
	// Timeout bounds one cold start, from starting the emulator to the end of the
	// first invocation (30s if zero).
	Timeout time.Duration
}

// ErrNoInitReport reports an emulator that answered without logging the init phase's
// duration, so that the sample would have no Init.
var ErrNoInitReport = errors.New("startup: the emulator logged no INIT REPORT")

// ColdStart starts the emulator with the bootstrap in dir (a file named bootstrap),
// invokes it once with event and stops both. check, if not nil, judges the
// invocation's result; a function error, an unexpected result or an emulator that
// never listens or never answers is an error that quotes the emulator's output.
func (r *Runner) ColdStart(ctx context.Context, dir string, event []byte, check func(result []byte) error) (Sample, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr, err := freeAddr()
	if err != nil {
		return Sample{}, err
	}
	runtimeAPI, err := freeAddr()
	if err != nil {
		return Sample{}, err
	}
	cmd := exec.Command(r.RIE, "--runtime-interface-emulator-address", addr, "--runtime-api-address", runtimeAPI, "./bootstrap")
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(r.Env), "AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(timeout/time.Second)+1))
	// The emulator relays the bootstrap's output to its stdout and logs to its stderr
	// (where the INIT REPORT is); each stream is written by its own goroutine.
	out, function, reported := &buffer{}, &buffer{}, make(chan time.Duration, 1)
	cmd.Stdout = io.MultiWriter(out, function, &initReports{report: reported})
	cmd.Stderr = io.MultiWriter(out, &initReports{report: reported})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	var s Sample
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Sample{}, fmt.Errorf("startup: start %s: %w", r.RIE, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the emulator and its bootstrap
			<-exited
		})
	}
	defer stop()
	fail := func(err error) (Sample, error) {
		stop()
		return Sample{}, fmt.Errorf("%w; the emulator's output:\n%s", err, tail(out.String(), 4000))
	}

	// The emulator takes invocations before its runtime API listens; a bootstrap
	// started then would find no runtime API.
	for _, a := range []string{addr, runtimeAPI} {
		if err := awaitListening(ctx, a, exited); err != nil {
			return fail(err)
		}
	}
	sent := time.Now()
	result, err := invoke(ctx, "http://"+addr, event)
	got := time.Now()
	if err != nil {
		return fail(err)
	}
	if check != nil {
		if err := check(result); err != nil {
			return fail(fmt.Errorf("startup: first invocation: %w (result %.300s)", err, result))
		}
	}
	s.FirstInvoke, s.StartToResponse = got.Sub(sent), got.Sub(start)
	if s.CPU, s.Waited, err = bootstrapSchedStat(cmd.Process.Pid); err != nil {
		return fail(err)
	}
	select {
	case s.Init = <-reported:
	case <-ctx.Done():
		return fail(ErrNoInitReport)
	}
	stop()
	s.Output, s.FunctionOutput = out.String(), function.String()
	return s, nil
}

// bootstrapSchedStat sums the scheduler statistics of every thread of the emulator's
// child named bootstrap: the time on a CPU and the time waiting for one.
func bootstrapSchedStat(riePID int) (cpu, waited time.Duration, err error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", riePID))
	if err != nil {
		return 0, 0, err
	}
	found := false
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		for _, pid := range strings.Fields(string(b)) {
			comm, err := os.ReadFile("/proc/" + pid + "/comm")
			if err != nil || strings.TrimSpace(string(comm)) != "bootstrap" {
				continue
			}
			found = true
			stats, _ := filepath.Glob("/proc/" + pid + "/task/*/schedstat")
			for _, st := range stats {
				b, err := os.ReadFile(st)
				if err != nil {
					continue
				}
				f := strings.Fields(string(b))
				if len(f) < 2 {
					return 0, 0, fmt.Errorf("startup: %s: %q", st, b)
				}
				onCPU, err1 := strconv.ParseInt(f[0], 10, 64)
				wait, err2 := strconv.ParseInt(f[1], 10, 64)
				if err := errors.Join(err1, err2); err != nil {
					return 0, 0, fmt.Errorf("startup: %s: %w", st, err)
				}
				cpu += time.Duration(onCPU)
				waited += time.Duration(wait)
			}
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("startup: no process named bootstrap under the emulator (pid %d)", riePID)
	}
	return cpu, waited, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("startup: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// awaitListening polls addr every millisecond: the emulator starts the bootstrap
// only when the first invocation arrives, so the poll's granularity adds to
// StartToResponse only.
func awaitListening(ctx context.Context, addr string, exited <-chan struct{}) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("startup: the emulator exited before it listened")
		case <-ctx.Done():
			return fmt.Errorf("startup: the emulator never listened on %s: %w", addr, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// functionError is how the emulator reports a function's error: status 200 and this body.
type functionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func invoke(ctx context.Context, base string, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/2015-03-31/functions/function/invocations", bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{DisableKeepAlives: true}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("startup: invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("startup: invoke: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("startup: invoke: status %s: %.300s", resp.Status, body)
	}
	var fe functionError
	if json.Unmarshal(body, &fe) == nil && fe.Type != "" {
		return nil, fmt.Errorf("startup: the function failed: %s: %s", fe.Type, fe.Message)
	}
	return body, nil
}

// buffer is a bytes.Buffer safe for concurrent use.
type buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// initReports reads one of the emulator's output streams line by line and passes
// the first INIT REPORT's duration on to report, which holds one.
type initReports struct {
	line   []byte
	report chan<- time.Duration
}

func (r *initReports) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			r.line = append(r.line, p...)
			break
		}
		r.line = append(r.line, p[:i]...)
		if d, ok := ParseInitReport(string(r.line)); ok {
			select {
			case r.report <- d:
			default: // not the first
			}
		}
		r.line, p = r.line[:0], p[i+1:]
	}
	return n, nil
}

var initReport = regexp.MustCompile(`INIT REPORT\([^)]*?durationMs: ([0-9]+(?:\.[0-9]+)?)`)

// ParseInitReport reads the init phase's duration from one line of the emulator's
// output, "... INIT REPORT(durationMs: 3.181000)" or the managed-instances form
// "INIT REPORT(initType: on-demand, durationMs: 3.18, ...)".
func ParseInitReport(line string) (time.Duration, bool) {
	m := initReport.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// PackageInit is one package's initialisation, as GODEBUG=inittrace=1 reports it.
type PackageInit struct {
	Package string
	Clock   time.Duration
	Bytes   int64
}

// InitTrace sums a program's package initialisations.
type InitTrace struct {
	Clock    time.Duration
	Bytes    int64
	Packages []PackageInit // the slowest first
}

var initTraceLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, [0-9]+ allocs`)

// ParseInitTrace reads the lines GODEBUG=inittrace=1 writes ("init net/http @1.2 ms,
// 0.073 ms clock, 4712 bytes, 49 allocs") out of a program's output.
func ParseInitTrace(out string) InitTrace {
	var t InitTrace
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		m := initTraceLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		ms, _ := strconv.ParseFloat(m[2], 64)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		p := PackageInit{Package: m[1], Clock: time.Duration(ms * float64(time.Millisecond)), Bytes: n}
		t.Clock += p.Clock
		t.Bytes += p.Bytes
		t.Packages = append(t.Packages, p)
	}
	slices.SortStableFunc(t.Packages, func(a, b PackageInit) int { return int(b.Clock - a.Clock) })
	return t
}

// Percentile returns the p-th percentile (0 < p <= 100) of ds by the nearest-rank
// method, or 0 for no durations.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[max(0, min(rank, len(s)-1))]
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
