package process_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
)

// TestAMismatchedProviderEventIsAMetric: the process reports a mismatched provider
// event as one log line with its event id, and the ProviderEventMismatches metric as
// an Embedded Metric Format document on a line of its own, 1 for money or an outcome reported on the wrong
// payment, 0 for a refund reported on one (money given back, as the service's own
// refund of money taken there reports).
func TestAMismatchedProviderEventIsAMetric(t *testing.T) {
	for _, c := range []struct {
		kind payment.ProviderEventKind
		want float64
	}{{payment.ProviderSucceeded, 1}, {payment.ProviderFailed, 1}, {payment.ProviderRefunded, 0}} {
		var logs, metrics bytes.Buffer
		store := eventstore.NewMemory()
		p, err := process.New(process.Config{Store: store, Commands: command.New(store, command.WithProvider(generic.Provider{})), Price: price,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)), MetricsService: "bikerental-test", Metrics: emf.NewWriter(&metrics)})
		if err != nil {
			t.Fatal(err)
		}
		ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
		data, _ := json.Marshal(command.ProviderEventMismatched{Provider: "stripe", EventID: "evt_odd", Kind: c.kind, Reference: ref,
			PaymentID: "pi_other", Amount: 1, Currency: "USD", RecordedPaymentID: "pi_ours", RecordedAmount: 1500, RecordedCurrency: "EUR",
			Fields: []string{"paymentId", "amount", "currency"}, RefundDue: c.kind == payment.ProviderSucceeded})
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		r := eventstore.Record{StreamID: command.ReceiptStreamID("stripe", "evt_odd"), Version: 1,
			Event: eventstore.Event{ID: "e1", Type: command.ProviderEventMismatched{}.EventType(), Data: data, RecordedAt: at}}
		if err := p.Handle(ctx, r); err != nil {
			t.Fatal(err)
		}
		var line struct {
			ProviderEventID string `json:"providerEventId"`
			Reference       string `json:"paymentReference"`
			EventID         string `json:"eventId"`
		}
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("%s: one JSON log line, got %q: %v", c.kind, logs.String(), err)
		}
		if line.ProviderEventID != "evt_odd" || line.Reference != ref || line.EventID != "e1" {
			t.Errorf("%s: the log line %s", c.kind, logs.String())
		}
		docs := emftest.Parse(t, metrics.Bytes())
		if len(docs) != 1 || strings.Count(metrics.String(), "\n") != 1 {
			t.Fatalf("%s: want one EMF document on a line of its own, got %q", c.kind, metrics.String())
		}
		d := docs[0]
		if d.Values[process.MetricProviderEventMismatches] != c.want || len(d.Values) != 1 || d.Namespace != process.MetricsNamespace ||
			d.Dimensions["Service"] != "bikerental-test" || !d.Timestamp.Equal(at) {
			t.Errorf("%s: the metric %s", c.kind, metrics.String())
		}
	}
}
