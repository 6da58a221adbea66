package local_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/emf/emftest"
	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/local"
	"github.com/bikerental/bikerental/internal/sweepmetrics"
	"github.com/bikerental/bikerental/internal/wiring"
)

// syncBuffer is a bytes.Buffer that the stack writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// TestTheLocalStackWritesTheSweepsMetrics: the sweep's metrics reach the stack's
// Metrics writer as they reach a Lambda function's standard output, one valid EMF
// document a line, with the Service dimension the template gives them
// (bikerental-<stage>).
func TestTheLocalStackWritesTheSweepsMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	env := map[string]string{wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvPendingTable: emulatortest.TableName(t, "pending"),
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	var metrics syncBuffer
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Metrics: &metrics})
	if err != nil {
		t.Fatal(err)
	}
	l, err := local.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Run(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })

	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, d := range emftest.Parse(t, metrics.Bytes()) {
			if d.Namespace != sweepmetrics.Namespace {
				continue
			}
			if d.Dimensions["Service"] != local.MetricsService || len(d.Dimensions) != 1 {
				t.Fatalf("the sweep's metrics have dimensions %v, want Service=%s", d.Dimensions, local.MetricsService)
			}
			if _, ok := d.Values["Found"]; !ok {
				t.Fatalf("the sweep's metrics lack Found: %+v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sweep metrics within 30s; the stack wrote:\n%s", metrics.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
