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

// byHandPrice is the by-hand test's RENTAL_PRICE_CENTS: not the default, so that
// the form's amount is seen to come from the payment.
const byHandPrice = 2350

// byHandReference is the operator's reference of the refund: a bank transfer's
// id, with markup an attacker would like the console to turn into an element.
const byHandReference = `SEPA-4471 ` + markup

// TestARefundMadeByHandIsRecordedFromTheConsole: a late success on a generic
// provider's rental makes a refund owed; an operator opens its form from the
// Refunds page (prefilled with what is owed, with its currency), is refused in
// words for another amount (nothing changes), then records it with a reference
// holding markup, which stays text. The row leaves the Refunds page and the to-do
// list; the rental reads refunded-by-hand, with the event in its timeline, and
// offers nothing more. A form opened on the rental's page in another tab before
// that is refused in words when sent after it.
func TestARefundMadeByHandIsRecordedFromTheConsole(t *testing.T) {
	ctx, watch := browser(t)
	s := startStack(t, map[string]string{wiring.EnvRentalPrice: fmt.Sprint(byHandPrice), wiring.EnvRentalCurrency: "EUR"})
	op, err := s.tokens.Operator(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if code := s.send("PUT", "/bikes/b7", op, nil, nil, nil); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("register b7: %d", code)
	}
	r := s.owedRefund(op, "rhea", "b7")
	path := "/rentals/" + r + "/refund-made-by-hand"

	run(t, ctx, "sign in", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("ops", true),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)), waitFor(present(row(r, "refund"))))
	other := s.staleForm(t, ctx, r)

	refundRow := fmt.Sprintf(`#refunds-table tr[data-rental=%q]`, r)
	run(t, ctx, "the refund's form, from the Refunds page", js(`location.hash = '#/backlog'`),
		waitFor(present(refundRow+` button.record-refund-by-hand`)), chromedp.Click(chromedp.CSS(refundRow+` button.record-refund-by-hand`)),
		chromedp.WaitVisible(chromedp.CSS(`#byhand-amount`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-amount').value`); got != fmt.Sprint(byHandPrice) {
		t.Errorf("the amount reads %q, want what is owed, %d", got, byHandPrice)
	}
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-amount-words').textContent`); got != "= EUR 23.50" {
		t.Errorf("the amount is shown as %q, want it with its currency, \"= EUR 23.50\"", got)
	}
	run(t, ctx, "no reference is refused by the field", chromedp.Click(chromedp.CSS(`#byhand-submit`)),
		waitFor(`document.getElementById('byhand-reference').validity.valueMissing && !document.querySelector('dialog')`))
	if sent := watch.sentMatching(func(q string) bool { return strings.HasSuffix(q, "/refund-made-by-hand") }); len(sent) != 0 {
		t.Fatalf("a refund without a reference was sent: %v", sent)
	}

	// Another amount: the API refuses it in words, and nothing changes.
	watch.expect("POST", path, http.StatusUnprocessableEntity)
	run(t, ctx, "another amount", js(`document.getElementById('byhand-amount').value = '2300'`),
		chromedp.SetValue(chromedp.CSS(`#byhand-reference`), byHandReference), confirmIn(`#byhand-submit`),
		waitFor(present(`#byhand-result .problem .problem-title`)))
	readsAsAProblem(t, ctx, "#byhand-result", "Unprocessable Entity")
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-result').textContent`); !strings.Contains(got, "The refund was not recorded.") ||
		!strings.Contains(got, fmt.Sprintf("%d EUR is owed, not 2300", byHandPrice)) {
		t.Errorf("the refusal of another amount reads %q, want what was not done and what is owed", got)
	}
	if got := s.refundOf(op, r); got != "owed" {
		t.Fatalf("after a refused amount the refund is %q, want still owed", got)
	}

	// What is owed, with markup in the reference: the question says exactly what
	// is recorded, and the reference stays text.
	run(t, ctx, "ask to record what is owed", js(fmt.Sprintf(`document.getElementById('byhand-amount').value = '%d'`, byHandPrice)),
		chromedp.Click(chromedp.CSS(`#byhand-submit`)), chromedp.WaitVisible(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)))
	question := evaluate[string](t, ctx, `document.getElementById('confirm-question').textContent`)
	for _, want := range []string{"EUR 23.50", fmt.Sprintf("%d EUR", byHandPrice), "rental " + r + "'s payment", "“" + byHandReference + "”", "recorded by ops"} {
		if !strings.Contains(question, want) {
			t.Errorf("the question %q does not say %q", question, want)
		}
	}
	if !evaluate[bool](t, ctx, noInjection) {
		t.Error("the reference in the question made an element")
	}
	screenshot(t, ctx, "refund-by-hand.png")
	run(t, ctx, "record it", chromedp.Click(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)),
		waitFor(present(`#byhand-recorded`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-recorded-reference').textContent`); got != byHandReference {
		t.Errorf("the recorded reference reads %q, want %q as text", got, byHandReference)
	}
	if !evaluate[bool](t, ctx, noInjection) {
		t.Error("the recorded reference made an element")
	}
	run(t, ctx, "it leaves the Refunds page", waitFor(`!(`+present(refundRow)+`) && document.getElementById('refunds-empty') !== null`))
	run(t, ctx, "and the to-do list", js(`location.hash = '#/todo'`), waitFor(present(`#todo-empty`)), waitFor(`!(`+present(row(r, "refund"))+`)`))
	recordedOnItsPage(t, ctx, r)
	run(t, ctx, "the whole page, for its picture", chromedp.EmulateViewport(1280, 1400))
	screenshot(t, ctx, "refund-by-hand-recorded.png")
	run(t, ctx, "back to the window's size", chromedp.EmulateReset())
	other.refusedAsRecorded(t, path)
	if got := s.byHandEvents(op, r); len(got) != 1 || !strings.Contains(got[0], `"operatorReference":"SEPA-4471 \u003cimg`) && !strings.Contains(got[0], `"operatorReference":"SEPA-4471 <img`) {
		t.Errorf("the rental's refunds made by hand: %v, want the one with the markup reference", got)
	}
}

