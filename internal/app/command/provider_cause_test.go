package command_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// refundsDownFirst is a provider whose first refunds fail, as a provider that is
// down does: the refund a late success owes is then made by its redelivery.
type refundsDownFirst struct {
	*intents
	failures atomic.Int32
}

func (p *refundsDownFirst) RefundPayment(ctx context.Context, id, ref string) (string, error) {
	if p.failures.Add(-1) >= 0 {
		return "", errors.New("the provider is down")
	}
	return p.intents.RefundPayment(ctx, id, ref)
}

// TestEveryEventRecordedFromAProviderEventNamesItAsItsCause: the settlement, the
// late success and the refund its redelivery makes, the mismatch and its refund:
// every event a provider event records, on its first delivery and on a
// redelivery, names that provider event as its cause; what was recorded before,
// by a request, keeps its own. On both stores.
func TestEveryEventRecordedFromAProviderEventNamesItAsItsCause(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		p := &refundsDownFirst{intents: newIntents()}
		p.failures.Store(1)
		h := command.New(store, command.WithProvider(p))
		event := func(id, ref, paymentID string) payment.ProviderEvent {
			return payment.ProviderEvent{Provider: "stripe", EventID: id, Kind: payment.ProviderSucceeded, Reference: ref,
				PaymentID: paymentID, Amount: 1500, Currency: "EUR", Digest: "d-" + id}
		}
		// A settlement.
		paid, ours := prepared(t, h, "c1")
		if _, err := h.ApplyProviderEvent(ctx, event("evt_c1", paid, ours)); err != nil {
			t.Fatal(err)
		}
		// A success after the give-up: its refund fails, and its redelivery makes it.
		late, lateID := prepared(t, h, "c2")
		if _, err := h.Payment(ctx, payment.CancelPayment{Reference: late}, command.Meta{CausationID: "request:r-cancel"}); err != nil {
			t.Fatal(err)
		}
		p.set(lateID, "succeeded")
		if _, err := h.ApplyProviderEvent(ctx, event("evt_c2", late, lateID)); err == nil {
			t.Fatal("the late success answered nil while its refund failed")
		}
		if res, err := h.ApplyProviderEvent(ctx, event("evt_c2", late, lateID)); err != nil || !res.Duplicate || res.Payment.Refund != payment.RefundStatusRequested {
			t.Fatalf("the redelivery: %+v, %v; want the refund made", res, err)
		}
		// A mismatch whose money went back on the other payment.
		other, _ := prepared(t, h, "c3")
		p.set("pi_other", "succeeded")
		if res, err := h.ApplyProviderEvent(ctx, event("evt_c3", other, "pi_other")); err != nil || res.Mismatch == nil {
			t.Fatalf("the mismatch: %+v, %v", res, err)
		}

		for _, c := range []struct {
			stream string
			want   map[string]string // event type: its cause
		}{
			{payment.StreamID(paid), map[string]string{"PaymentPrepared": "", "PaymentConfirmed": "provider-event:stripe:evt_c1"}},
			{payment.StreamID(late), map[string]string{"PaymentPrepared": "", "PaymentCancelled": "request:r-cancel",
				"PaymentSucceededAfterCancellation": "provider-event:stripe:evt_c2", "RefundRequested": "provider-event:stripe:evt_c2"}},
			{command.ReceiptStreamID("stripe", "evt_c2"), map[string]string{"ProviderEventReceived": "provider-event:stripe:evt_c2"}},
			{command.ReceiptStreamID("stripe", "evt_c3"), map[string]string{"ProviderEventMismatched": "provider-event:stripe:evt_c3",
				"MismatchRefundRequested": "provider-event:stripe:evt_c3"}},
		} {
			recs, err := store.Read(ctx, c.stream, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Type)
				want, ok := c.want[r.Type]
				if !ok {
					t.Errorf("%s: an unexpected %s", c.stream, r.Type)
					continue
				}
				if r.CausationID != want {
					t.Errorf("%s: %s caused by %q, want %q", c.stream, r.Type, r.CausationID, want)
				}
				if rental, _ := payment.RentalIDFor(strings.TrimPrefix(c.stream, "payment-")); strings.HasPrefix(c.stream, "payment-") && r.CorrelationID != rental {
					t.Errorf("%s: %s correlated with %q, want the rental %q", c.stream, r.Type, r.CorrelationID, rental)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("%s holds %v, want one each of %v", c.stream, got, keys(c.want))
			}
		}
	})
}

func keys(m map[string]string) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return fmt.Sprint(out)
}
