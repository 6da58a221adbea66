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

// TestMoneyTakenOnAnotherPaymentIsOwedOnItsPaymentAndCounted: a generic success
// naming another provider payment leaves its refund owed at the event's receipt
// (MismatchRefundOwed, the generic provider cannot refund); the process, given
// that record, records the refund owed on the payment (UnexpectedRefundOwed), once
// however often it is delivered, and never again once made by hand; given that
// event, it counts the RefundsOwed metric, as for the payment's own refund owed,
// except for a repair's delivery of one recorded before, which stands.
func TestMoneyTakenOnAnotherPaymentIsOwedOnItsPaymentAndCounted(t *testing.T) {
	var logs, metrics bytes.Buffer
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(generic.Provider{}))
	p, err := process.New(process.Config{Store: store, Commands: h, Price: price,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), MetricsService: "bikerental-test", Metrics: emf.NewWriter(&metrics)})
	if err != nil {
		t.Fatal(err)
	}
	rentalID := "b1_AAAAAAAAAAAAAAAAAAAAAA"
	ref := payment.ReferenceFor(rentalID)
	if _, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "pay_ours", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	res, err := h.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "evt_other", Kind: payment.ProviderSucceeded, Reference: ref,
		PaymentID: "pay_other", Amount: 700, Currency: "USD", Digest: "d"})
	if err != nil || res.Mismatch == nil || !res.Mismatch.RefundDue {
		t.Fatalf("a success on another payment id: %+v, %v", res, err)
	}
	receipt, _ := store.Read(ctx, command.ReceiptStreamID("generic", "evt_other"), 0)
	if len(receipt) != 2 || receipt[1].Type != (command.MismatchRefundOwed{}).EventType() {
		t.Fatalf("the receipt: %+v", receipt)
	}
	paymentEvents := func() []eventstore.Record {
		recs, err := store.Read(ctx, payment.StreamID(ref), 0)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	for range 2 { // delivered twice
		if err := p.Handle(ctx, receipt[1]); err != nil {
			t.Fatal(err)
		}
	}
	recs := paymentEvents()
	owed := recs[len(recs)-1]
	var e payment.UnexpectedRefundOwed
	if err := json.Unmarshal(owed.Data, &e); len(recs) != 2 || err != nil || owed.Type != "UnexpectedRefundOwed" || owed.CausationID != command.ProviderCausationID("generic", "evt_other") ||
		owed.CorrelationID != rentalID || e != (payment.UnexpectedRefundOwed{Reference: ref, PaymentID: "pay_other", Amount: 700, Currency: "USD"}) {
		t.Fatalf("the payment's stream after two deliveries: %+v (%s)", recs, owed.Data)
	}
	if metrics.Len() != 0 {
		t.Fatalf("recording the refund owed counted: %s", metrics.String())
	}

	logs.Reset()
	if err := p.Handle(ctx, owed); err != nil {
		t.Fatal(err)
	}
	docs := emftest.Parse(t, metrics.Bytes())
	if len(docs) != 1 || docs[0].Values[process.MetricRefundsOwed] != 1 || docs[0].Dimensions["Service"] != "bikerental-test" || !docs[0].Timestamp.Equal(owed.RecordedAt.Truncate(time.Millisecond)) {
		t.Fatalf("the metric: %s", metrics.String())
	}
	if !strings.Contains(logs.String(), `"providerPaymentId":"pay_other"`) || !strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Errorf("the log line: %s", logs.String())
	}
	if err := p.Handle(process.Repairing(ctx), owed); err != nil || len(emftest.Parse(t, metrics.Bytes())) != 1 {
		t.Errorf("a repair's delivery counted again: %v, %s", err, metrics.String())
	}

	// Made by hand: a later delivery of the MismatchRefundOwed owes nothing again.
	if _, err := h.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{PaymentID: "pay_other", Amount: 700, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(ctx, receipt[1]); err != nil {
		t.Fatal(err)
	}
	if recs := paymentEvents(); len(recs) != 3 || recs[2].Type != "UnexpectedRefundMadeByHand" {
		t.Fatalf("a MismatchRefundOwed delivered after the refund was made by hand: %+v", recs)
	}
}
