// Package e2e_test proves the binaries that ship to Lambda work, not only the Go
// functions inside them: it builds each function's bootstrap, runs each under the AWS
// Lambda Runtime Interface Emulator, and drives the whole demo scenario and every
// sample event through them, with the local stack playing API Gateway, the stream
// event source mappings and the scheduler.
package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/dev/demo"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var root = filepath.Join("..", "..", "..")

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// build compiles a function's bootstrap for this machine, as make build does for Lambda.
func build(t *testing.T, function, dir string) string {
	out := filepath.Join(dir, function)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", filepath.Join(out, "bootstrap"), "./functions/"+function)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", function, err, b)
	}
	return out
}

// startRIE runs a bootstrap under the emulator with the function's environment and
// returns an invoker for it; the emulator and the bootstrap stop with the test.
func startRIE(t *testing.T, rie, dir string, env []string, logs *os.File) *local.RIE {
	addr := freeAddr(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", freeAddr(t), "./bootstrap")
	cmd.Dir = dir
	cmd.Env = append(env, "PATH="+os.Getenv("PATH"), "LOG_LEVEL=warn", "AWS_LAMBDA_FUNCTION_TIMEOUT=60")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the emulator and its bootstrap
		cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the emulator in %s never listened on %s", dir, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &local.RIE{URL: "http://" + addr, Client: &http.Client{Timeout: 90 * time.Second}}
}

func TestRealBinariesUnderTheRuntimeInterfaceEmulator(t *testing.T) {
	rie := emulatortest.RIE(t, root)
	server := emulatortest.Server(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := server.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventsTable, deadlinesTable := emulatortest.TableName(t, "events"), emulatortest.TableName(t, "pending")
	env := []string{
		"AWS_ENDPOINT_URL=" + server.Endpoint, "AWS_REGION=" + emulator.Region,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		wiring.EnvEventsTable + "=" + eventsTable, wiring.EnvDeadlinesTable + "=" + deadlinesTable,
		wiring.EnvWebhookSecret + "=" + local.DefaultWebhookSecret,
		wiring.EnvPaymentTimeout + "=4s",
	}
	logs, err := os.Create(filepath.Join(t.TempDir(), "functions.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("function logs:\n%s", tail(string(b), 6000))
		}
	}()
	dir := t.TempDir()
	binaries := map[string]local.Invoker{}
	for _, f := range lambdas.All() {
		binaries[f.Name] = startRIE(t, rie, build(t, f.Name, dir), env, logs)
	}

	// The one local stack, on the test's emulator, each function the real binary
	// under the Runtime Interface Emulator instead of the in-process handler.
	settings := map[string]string{wiring.EnvEventsTable: eventsTable, wiring.EnvDeadlinesTable: deadlinesTable, wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return settings[k] },
		SweepInterval: time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Wrap: func(function string, _ local.Invoker) local.Invoker { return binaries[function] }})
	if err != nil {
		t.Fatal(err)
	}
	stack, fs := up.Stack, up.Functions
	listener, err := local.Listen(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stack.Run(ctx, listener) }()
	base := "http://" + listener.Addr().String()

	t.Run("demo", func(t *testing.T) {
		var narration strings.Builder
		err := demo.Run(ctx, demo.Config{BaseURL: base, WebhookSecret: []byte(local.DefaultWebhookSecret), Out: &narration, Wait: 90 * time.Second})
		if err != nil {
			t.Fatalf("the demo failed: %v\n%s", err, narration.String())
		}
	})
	t.Run("sample events", func(t *testing.T) { samples(t, fs.Command, base) })

	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("the stack stopped with %v", err)
	}
	db := dynamodb.NewFromConfig(cfg)
	listing, err := wiring.DeadlinesReader(cfg, func(k string) string { return settings[k] })
	if err != nil {
		t.Fatal(err)
	}
	report, err := audit.Run(context.Background(), audit.NewDynamo(db, eventsTable), listing.Index, audit.Options{Kinds: listing.Kinds})
	if err != nil || !report.OK() {
		t.Errorf("the auditor: %v, %v", err, report.Violations)
	}
}

// samples invokes every file in events/ through the command function's emulator, in
// an order that gives each its expected answer. The webhook samples carry a signature
// made at a fixed time: a live function must refuse them as stale.
func samples(t *testing.T, command local.Invoker, base string) {
	expected := []struct {
		file   string
		status int
		before func(t *testing.T)
	}{
		{"register-bike.json", 201, nil},
		{"get-bike.json", 200, nil},
		{"request-rental.json", 202, nil},
		{"get-rental.json", 200, nil},
		{"list-rentals.json", 200, nil},
		{"payment-succeeded.json", 401, nil},
		{"payment-failed.json", 401, nil},
		{"cancel-payment.json", 200, func(t *testing.T) { awaitPayment(t, command) }},
		{"return-bike.json", 409, nil},
		{"pending-payments.json", 200, nil},
		{"deadlines.json", 200, nil},
		{"stuck-rentals.json", 200, nil},
		{"refunds-owed.json", 200, nil},
		{"console.json", 200, nil},
		{"console-config.json", 200, nil},
		{"console-asset.json", 200, nil},
	}
	files, _ := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if len(files) != len(expected) {
		t.Fatalf("events/ holds %d files, the test expects %d", len(files), len(expected))
	}
	for _, e := range expected {
		if e.before != nil {
			e.before(t)
		}
		resp := invokeFile(t, command, e.file)
		if resp.StatusCode != e.status {
			t.Errorf("%s answered %d, want %d: %s", e.file, resp.StatusCode, e.status, resp.Body)
		}
		if resp.Headers["X-Request-Id"] == "" {
			t.Errorf("%s: no X-Request-Id", e.file)
		}
	}
}

func invokeFile(t *testing.T, command local.Invoker, file string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	payload, err := os.ReadFile(filepath.Join(root, "events", file))
	if err != nil {
		t.Fatal(err)
	}
	out, err := command.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("invoke %s: %v", file, err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: %v: %s", file, err, out)
	}
	return resp
}

// awaitPayment waits until the process has prepared the sample rental's payment (or
// the sweep, with its short timeout, has already called it off), so that the cancel
// sample meets a started process.
func awaitPayment(t *testing.T, command local.Invoker) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := invokeFile(t, command, "get-rental.json")
		if strings.Contains(resp.Body, `"status":"awaiting-payment"`) || strings.Contains(resp.Body, `"status":"cancelled"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sample rental never awaited payment: %s", resp.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return fmt.Sprint("...", s[len(s)-n:])
	}
	return s
}
