package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// TestAGenericEventThatNamesAnotherPaymentChangesNothing: the generic provider's
// event may name the payment id, amount and currency; one that names others than
// the payment's is acknowledged with "mismatch", is not applied, and the money a
// success on another payment id reports taken is owed; one that names the
// payment's own applies. (A success on the payment's own id for another amount
// gives the payment up: TestAGenericSuccessForAnotherAmountOnOurPaymentIsOwed.)
func TestAGenericEventThatNamesAnotherPaymentChangesNothing(t *testing.T) {
	store := eventstore.NewMemory()
	h := newHarness(t, store, nil)
	ctx := context.Background()
	ref := h.prepare(h.rentBike("g1", "alice"))
	s, _, _ := h.commands.LoadPayment(ctx, ref)
	send := func(ev generic.Event) reply {
		t.Helper()
		b, _ := json.Marshal(ev)
		return h.expect(http.MethodPost, "/webhooks/payments", string(b), with(anonymous, signed(secret, string(b), h.now)), http.StatusOK)
	}
	for _, c := range []struct {
		ev        generic.Event
		wantTypes []string
	}{
		{generic.Event{ID: "g-other", Type: generic.TypeSucceeded, PaymentReference: ref, PaymentID: strictjson.Some("pay_someone_else")}, []string{"ProviderEventMismatched", "MismatchRefundOwed"}},
		{generic.Event{ID: "g-amount", Type: generic.TypeFailed, PaymentReference: ref, PaymentID: strictjson.Some(s.PaymentID), Amount: strictjson.Some(int64(1)), Reason: "declined"}, []string{"ProviderEventMismatched"}},
		{generic.Event{ID: "g-currency", Type: generic.TypeFailed, PaymentReference: ref, Currency: strictjson.Some("USD"), Reason: "declined"}, []string{"ProviderEventMismatched"}},
	} {
		if r := send(c.ev); r.body["mismatch"] != true || r.str("status") != "prepared" {
			t.Errorf("%s: %s", c.ev.ID, r.raw)
		}
		if got := streamTypes(t, store, command.ReceiptStreamID(generic.Name, c.ev.ID)); !slices.Equal(got, c.wantTypes) {
			t.Errorf("%s: the event's stream %v, want %v", c.ev.ID, got, c.wantTypes)
		}
	}
	// A member that is there states a fact: a value no payment has is refused, and
	// changes nothing, however it would compare.
	for _, body := range []string{
		`{"id":"g-bad1","type":"payment.succeeded","paymentReference":"` + ref + `","currency":"eur"}`,
		`{"id":"g-bad2","type":"payment.succeeded","paymentReference":"` + ref + `","amount":-5}`,
		`{"id":"g-bad3","type":"payment.succeeded","paymentReference":"` + ref + `","paymentId":"<b>"}`,
		`{"id":"g-bad4","type":"payment.succeeded","paymentReference":"` + ref + `","amount":0,"paymentId":""}`,
		`{"id":"g-bad5","type":"payment.succeeded","paymentReference":"` + ref + `","amount":0}`,
		`{"id":"g-bad6","type":"payment.succeeded","paymentReference":"` + ref + `","paymentId":""}`,
		`{"id":"g-bad7","type":"payment.succeeded","paymentReference":"` + ref + `","currency":""}`,
		`{"id":"g-bad8","type":"payment.succeeded","paymentReference":"` + ref + `","amount":100000000}`,
		`{"id":"g-bad9","type":"payment.succeeded","paymentReference":"` + ref + `","amount":null}`,
		`{"id":"g-bad10","type":"payment.succeeded","paymentReference":"` + ref + `","paymentId":null}`,
		`{"id":"g-bad11","type":"payment.succeeded","paymentReference":"` + ref + `","amount":1500.5}`,
	} {
		if r := h.do(http.MethodPost, "/webhooks/payments", body, with(anonymous, signed(secret, body, h.now))); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, r.status, r.raw)
		}
	}
	if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, []string{"PaymentPrepared"}) {
		t.Errorf("the payment's events: %v", got)
	}
	if r := send(generic.Event{ID: "g-ours", Type: generic.TypeSucceeded, PaymentReference: ref, PaymentID: strictjson.Some(s.PaymentID), Amount: strictjson.Some(int64(1500)), Currency: strictjson.Some("EUR")}); r.str("status") != "confirmed" || r.body["mismatch"] != nil {
		t.Errorf("the payment's own: %s", r.raw)
	}
}

// TestAGenericSuccessForAnotherAmountOnOurPaymentIsOwed: the generic provider's
// signed payment.succeeded naming the payment's own id with "amount": 1 is
// acknowledged with "mismatch" (operators see it), and since the rental cannot
// have its bike for it, the payment is given up and the 1 it took, in the
// payment's currency, is owed; a redelivery changes nothing more.
func TestAGenericSuccessForAnotherAmountOnOurPaymentIsOwed(t *testing.T) {
	store := eventstore.NewMemory()
	h := newHarness(t, store, nil)
	ref := h.prepare(h.rentBike("g2", "alice"))
	s, _, _ := h.commands.LoadPayment(context.Background(), ref)
	b, _ := json.Marshal(generic.Event{ID: "g-one", Type: generic.TypeSucceeded, PaymentReference: ref, PaymentID: strictjson.Some(s.PaymentID), Amount: strictjson.Some(int64(1))})
	for delivery := range 2 {
		r := h.expect(http.MethodPost, "/webhooks/payments", string(b), with(anonymous, signed(secret, string(b), h.now)), http.StatusOK)
		if r.body["mismatch"] != true || r.str("status") != "cancelled" || r.str("refund") != "owed" || (r.body["duplicate"] == true) != (delivery > 0) {
			t.Errorf("delivery %d: %s; want a mismatch, the payment cancelled and its refund owed", delivery, r.raw)
		}
	}
	want := []string{"PaymentPrepared", "PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundOwed"}
	if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, want) {
		t.Fatalf("the payment's events: %v, want %v", got, want)
	}
	rentalID, _ := payment.RentalIDFor(ref)
	view := h.expect(http.MethodGet, "/rentals/"+rentalID, "", nil, http.StatusOK)
	pay := view.body["payment"].(map[string]any)
	if taken, _ := pay["taken"].(map[string]any); pay["amount"] != float64(1500) || taken["amount"] != float64(1) || taken["currency"] != "EUR" || pay["refund"] != "owed" {
		t.Errorf("the rental's payment: %s; want 1500 prepared, 1 EUR taken and owed", view.raw)
	}
}
