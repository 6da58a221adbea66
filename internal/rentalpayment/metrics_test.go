package rentalpayment_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/rentalpayment"
)

// TestAMismatchedProviderEventIsAMetric: the process reports a mismatched provider
// event as one log line with its event id that is also the ProviderEventMismatches
// metric in Embedded Metric Format, 1 for money or an outcome reported on the wrong
// payment, 0 for a refund reported on one (money given back, as the service's own
// refund of money taken there reports).
func TestAMismatchedProviderEventIsAMetric(t *testing.T) {
	for _, c := range []struct {
		kind payment.ProviderEventKind
		want float64
	}{{payment.ProviderSucceeded, 1}, {payment.ProviderFailed, 1}, {payment.ProviderRefunded, 0}} {
		var logs bytes.Buffer
		store := eventstore.NewMemory()
		p, err := rentalpayment.New(rentalpayment.Config{Store: store, Commands: command.New(store), Price: price,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)), MetricsService: "bikerental-test"})
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
			ProviderEventID string   `json:"providerEventId"`
			Reference       string   `json:"paymentReference"`
			Service         string   `json:"Service"`
			Count           *float64 `json:"ProviderEventMismatches"`
			AWS             struct {
				Timestamp         int64
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("%s: one JSON line, got %q: %v", c.kind, logs.String(), err)
		}
		m := line.AWS.CloudWatchMetrics
		if line.ProviderEventID != "evt_odd" || line.Reference != ref || line.Service != "bikerental-test" || line.Count == nil || *line.Count != c.want ||
			line.AWS.Timestamp != at.UnixMilli() || len(m) != 1 || m[0].Namespace != rentalpayment.MetricsNamespace ||
			len(m[0].Metrics) != 1 || m[0].Metrics[0].Name != rentalpayment.MetricProviderEventMismatches || len(m[0].Dimensions) != 1 || m[0].Dimensions[0][0] != "Service" {
			t.Errorf("%s: the log line %s", c.kind, logs.String())
		}
	}
}
