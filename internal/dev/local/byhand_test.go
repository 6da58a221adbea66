package local_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
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
	if code := p.signedWebhook(generic.Event{ID: "evt-" + ident.Random(20), Type: generic.TypeSucceeded, PaymentReference: ref}, nil); code != http.StatusOK {
		t.Fatalf("the late payment.succeeded: %d", code)
	}
	p.waitFor("the refund owed to be listed", func() bool {
		refunds, deadlines := p.refundsListed()
		return slices.Equal(refunds, []string{rentalID}) && slices.Equal(deadlines, []string{rentalID})
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
	p.waitFor("the refund made by hand to leave every listing", func() bool {
		refunds, deadlines := p.refundsListed()
		return len(refunds) == 0 && len(deadlines) == 0
	})
	if code := p.send("POST", "/rentals/"+rentalID+"/refund-made-by-hand", []byte(`{"amount":1500,"reference":"bank-1"}`), json, nil); code != http.StatusConflict {
		t.Fatalf("a second one: %d", code)
	}
	var view struct{ Payment struct{ Refund string } }
	if p.send("GET", "/rentals/"+rentalID, nil, nil, &view); view.Payment.Refund != "refunded-by-hand" {
		t.Errorf("the rental's payment: %+v", view.Payment)
	}
}

// TestARentalThatOwesTwoSettlesEachOnItsOwn follows, on the local stack as a client
// sees it, a rental that owes two refunds: its payment given up on by an operator,
// then reported paid by the generic provider (which cannot refund: its own refund
// is owed), and a signed payment.succeeded naming another paymentId, for 7.00 USD
// (answered mismatch: true; that money is owed back too). GET /refunds/owed and
// GET /deadlines?kind=refund list both, each with the provider payment it is owed
// on, and the RefundsOwed metric counts each; each is recorded made by hand on its
// own (another amount refused with 422, a second record with 409), and each
// leaves both listings.
func TestARentalThatOwesTwoSettlesEachOnItsOwn(t *testing.T) {
	p := startPrecise(t)
	rentalID, ref := p.rent("owes-two")
	if code := p.send("POST", "/rentals/"+rentalID+"/cancel-payment", nil, nil, nil); code != http.StatusOK {
		t.Fatalf("cancel-payment: %d", code)
	}
	p.waitStatus(rentalID, "cancelled")
	webhook := func(e generic.Event) map[string]any {
		t.Helper()
		var answer map[string]any
		if code := p.signedWebhook(e, &answer); code != http.StatusOK {
			t.Fatalf("%+v: %d", e, code)
		}
		return answer
	}
	webhook(generic.Event{ID: "evt-" + ident.Random(20), Type: generic.TypeSucceeded, PaymentReference: ref})
	if answer := webhook(generic.Event{ID: "evt-" + ident.Random(20), Type: generic.TypeSucceeded, PaymentReference: ref,
		PaymentID: strictjson.Some("pay_other"), Amount: strictjson.Some[int64](700), Currency: strictjson.Some("USD")}); answer["mismatch"] != true {
		t.Fatalf("the success on another paymentId: %v", answer)
	}
	var view struct {
		Payment struct {
			PaymentID, Refund string
			UnexpectedRefunds []struct{ PaymentID, Refund string }
		}
	}
	p.send("GET", "/rentals/"+rentalID, nil, nil, &view)
	own := view.Payment.PaymentID

	type debt struct {
		RentalID, PaymentID, Cause, Currency string
		Amount                               int64
	}
	refunds := func() []debt {
		var list struct{ Refunds []debt }
		if code := p.send("GET", "/refunds/owed", nil, nil, &list); code != http.StatusOK {
			t.Fatalf("GET /refunds/owed: %d", code)
		}
		return list.Refunds
	}
	deadlines := func() []debt {
		var list struct {
			Deadlines []struct {
				RentalID string
				Refund   debt
			}
		}
		if code := p.send("GET", "/deadlines?kind=refund", nil, nil, &list); code != http.StatusOK {
			t.Fatalf("GET /deadlines?kind=refund: %d", code)
		}
		var out []debt
		for _, d := range list.Deadlines {
			d.Refund.RentalID = d.RentalID
			out = append(out, d.Refund)
		}
		return out
	}
	ownDebt := debt{RentalID: rentalID, PaymentID: own, Cause: "late-success", Currency: "EUR", Amount: 1500}
	otherDebt := debt{RentalID: rentalID, PaymentID: "pay_other", Cause: "other-payment", Currency: "USD", Amount: 700}
	has := func(list []debt, want ...debt) bool {
		return len(list) == len(want) && !slices.ContainsFunc(want, func(d debt) bool { return !slices.Contains(list, d) })
	}
	p.waitFor("both refunds owed to be listed", func() bool { return has(refunds(), ownDebt, otherDebt) && has(deadlines(), ownDebt, otherDebt) })
	p.waitFor("the RefundsOwed metric to count each", func() bool {
		n := 0.0
		for _, d := range emftest.Parse(t, p.metrics.Bytes()) {
			n += d.Values["RefundsOwed"]
		}
		return n == 2
	})

	json := http.Header{"Content-Type": {"application/json"}}
	path := "/rentals/" + rentalID + "/refund-made-by-hand"
	if code := p.send("POST", path, []byte(`{"amount":1500,"reference":"bank-2","paymentId":"pay_other"}`), json, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("another amount on the other payment: %d", code)
	}
	var rec struct{ PaymentID, Refund, RecordedBy string }
	if code := p.send("POST", path, []byte(`{"amount":700,"reference":"bank-2","paymentId":"pay_other"}`), json, &rec); code != http.StatusOK ||
		rec.PaymentID != "pay_other" || rec.Refund != "refunded-by-hand" || rec.RecordedBy != "ops" {
		t.Fatalf("the other payment's refund made by hand: %d %+v", code, rec)
	}
	if code := p.send("POST", path, []byte(`{"amount":700,"reference":"bank-2","paymentId":"pay_other"}`), json, nil); code != http.StatusConflict {
		t.Fatalf("the other payment's, a second time: %d", code)
	}
	p.waitFor("the other payment's refund to leave every listing", func() bool { return has(refunds(), ownDebt) && has(deadlines(), ownDebt) })

	if code := p.send("POST", path, []byte(`{"amount":700,"reference":"bank-1"}`), json, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("the other payment's amount for the own one: %d", code)
	}
	if code := p.send("POST", path, []byte(`{"amount":1500,"reference":"bank-1"}`), json, &rec); code != http.StatusOK || rec.PaymentID != own || rec.Refund != "refunded-by-hand" {
		t.Fatalf("the own refund made by hand: %d %+v", code, rec)
	}
	if code := p.send("POST", path, []byte(`{"amount":1500,"reference":"bank-1"}`), json, nil); code != http.StatusConflict {
		t.Fatalf("the own one, a second time: %d", code)
	}
	p.waitFor("both refunds to leave every listing", func() bool { return len(refunds()) == 0 && len(deadlines()) == 0 })
	p.send("GET", "/rentals/"+rentalID, nil, nil, &view)
	if view.Payment.Refund != "refunded-by-hand" || len(view.Payment.UnexpectedRefunds) != 1 || view.Payment.UnexpectedRefunds[0].Refund != "refunded-by-hand" {
		t.Errorf("the rental's payment: %+v", view.Payment)
	}
}