// owedRefund makes a refund owed on a rental of bike for renter: its payment is
// cancelled by the operator, then the generic provider's success arrives.
func (s *stack) owedRefund(op, renter, bike string) string {
	s.t.Helper()
	r := s.request(renter, bike)
	s.awaitStatus(op, r, "awaiting-payment")
	if code := s.send("POST", "/rentals/"+r+"/cancel-payment", op, nil, nil, nil); code != http.StatusOK {
		s.t.Fatalf("cancel %s: %d", r, code)
	}
	s.awaitStatus(op, r, "cancelled")
	s.provider(r, generic.TypeSucceeded, "")
	for deadline := time.Now().Add(30 * time.Second); s.refundOf(op, r) != "owed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("rental %s owes no refund: it is %q", r, s.refundOf(op, r))
		}
	}
	return r
}

// refundOf is where the refund of a rental stands, as the operator API reads it.
func (s *stack) refundOf(op, rentalID string) string {
	s.t.Helper()
	var v struct {
		Payment struct {
			Refund string `json:"refund"`
		} `json:"payment"`
	}
	if code := s.send("GET", "/rentals/"+rentalID, op, nil, nil, &v); code != http.StatusOK {
		s.t.Fatalf("GET /rentals/%s: %d", rentalID, code)
	}
	return v.Payment.Refund
}

// recordedOnItsPage checks the rental's page after its refund was recorded by
// hand: refunded-by-hand, the event in its timeline with the reference as text
// and who recorded it, and nothing more to do.
func recordedOnItsPage(t *testing.T, ctx context.Context, r string) {
	t.Helper()
	const event = `#timeline li[data-type="RefundMadeByHand"]`
	run(t, ctx, "the rental's page", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, r)),
		waitFor(`document.getElementById('refund-state')?.textContent === 'refunded-by-hand'`), waitFor(present(event)))
	data := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .event-data').textContent`, event))
	for _, want := range []string{"operatorReference=" + byHandReference, "recordedBy=ops", fmt.Sprintf("amount=%d", byHandPrice), "currency=EUR"} {
		if !strings.Contains(data, want) {
			t.Errorf("RefundMadeByHand's data reads %q, want %q in it", data, want)
		}
	}
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .cause').textContent`, event)); !strings.HasPrefix(got, "caused by API request ") {
		t.Errorf("RefundMadeByHand's cause reads %q, want the API request", got)
	}
	if !evaluate[bool](t, ctx, noInjection) {
		t.Error("the reference in the timeline made an element")
	}
	timesInUTC(t, ctx, "the rental refunded by hand", 8)
	noActionOnAnEndedRental(t, ctx)
}

// tab is a second tab of the browser, signed in as the same operator.
type tab struct {
	ctx   context.Context
	watch *browserLog
}

// staleForm opens, in a second tab, the rental's page while its refund is owed,
// and its form, with what is owed and a reference of its own.
func (s *stack) staleForm(t *testing.T, first context.Context, r string) tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(first)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	other := tab{ctx: ctx, watch: watchBrowser(t, ctx)}
	run(t, ctx, "the other tab signs in", chromedp.Navigate(local.ConsoleURL(s.base)+"#/rental/"+r), signIn("ops", true),
		waitFor(`document.getElementById('refund-state')?.textContent === 'owed'`))
	onlyTheRefundByHand(t, ctx)
	run(t, ctx, "the other tab's form", chromedp.Click(chromedp.CSS(`#record-refund-by-hand`)), chromedp.WaitVisible(chromedp.CSS(`#byhand-amount`)),
		chromedp.SetValue(chromedp.CSS(`#byhand-reference`), "bank-transfer-2"))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-amount').value`); got != fmt.Sprint(byHandPrice) {
		t.Errorf("the rental page's form reads %q, want what is owed, %d", got, byHandPrice)
	}
	return other
}

