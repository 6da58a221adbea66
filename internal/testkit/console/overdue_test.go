package console_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
)

// rentalPeriod is the overdue test's RENTAL_PERIOD: short, so that a paid rental
// falls due while the test watches.
const rentalPeriod = 2 * time.Second

// TestAnOverdueRentalIsReturnedFromItsPage follows the to-do list's link of a bike
// that is overdue to the rental's page, which offers its return (and nothing else)
// and records it by click; the rental then offers nothing, and the list is empty.
func TestAnOverdueRentalIsReturnedFromItsPage(t *testing.T) {
	ctx, _ := browser(t)
	s := startStack(t, map[string]string{wiring.EnvRentalPeriod: rentalPeriod.String()})
	op, err := s.tokens.Operator(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if code := s.send("PUT", "/bikes/b9", op, nil, nil, nil); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("register b9: %d", code)
	}
	e := s.request("erin", "b9")
	s.awaitStatus(op, e, "awaiting-payment")
	s.provider(e, generic.TypeSucceeded, "")

	run(t, ctx, "sign in", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("ops", true),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)),
		waitFor(fmt.Sprintf(`document.querySelector(%q)?.classList.contains('overdue')`, row(e, "return"))))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .badge').textContent`, row(e, "return"))); got != "Bike due back" {
		t.Errorf("a return due reads %q, want \"Bike due back\"", got)
	}
	// The sweep flags the return overdue; the row stays, as a return, until the
	// bike is back.
	s.sweep()
	run(t, ctx, "the overdue rental's page, from its row", chromedp.Click(chromedp.CSS(row(e, "return")+` a`)),
		waitFor(`document.getElementById('rental-status')?.textContent === 'overdue'`),
		waitFor(present(`#record-return`)), waitFor(present(`#due-back`)))
	if evaluate[bool](t, ctx, present(`#cancel-payment`)) {
		t.Error("an overdue rental offers to cancel its payment")
	}
	timesInUTC(t, ctx, "an overdue rental's page", 5)
	run(t, ctx, "ask to record the return", chromedp.Click(chromedp.CSS(`#record-return`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)))
	screenshot(t, ctx, "overdue-return.png")
	run(t, ctx, "record the return", chromedp.Click(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)),
		waitFor(`document.getElementById('action-result')?.textContent === 'Return recorded: bike b9 is available.'`),
		waitFor(`document.getElementById('rental-status')?.textContent === 'returned'`),
		waitFor(`document.getElementById('due-back')?.textContent.includes('late')`))
	noActionOnAnEndedRental(t, ctx)
	screenshot(t, ctx, "overdue-returned.png")
	run(t, ctx, "the list is empty again", js(`location.hash = '#/todo'`),
		waitFor(present(`#todo-empty`)), waitFor(`!(`+present(row(e, "return"))+`)`))
}

// awaitStatus waits, up to 30 seconds, until the operator API reads the rental at
// status.
func (s *stack) awaitStatus(token, rentalID, status string) {
	s.t.Helper()
	var got struct {
		Status string `json:"status"`
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code := s.send("GET", "/rentals/"+rentalID, token, nil, nil, &got); code == http.StatusOK && got.Status == status {
			return
		}
	}
	s.t.Fatalf("rental %s did not reach %s: it is %q", rentalID, status, got.Status)
}
