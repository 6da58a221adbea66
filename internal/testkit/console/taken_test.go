package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
	"github.com/bikerental/bikerental/internal/wiring"
)

// TestTheConsoleOwesWhatWasTaken: the generic provider says it took 7 cents on a
// rental's own payment of 2350 EUR, while the rental awaits it. The rental gives
// the payment up and owes the 7 cents back: the Refunds page lists it, its form
// says EUR 0.07 is owed and is filled with 7 (what was taken, not the price), and
// the rental's page shows both what the payment was for and what was taken; the
// price is refused in words, and 7 is recorded.
func TestTheConsoleOwesWhatWasTaken(t *testing.T) {
	ctx, watch := browser(t)
	s := startStack(t, map[string]string{wiring.EnvRentalPrice: fmt.Sprint(byHandPrice), wiring.EnvRentalCurrency: "EUR"})
	op, err := s.tokens.Operator(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if code := s.send("PUT", "/bikes/b8", op, nil, nil, nil); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("register b8: %d", code)
	}
	r := s.request("tess", "b8")
	s.awaitStatus(op, r, "awaiting-payment")
	var v struct {
		Payment struct {
			PaymentID string `json:"paymentId"`
		} `json:"payment"`
	}
	if code := s.send("GET", "/rentals/"+r, op, nil, nil, &v); code != http.StatusOK || v.Payment.PaymentID == "" {
		t.Fatalf("GET /rentals/%s: %d %+v", r, code, v)
	}
	body, _ := json.Marshal(generic.Event{ID: "evt-seven-" + strings.ReplaceAll(r, "_", "-"), Type: generic.TypeSucceeded,
		PaymentReference: payment.ReferenceFor(r), PaymentID: strictjson.Some(v.Payment.PaymentID), Amount: strictjson.Some(int64(7))})
	hdr := http.Header{"Payment-Signature": {webhook.Sign([]byte(local.DefaultWebhookSecret), body, time.Now())}}
	if code := s.send("POST", "/webhooks/payments", "", body, hdr, nil); code != http.StatusOK {
		t.Fatalf("the provider's 7 cents: %d", code)
	}
	for deadline := time.Now().Add(30 * time.Second); s.refundOf(op, r) != "owed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rental %s owes no refund: it is %q", r, s.refundOf(op, r))
		}
	}

	refundRow := fmt.Sprintf(`#refunds-table tr[data-rental=%q]`, r)
	run(t, ctx, "sign in, to the Refunds page", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("ops", true),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)), js(`location.hash = '#/backlog'`), waitFor(present(refundRow)))
	run(t, ctx, "the refund's form", chromedp.Click(chromedp.CSS(refundRow+` button.record-refund-by-hand`)), chromedp.WaitVisible(chromedp.CSS(`#byhand-amount`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-amount').value`); got != "7" {
		t.Errorf("the form's amount reads %q, want what was taken, 7", got)
	}
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-form').textContent`); !strings.Contains(got, "EUR 0.07 is owed back") {
		t.Errorf("the form reads %q, want it to say EUR 0.07 is owed back", got)
	}
	watch.expect("POST", "/rentals/"+r+"/refund-made-by-hand", http.StatusUnprocessableEntity)
	run(t, ctx, "the price", js(fmt.Sprintf(`document.getElementById('byhand-amount').value = '%d'`, byHandPrice)),
		chromedp.SetValue(chromedp.CSS(`#byhand-reference`), "bank-7"), confirmIn(`#byhand-submit`),
		waitFor(present(`#byhand-result .problem .problem-title`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-result').textContent`); !strings.Contains(got, fmt.Sprintf("7 EUR is owed, not %d", byHandPrice)) {
		t.Errorf("the refusal of the price reads %q, want what is owed", got)
	}
	run(t, ctx, "what was taken", js(`document.getElementById('byhand-amount').value = '7'`), confirmIn(`#byhand-submit`), waitFor(present(`#byhand-recorded`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-recorded').textContent`); !strings.HasPrefix(got, "EUR 0.07 for rental") {
		t.Errorf("the form says it recorded %q, want EUR 0.07", got)
	}
	run(t, ctx, "the rental's page", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, r)),
		waitFor(`document.getElementById('refund-state')?.textContent === 'refunded-by-hand'`))
	if got := evaluate[string](t, ctx, `document.getElementById('payment-amount').textContent`); got != "EUR 23.50" {
		t.Errorf("the payment's amount reads %q, want what it was for, EUR 23.50", got)
	}
	if got := evaluate[string](t, ctx, `document.getElementById('payment-taken').textContent`); !strings.HasPrefix(got, "EUR 0.07") || !strings.Contains(got, "not what the payment was for") {
		t.Errorf("what was taken reads %q, want EUR 0.07, said to be not what the payment was for", got)
	}
}
