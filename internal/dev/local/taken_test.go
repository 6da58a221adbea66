package local_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// TestOurPaymentForAnotherAmountOwesWhatWasTaken follows, as a client
// sees it on the local stack, the generic provider's signed payment.succeeded for
// the rental's own payment id with "amount": 1 where 1500 EUR were asked. It is
// answered as a mismatch, and the rental cannot have its bike for it: the payment
// is given up before its deadline (the bike is released), and what the provider
// said it took is owed back. GET /refunds/owed and GET /deadlines?kind=refund list
// it (the index holds keys only); the rental says 1 EUR was taken and is owed; a
// refund made by hand for the 1500 the payment was for is refused, saying 1 EUR is
// owed, and one for 1 settles it and leaves both listings; a sweep after the
// deadline changes nothing.
func TestOurPaymentForAnotherAmountOwesWhatWasTaken(t *testing.T) {
	p := startPrecise(t)
	rentalID, ref := p.rent("taken-1")
	requested := time.Now()
	type view struct {
		Status  string
		Payment struct {
			PaymentID, Currency, Refund string
			Amount                      int64
			Taken                       *struct {
				Amount   int64
				Currency string
			}
		}
	}
	var before view
	if code := p.send("GET", "/rentals/"+rentalID, nil, nil, &before); code != http.StatusOK || before.Payment.PaymentID == "" || before.Payment.Amount != 1500 {
		t.Fatalf("the rental before: %d %+v", code, before)
	}

	var answer struct {
		Mismatch bool
		Status   string
	}
	succeeded := generic.Event{ID: "evt-" + ident.Random(20), Type: generic.TypeSucceeded, PaymentReference: ref,
		PaymentID: strictjson.Some(before.Payment.PaymentID), Amount: strictjson.Some(int64(1))}
	if code := p.signedWebhook(succeeded, &answer); code != http.StatusOK || !answer.Mismatch {
		t.Fatalf("payment.succeeded for 1 on the rental's own payment: %d %+v; want 200, a mismatch", code, answer)
	}
	p.waitStatus(rentalID, "cancelled")
	if time.Since(requested) >= preciseTimeout {
		t.Fatalf("the rental was cancelled %v after it was requested, not before its deadline (%v): its deadline, not the provider's word, gave it up", time.Since(requested), preciseTimeout)
	}

	p.waitFor("the refund owed to be listed", func() bool {
		refunds, deadlines := p.refundsListed()
		return slices.Equal(refunds, []string{rentalID}) && slices.Equal(deadlines, []string{rentalID})
	})

	// The deadline passes, and a sweep after it changes nothing.
	p.waitFor("the payment's deadline to pass", func() bool { return time.Since(requested) > preciseTimeout })
	var sum struct {
		Kinds []struct {
			Kind         string
			Found, Acted int
		}
	}
	if err := local.Call(t.Context(), p.stack.Functions.Sweep, map[string]string{}, &sum); err != nil {
		t.Fatal(err)
	}
	for _, k := range sum.Kinds {
		if k.Found != 0 || k.Acted != 0 {
			t.Errorf("the sweep after the deadline found %d and acted on %d rows of %s; want nothing to do", k.Found, k.Acted, k.Kind)
		}
	}
	var after view
	p.send("GET", "/rentals/"+rentalID, nil, nil, &after)
	if after.Status != "cancelled" || after.Payment.Refund != "owed" || after.Payment.Amount != 1500 || after.Payment.Taken == nil ||
		after.Payment.Taken.Amount != 1 || after.Payment.Taken.Currency != "EUR" {
		t.Fatalf("the rental after its deadline: %+v; want cancelled, 1500 EUR asked, 1 EUR taken and owed", after)
	}

	jsonHdr := http.Header{"Content-Type": {"application/json"}}
	token, err := p.tokens.Operator(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", p.base+"/rentals/"+rentalID+"/refund-made-by-hand", strings.NewReader(`{"amount":1500,"reference":"bank-1"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.Bearer(token))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var problem struct{ Type, Detail string }
	err = json.NewDecoder(resp.Body).Decode(&problem)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || err != nil || !strings.HasSuffix(problem.Type, "refund-amount-not-owed") || !strings.Contains(problem.Detail, "1 EUR is owed, not 1500") {
		t.Fatalf("by hand for the 1500 the payment was for: %d %+v (%v); want 422 refund-amount-not-owed, saying 1 EUR is owed", resp.StatusCode, problem, err)
	}
	var rec struct {
		Amount           int64
		Currency, Refund string
	}
	if code := p.send("POST", "/rentals/"+rentalID+"/refund-made-by-hand", []byte(`{"amount":1,"reference":"bank-1"}`), jsonHdr, &rec); code != http.StatusOK ||
		rec.Amount != 1 || rec.Currency != "EUR" || rec.Refund != "refunded-by-hand" {
		t.Fatalf("by hand for the 1 taken: %d %+v", code, rec)
	}
	p.waitFor("the refund made by hand to leave every listing", func() bool {
		refunds, deadlines := p.refundsListed()
		return len(refunds) == 0 && len(deadlines) == 0
	})
}
