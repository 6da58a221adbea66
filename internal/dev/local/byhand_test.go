package local_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/ident"
)

// TestARefundMadeByHandLeavesEveryListing follows a refund owed on the local stack,
// the real projector behind the stream: a payment given up on by an operator is
// then reported paid by the generic provider, which cannot refund, so the refund is
// owed (GET /refunds/owed and GET /deadlines?kind=refund list it); an operator
// records it made by hand, and once the projector has handled RefundMadeByHand,
// neither lists it; the rental's view says refunded-by-hand.
func TestARefundMadeByHandLeavesEveryListing(t *testing.T) {
	p := startPrecise(t)
	rentalID, ref := p.rent("by-hand")
	if code := p.send("POST", "/rentals/"+rentalID+"/cancel-payment", nil, nil, nil); code != http.StatusOK {
		t.Fatalf("cancel-payment: %d", code)
	}
	p.waitStatus(rentalID, "cancelled")
	body, _ := json.Marshal(generic.Event{ID: "evt-" + ident.Random(20), Type: generic.TypeSucceeded, PaymentReference: ref})
	hdr := http.Header{"Content-Type": {"application/json"}, webhook.Header: {generic.Sign([]byte(local.DefaultWebhookSecret), body, time.Now())}}
	if code := p.send("POST", "/webhooks/payments", body, hdr, nil); code != http.StatusOK {
		t.Fatalf("the late payment.succeeded: %d", code)
	}

	type owed struct{ RentalID string }
	refunds := func() []string {
		var list struct{ Refunds []owed }
		if code := p.send("GET", "/refunds/owed", nil, nil, &list); code != http.StatusOK {
			t.Fatalf("GET /refunds/owed: %d", code)
		}
		var ids []string
		for _, o := range list.Refunds {
			ids = append(ids, o.RentalID)
		}
		return ids
	}
	deadlines := func() []string {
		var list struct{ Deadlines []owed }
		if code := p.send("GET", "/deadlines?kind=refund", nil, nil, &list); code != http.StatusOK {
			t.Fatalf("GET /deadlines?kind=refund: %d", code)
		}
		var ids []string
		for _, o := range list.Deadlines {
			ids = append(ids, o.RentalID)
		}
		return ids
	}
	p.waitFor("the refund owed to be listed", func() bool {
		return slices.Equal(refunds(), []string{rentalID}) && slices.Equal(deadlines(), []string{rentalID})
	})

	json := http.Header{"Content-Type": {"application/json"}}
	if code := p.send("POST", "/rentals/"+rentalID+"/refund-made-by-hand", []byte(`{"amount":1499,"reference":"bank-1"}`), json, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("another amount: %d", code)
	}
	var rec struct{ Refund, RecordedBy string }
	if code := p.send("POST", "/rentals/"+rentalID+"/refund-made-by-hand", []byte(`{"amount":1500,"reference":"bank-1"}`), json, &rec); code != http.StatusOK ||
		rec.Refund != "refunded-by-hand" || rec.RecordedBy != "ops" {
		t.Fatalf("refund made by hand: %d %+v", code, rec)
	}
	p.waitFor("the refund made by hand to leave every listing", func() bool { return len(refunds()) == 0 && len(deadlines()) == 0 })
	if code := p.send("POST", "/rentals/"+rentalID+"/refund-made-by-hand", []byte(`{"amount":1500,"reference":"bank-1"}`), json, nil); code != http.StatusConflict {
		t.Fatalf("a second one: %d", code)
	}
	var view struct{ Payment struct{ Refund string } }
	if p.send("GET", "/rentals/"+rentalID, nil, nil, &view); view.Payment.Refund != "refunded-by-hand" {
		t.Errorf("the rental's payment: %+v", view.Payment)
	}
}
