package local_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
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
	env := map[string]string{wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvDeadlinesTable: emulatortest.TableName(t, "pending"),
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	var metrics syncBuffer
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Metrics: &metrics})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ctx, cancel, up)

	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, d := range emftest.Parse(t, metrics.Bytes()) {
			if d.Namespace != sweepmetrics.Namespace {
				continue
			}
			if d.Dimensions["Service"] != local.MetricsService || len(d.Dimensions) != 1 {
				t.Fatalf("the sweep's metrics have dimensions %v, want Service=%s", d.Dimensions, local.MetricsService)
			}
			if _, ok := d.Values["PaymentRowsFound"]; !ok {
				t.Fatalf("the sweep's metrics lack PaymentRowsFound: %+v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sweep metrics within 30s; the stack wrote:\n%s", metrics.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestQuietMetricsDropsOnlyTheDocumentsThatCountNothing: an idle sweep's document
// is dropped; one that counts something, a refund owed, and anything that is not
// an EMF document pass on as they were written.
func TestQuietMetricsDropsOnlyTheDocumentsThatCountNothing(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	w := emf.NewWriter(local.QuietMetrics(&out))
	idle := sweepmetrics.Document(awslambda.Summary{Now: at, Kinds: []deadlines.KindSummary{{Kind: deadlinekinds.Payment}, {Kind: deadlinekinds.Stuck}}}, local.MetricsService)
	busy := sweepmetrics.Document(awslambda.Summary{Now: at, Kinds: []deadlines.KindSummary{{Kind: deadlinekinds.Payment, Found: 1, Acted: 1}}}, local.MetricsService)
	owed := emf.Document{Namespace: "BikeRental/Payments", Timestamp: at, Dimensions: []emf.Dimension{{Name: "Service", Value: local.MetricsService}},
		Metrics: []emf.Metric{{Name: "RefundsOwed", Unit: "Count", Value: 1}}}
	for _, d := range []emf.Document{idle, busy, idle, owed} {
		if err := w.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	local.QuietMetrics(&out).Write([]byte("not a document\n"))
	docs := emftest.Parse(t, out.Bytes())
	if len(docs) != 2 || docs[0].Values["PaymentRowsFound"] != 1 || docs[1].Values["RefundsOwed"] != 1 || !bytes.HasSuffix(out.Bytes(), []byte("\nnot a document\n")) {
		t.Errorf("passed on:\n%s\nwant the busy sweep's document, the refund owed and the other line", out.String())
	}
}
