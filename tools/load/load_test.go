package load_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"log/slog"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/tools/faultproxy"
	"github.com/bikerental/bikerental/tools/load"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestLoadUnderFaults runs a small load on an in-process local stack with a fault of
// every kind on a fifth of the functions' DynamoDB calls, waits until the stack is
// quiet and checks every rental's end state against its intent.
//
// Most faults are overcome by the AWS SDK's retries; the ambiguous ones (DropAfter:
// written, but the answer lost) are overcome by the event store's own-event
// detection; a request that meets a fault on every attempt must be answered 503 with
// Retry-After, which the generator retries. What this test holds the service to is
// that none of it makes the API answer anything but a success or a clean refusal, nor
// leaves a rental or a bike in the wrong state.
func TestLoadUnderFaults(t *testing.T) {
	srv := emulatortest.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logPath := filepath.Join(t.TempDir(), "stack.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	stack, err := load.StartStack(ctx, load.StackConfig{
		Emulator: srv.Endpoint,
		Faults: faultproxy.Config{Rate: 0.2, Seed: 7, Kinds: faultproxy.AllKinds(),
			Eligible: faultproxy.DynamoDBOnly},
		PaymentTimeout: 3 * time.Second,
		SweepInterval:  time.Second,
		Logger:         slog.New(slog.NewTextHandler(logFile, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	defer func() {
		if t.Failed() {
			logErrors(t, logPath)
		}
	}()

	cfg := load.Config{BaseURL: stack.BaseURL, WebhookSecret: stack.WebhookSecret,
		Bikes: 3, Renters: 4, Rentals: 20, Wait: 30 * time.Second, Seed: 7}
	rep, err := load.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	end, settleErr := load.Settle(ctx, cfg, rep, 45*time.Second)
	var summary strings.Builder
	rep.WriteSummary(&summary)
	end.WriteSummary(&summary)
	stats := stack.Faults.Stats()
	t.Logf("%s\nAWS requests: %v", summary.String(), stats)

	select {
	case <-stack.Done():
		t.Fatalf("the stack stopped during the run: %v", stack.Err())
	default:
	}
	if settleErr != nil {
		t.Errorf("settle: %v", settleErr)
	}
	for _, v := range load.Check(rep, end) {
		t.Error(v)
	}
	// The run ends with the auditor, as loadgen's do: every invariant over every
	// stream and row, the quiet-only ones included once settled.
	violations, err := stack.Audit(ctx, settleErr == nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Error(v)
	}
	if rep.Unexpected != 0 {
		t.Errorf("%d unexpected refusals (see the outcomes above)", rep.Unexpected)
	}
	// The run must have exercised what it claims to: every intent, every fault.
	want := map[load.Intent]int{load.Confirm: 10, load.Reject: 4, load.NeverPay: 3, load.OperatorCancel: 3}
	total := len(rep.Diverted) + len(rep.Stuck)
	for intent, n := range want {
		total += len(rep.Rentals[intent])
		if len(rep.Rentals[intent]) == 0 {
			t.Errorf("no %s rental was carried through", intent)
		} else if len(rep.Rentals[intent]) > n {
			t.Errorf("%d %s rentals, want at most %d", len(rep.Rentals[intent]), intent, n)
		}
	}
	if total != 20 {
		t.Errorf("%d rentals accounted for, want 20", total)
	}
	for _, k := range faultproxy.AllKinds() {
		if stats.Faults[k] == 0 {
			t.Errorf("no %s fault was injected: %v", k, stats)
		}
	}
	for id, s := range end.Bikes {
		if s == "requested" {
			t.Errorf("bike %s was left requested", id)
		}
	}
}

// logErrors quotes the stack's error lines.
func logErrors(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, "level=ERROR") && n < 30 {
			t.Log(line)
			n++
		}
	}
}