// refusedAsRecorded sends the other tab's form, opened before the refund was
// recorded: the API refuses a second one in words.
func (o tab) refusedAsRecorded(t *testing.T, path string) {
	t.Helper()
	o.watch.expect("POST", path, http.StatusConflict)
	run(t, o.ctx, "the other tab's form, sent after", confirmIn(`#byhand-submit`), waitFor(present(`#byhand-result .problem .problem-title`)))
	readsAsAProblem(t, o.ctx, "#byhand-result", "Conflict")
	if got := evaluate[string](t, o.ctx, `document.getElementById('byhand-result').textContent`); !strings.Contains(got, "recorded as made already") {
		t.Errorf("a second refund made by hand reads %q, want that it is recorded already", got)
	}
	// The rental's page, read again, offers nothing more.
	run(t, o.ctx, "the other tab reads the rental again", chromedp.Reload(), signIn("ops", true),
		waitFor(`document.getElementById('refund-state')?.textContent === 'refunded-by-hand'`))
	noActionOnAnEndedRental(t, o.ctx)
}

// byHandEvents returns the data of every RefundMadeByHand in the rental's history.
func (s *stack) byHandEvents(op, rentalID string) []string {
	s.t.Helper()
	var v struct {
		History []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"history"`
	}
	if code := s.send("GET", "/rentals/"+rentalID, op, nil, nil, &v); code != http.StatusOK {
		s.t.Fatalf("GET /rentals/%s: %d", rentalID, code)
	}
	var out []string
	for _, e := range v.History {
		if e.Type == "RefundMadeByHand" {
			out = append(out, string(e.Data))
		}
	}
	return out
}

// TestEachRefundOwedIsRecordedOnItsOwnFromTheConsole: a rental that owes two refunds
// (its own payment's late success, and 7.00 EUR a signed generic payment.succeeded
// reported taken on another paymentId) shows two rows on the Refunds page and on
// the to-do list, each with the provider payment it is owed on, and its page
// offers to record each. The other payment's form, opened from its row, holds
// what is owed on it; another amount is refused in words; recorded, that row alone
// leaves. The own one's, then, likewise; the rental then offers nothing more.
func TestEachRefundOwedIsRecordedOnItsOwnFromTheConsole(t *testing.T) {
	ctx, watch := browser(t)
	s := startStack(t, map[string]string{wiring.EnvRentalPrice: fmt.Sprint(byHandPrice), wiring.EnvRentalCurrency: "EUR"})
	op, err := s.tokens.Operator(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if code := s.send("PUT", "/bikes/b8", op, nil, nil, nil); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("register b8: %d", code)
	}
	r := s.owedRefund(op, "rita", "b8")
	body, _ := json.Marshal(generic.Event{ID: "evt-other-" + r, Type: generic.TypeSucceeded, PaymentReference: payment.ReferenceFor(r),
		PaymentID: strictjson.Some("pay_other"), Amount: strictjson.Some[int64](700), Currency: strictjson.Some("EUR")})
	hdr := http.Header{"Payment-Signature": {webhook.Sign([]byte(local.DefaultWebhookSecret), body, time.Now())}}
	if code := s.send("POST", "/webhooks/payments", "", body, hdr, nil); code != http.StatusOK {
		t.Fatalf("the success on another paymentId: %d", code)
	}
	path := "/rentals/" + r + "/refund-made-by-hand"
	ownRow := fmt.Sprintf(`#refunds-table tr[data-rental=%q]:not([data-payment-id="pay_other"])`, r)
	otherRow := fmt.Sprintf(`#refunds-table tr[data-rental=%q][data-payment-id="pay_other"]`, r)
	refundRows := fmt.Sprintf(`document.querySelectorAll('#todo-rows tr[data-rental=%q][data-kind="refund"]').length`, r)

	run(t, ctx, "sign in: two refund rows on the to-do list", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("ops", true),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)), waitFor(refundRows+` === 2`))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('#todo-rows tr[data-rental=%q][data-payment-id="pay_other"] .owed-on').textContent`, r)); got != "EUR 7.00 on pay_other" {
		t.Errorf("the other payment's row on the to-do list reads %q", got)
	}
	run(t, ctx, "its page offers to record each", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, r)),
		waitFor(present(`#record-refund-by-hand`)), waitFor(present(`#rental-actions button.record-unexpected-refund-by-hand[data-payment-id="pay_other"]`)))
	if n := evaluate[float64](t, ctx, `document.querySelectorAll('#rental-actions button').length`); n != 2 {
		t.Errorf("the rental offers %v actions, want one for each refund owed", n)
	}
	if got := evaluate[string](t, ctx, `document.querySelector('#unexpected-refunds li[data-payment-id="pay_other"] .unexpected-refund-state').textContent`); got != "owed" {
		t.Errorf("the other payment's refund reads %q on the rental's page", got)
	}
	if got := evaluate[string](t, ctx, `document.querySelector('#timeline li[data-type="UnexpectedRefundOwed"] .cause').textContent`); got != "caused by the provider's event evt-other-"+r+" (generic)" {
		t.Errorf("the refund owed on the other payment reads %q in the timeline, want the provider's event as its cause", got)
	}

	run(t, ctx, "two rows on the Refunds page, each with its action", js(`location.hash = '#/backlog'`),
		waitFor(present(ownRow+` button.record-refund-by-hand`)), waitFor(present(otherRow+` button.record-refund-by-hand`)))
	for sel, want := range map[string][]string{
		otherRow: {"pay_other", "EUR 7.00", "taken on another provider payment"},
		ownRow:   {"EUR 23.50", "paid after the payment was given up on"},
	} {
		text := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).textContent`, sel))
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("the row %s reads %q, want %q in it", sel, text, w)
			}
		}
	}
	screenshot(t, ctx, "refunds-owed-two.png")

	// The other payment's, from its row: what is owed on it, another amount refused.
	run(t, ctx, "the other payment's form", chromedp.Click(chromedp.CSS(otherRow+` button.record-refund-by-hand`)),
		chromedp.WaitVisible(chromedp.CSS(`#byhand-amount`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-amount').value + ' ' + document.getElementById('byhand-payment-id').textContent`); got != "700 pay_other" {
		t.Errorf("the other payment's form reads %q, want what is owed on pay_other", got)
	}
	watch.expect("POST", path, http.StatusUnprocessableEntity)
	run(t, ctx, "another amount on it", js(`document.getElementById('byhand-amount').value = '2350'`),
		chromedp.SetValue(chromedp.CSS(`#byhand-reference`), "bank-other"), confirmIn(`#byhand-submit`),
		waitFor(present(`#byhand-result .problem .problem-title`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-result').textContent`); !strings.Contains(got, "700 EUR is owed on provider payment pay_other, not 2350") {
		t.Errorf("the refusal reads %q, want what is owed on pay_other", got)
	}
	run(t, ctx, "ask to record what is owed on it", js(`document.getElementById('byhand-amount').value = '700'`),
		chromedp.Click(chromedp.CSS(`#byhand-submit`)), chromedp.WaitVisible(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)))
	if q := evaluate[string](t, ctx, `document.getElementById('confirm-question').textContent`); !strings.Contains(q, "EUR 7.00") || !strings.Contains(q, "provider payment pay_other") {
		t.Errorf("the question %q does not say what is recorded", q)
	}
	run(t, ctx, "record it", chromedp.Click(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)), waitFor(present(`#byhand-recorded`)))
	run(t, ctx, "its row alone leaves", waitFor(`!(`+present(otherRow)+`) && `+present(ownRow+` button.record-refund-by-hand`)))

	// The own one, from its row.
	run(t, ctx, "the own refund's form", chromedp.Click(chromedp.CSS(ownRow+` button.record-refund-by-hand`)),
		chromedp.WaitVisible(chromedp.CSS(`#byhand-amount`)), waitFor(`!`+present(`#byhand-payment-id`)))
	if got := evaluate[string](t, ctx, `document.getElementById('byhand-amount').value`); got != fmt.Sprint(byHandPrice) {
		t.Errorf("the own refund's form reads %q, want %d", got, byHandPrice)
	}
	run(t, ctx, "record the own one", chromedp.SetValue(chromedp.CSS(`#byhand-reference`), "bank-own"), confirmIn(`#byhand-submit`),
		waitFor(present(`#byhand-recorded`)), waitFor(`!(`+present(ownRow)+`) && document.getElementById('refunds-empty') !== null`))
	run(t, ctx, "the to-do list holds neither", js(`location.hash = '#/todo'`), waitFor(present(`#todo-empty`)), waitFor(refundRows+` === 0`))
	run(t, ctx, "the rental's page: both made, nothing more to do", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, r)),
		waitFor(`document.getElementById('refund-state')?.textContent === 'refunded-by-hand'`),
		waitFor(`document.querySelector('#unexpected-refunds li[data-payment-id="pay_other"] .unexpected-refund-state')?.textContent === 'refunded-by-hand'`))
	noActionOnAnEndedRental(t, ctx)
}
