// Package console_test drives the operator console in a real headless Chromium
// against the local stack: sign-in, the to-do list, a rental's timeline, the
// operator commands by click, a renter refused, and markup that stays text.
package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bikerental/bikerental/deadlines/awslambda"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/wiring"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// paymentTimeout is the stack's PAYMENT_TIMEOUT: short, so that a payment falls
// due while the test watches its countdown.
const paymentTimeout = 3 * time.Second

// markup is what an attacker would like the console to turn into an element.
const markup = `<img src=x onerror="window.__injected=1">`

// stack is a local stack whose sweep runs only when the test invokes it.
type stack struct {
	t      *testing.T
	up     *local.Up
	base   string
	tokens *auth.Tokens
}

func startStack(t *testing.T, more map[string]string) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	env := map[string]string{
		wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvDeadlinesTable: emulatortest.TableName(t, "pending"),
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret, wiring.EnvPaymentTimeout: paymentTimeout.String(),
	}
	for k, v := range more {
		env[k] = v
	}
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l, err := local.Listen("127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Stack.Run(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stack: %v", err)
		}
	})
	base := "http://" + l.Addr().String()
	return &stack{t: t, up: up, base: base, tokens: &auth.Tokens{BaseURL: base}}
}

// send makes one API call with token, and decodes a 2xx answer into out.
func (s *stack) send(method, path, token string, body []byte, hdr http.Header, out any) int {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", auth.Bearer(token))
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// request asks for bike as renter and returns the rental id.
func (s *stack) request(renter, bike string) string {
	s.t.Helper()
	token, err := s.tokens.Renter(context.Background(), renter)
	if err != nil {
		s.t.Fatal(err)
	}
	var got struct {
		RentalID string `json:"rentalId"`
	}
	if code := s.send("POST", "/rentals", token, []byte(`{"bikeId":"`+bike+`"}`), nil, &got); code != http.StatusAccepted {
		s.t.Fatalf("request %s: %d", bike, code)
	}
	return got.RentalID
}

// providerEventID is the id of the generic provider's event of outcome typ about
// a rental's payment, as provider sends it.
func providerEventID(typ, rentalID string) string {
	return "evt-" + typ[len("payment."):] + "-" + strings.ReplaceAll(rentalID, "_", "-")
}

// provider reports, as the generic provider, the outcome typ (generic.TypeSucceeded
// or generic.TypeFailed, for reason) of a rental's payment.
func (s *stack) provider(rentalID, typ, reason string) {
	s.t.Helper()
	body, _ := json.Marshal(generic.Event{ID: providerEventID(typ, rentalID), Type: typ,
		PaymentReference: payment.ReferenceFor(rentalID), Reason: reason})
	hdr := http.Header{"Payment-Signature": {webhook.Sign([]byte(local.DefaultWebhookSecret), body, time.Now())}}
	if code := s.send("POST", "/webhooks/payments", "", body, hdr, nil); code != http.StatusOK {
		s.t.Fatalf("%s %s: %d", typ, rentalID, code)
	}
}

// sweep invokes the sweep function, which then takes its clock's now.
func (s *stack) sweep() awslambda.Summary {
	s.t.Helper()
	var sum awslambda.Summary
	input := map[string]string{}
	if err := local.Call(context.Background(), s.up.Stack.Functions.Sweep, input, &sum); err != nil {
		s.t.Fatal(err)
	}
	return sum
}

// acted is how many commands of kind the sweep of sum sent that its receiver acted
// on.
func acted(sum awslambda.Summary, kind string) int {
	k, _ := sum.Kind(kind)
	return k.Acted
}

// browser starts one headless Chromium for the test, or skips the test when there
// is none (fails under CI=true: make chromium installs it). The test fails at its
// end if the browser reported an error it did not expect (browserLog).
func browser(t *testing.T, more ...chromedp.ExecAllocatorOption) (context.Context, *browserLog) {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on PATH (or CHROMIUM): install it with make chromium")
		}
		t.Skip("no chromium on PATH (or CHROMIUM): install it with make chromium to run the console's browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	opts = append(opts, more...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx, watchBrowser(t, ctx)
}

// waitFor waits, up to 30 seconds, until the JavaScript expression cond is true in
// the page.
func waitFor(cond string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))(ctx, t)
		if err != nil {
			err = fmt.Errorf("waiting for %s: %w", cond, err)
		}
		return chromedp.Void{}, err
	}
}

// js runs a JavaScript statement in the page.
func js(stmt string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool]("("+stmt+", true)")(ctx, t)
		return chromedp.Void{}, err
	}
}

// stepTimeout bounds each step of a test in the browser, so that a page that
// never gets where a step waits for fails the test instead of hanging it.
const stepTimeout = 60 * time.Second

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(step, actions...); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\nthe page says:\n%s", what, err, text)
	}
}

// evaluate returns a JavaScript expression's value in the page.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// confirmIn clicks a button that asks for a confirmation, then confirms.
func confirmIn(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)),
		chromedp.Click(chromedp.CSS(`dialog[open] [data-confirm="yes"]`)), chromedp.WaitNotPresent(chromedp.CSS(`dialog[open]`)))
}

func signIn(sub string, operator bool) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(`#sign-in`)),
		chromedp.SetValue(chromedp.CSS(`#sub`), sub),
		js(fmt.Sprintf(`document.getElementById('as-operator').checked = %t`, operator)),
		chromedp.Click(chromedp.CSS(`#sign-in`)),
	)
}

// row is the selector of a rental's row of a kind on the to-do list.
func row(rentalID, kind string) string {
	return fmt.Sprintf(`#todo-rows tr[data-rental=%q][data-kind=%q]`, rentalID, kind)
}

func present(sel string) string { return fmt.Sprintf(`document.querySelector(%q) !== null`, sel) }

// noInjection is true when no markup the test planted became an element or ran.
const noInjection = `document.querySelectorAll('#main img, #notice img').length === 0 && window.__injected === undefined`

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("UPDATE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "..", "..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTheConsoleInABrowser walks an operator through the console: sign in, register
// bikes, watch a requested rental on the to-do list until the sweep gives up on it
// and it leaves, read its timeline, cancel another by click, and see a renter
// refused and planted markup shown as text.
func TestTheConsoleInABrowser(t *testing.T) {
	ctx, watch := browser(t)
	s := startStack(t, nil)

	// A renter's token is refused with a clear "not an operator": the console's
	// check of the token is answered 403.
	watch.expect("GET", "/deadlines?limit=1", http.StatusForbidden)
	run(t, ctx, "a subject that is not an id is refused by the field", chromedp.Navigate(local.ConsoleURL(s.base)),
		chromedp.WaitVisible(chromedp.CSS(`#sign-in`)), chromedp.SetValue(chromedp.CSS(`#sub`), "rita smith"), chromedp.Click(chromedp.CSS(`#sign-in`)),
		waitFor(`document.getElementById('sub').validity.patternMismatch && document.activeElement === document.getElementById('sub')`))
	if sent := watch.sentMatching(func(r string) bool { return strings.HasPrefix(r, "POST /local/tokens") }); len(sent) != 0 {
		t.Fatalf("a subject the field refuses was sent: %v", sent)
	}
	run(t, ctx, "sign in as a renter", signIn("rita", false),
		waitFor(`document.getElementById('notice').textContent.includes('Not an operator')`))
	if evaluate[bool](t, ctx, present(`#signed-in-as`)) || evaluate[string](t, ctx, `getComputedStyle(document.getElementById('nav')).display`) != "none" {
		t.Fatal("a renter's token signed in, or the pages show without a sign-in")
	}

	// An operator signs in and registers two bikes through the Actions page.
	run(t, ctx, "sign in as an operator", signIn("ops", true), chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)),
		waitFor(`document.getElementById('todo-status').textContent.includes('Nothing outstanding')`),
		waitFor(present(`#todo-empty a[href="#/actions"]`)), waitFor(`document.getElementById('notice').textContent === ''`))
	if evaluate[bool](t, ctx, `getComputedStyle(document.querySelector('#todo')).display !== 'none' && document.querySelector('#todo').offsetParent !== null`) {
		t.Error("an empty to-do list shows an empty table")
	}
	run(t, ctx, "the bare rental page says what to do", js(`location.hash = '#/rental'`),
		waitFor(present(`#rental-hint a[href="#/todo"]`)), chromedp.Click(chromedp.CSS(`#rental-lookup button[type=submit]`)),
		waitFor(`document.getElementById('rental-id').validity.valueMissing`))
	emptyIDs(t, ctx, watch)
	for _, bike := range []string{"b1", "b2", "b3"} {
		run(t, ctx, "register "+bike, js(`location.hash = '#/actions'`),
			chromedp.WaitVisible(chromedp.CSS(`#register-bike-id`)),
			chromedp.SetValue(chromedp.CSS(`#register-bike-id`), bike),
			confirmIn(`#register-form button[type=submit]`),
			waitFor(`document.getElementById('register-form-result').textContent === 'Bike `+bike+` is available.'`))
	}

	// By keyboard alone: Enter asks, Escape keeps, Shift+Tab and Enter confirm.
	run(t, ctx, "register b4 by keyboard", js(`location.hash = '#/actions'`),
		chromedp.WaitVisible(chromedp.CSS(`#register-bike-id`)), js(`document.getElementById('register-bike-id').value = ''`),
		chromedp.Focus(chromedp.CSS(`#register-bike-id`)),
		chromedp.KeyEvent("b4\r"), chromedp.WaitVisible(chromedp.CSS(`dialog[open]`)), chromedp.KeyEvent(kb.Escape),
		waitFor(`document.getElementById('register-form-result').textContent === 'Not sent.' && !document.querySelector('dialog')`),
		waitFor(`document.activeElement === document.getElementById('register-bike-id')`),
		chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS(`dialog[open]`)),
		chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent("\r"),
		waitFor(`document.getElementById('register-form-result').textContent === 'Bike b4 is available.'`))

	// A requested rental appears on the to-do list, with its payment's deadline and
	// its process's; the countdown runs out; the sweep gives up on it, and it leaves.
	a := s.request("alice", "b1")
	run(t, ctx, "the rental appears", js(`location.hash = '#/todo'`),
		waitFor(present(row(a, "payment"))), waitFor(present(row(a, "stuck"))),
		waitFor(`document.getElementById('todo-twice').textContent.includes('listed twice')`))
	for kind, want := range map[string]string{"payment": "Payment due", "stuck": "Process check"} {
		if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .badge').textContent`, row(a, kind))); got != want {
			t.Errorf("a %s row reads %q, want %q", kind, got, want)
		}
	}
	timesInUTC(t, ctx, "the to-do list", 3)
	run(t, ctx, "a refresh keeps the keyboard on its row", js(fmt.Sprintf(`document.querySelector('%s a').focus()`, row(a, "payment"))),
		js(`window.__read = document.getElementById('todo-status').textContent`),
		waitFor(`document.getElementById('todo-status').textContent !== window.__read`),
		waitFor(fmt.Sprintf(`document.activeElement === document.querySelector('%s a')`, row(a, "payment"))))
	run(t, ctx, "its payment falls due", waitFor(fmt.Sprintf(`document.querySelector(%q).classList.contains('overdue')`, row(a, "payment"))))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s td.due').textContent`, row(a, "payment"))); !strings.HasPrefix(got, "overdue by ") {
		t.Errorf("countdown of an overdue payment = %q", got)
	}
	screenshot(t, ctx, "todo.png")
	if sum := s.sweep(); acted(sum, deadlinekinds.Payment) != 1 {
		t.Fatalf("the sweep cancelled %d payments, want 1: %+v", acted(sum, deadlinekinds.Payment), sum)
	}
	run(t, ctx, "the rental leaves the list", waitFor(`!(`+present(row(a, "payment"))+`) && !(`+present(row(a, "stuck"))+`)`))

	// Its timeline tells the story: requested, paid for, given up on by the sweep,
	// released, completed.
	run(t, ctx, "the timeline", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, a)),
		waitFor(`document.getElementById('rental-status')?.textContent === 'cancelled'`))
	types := evaluate[[]string](t, ctx, `[...document.querySelectorAll('#timeline li')].map(li => li.dataset.type)`)
	want := []string{"BikeRequested", "PaymentPrepared", rentalpayment.TypeRequested, "PaymentCancelled", "RequestRejected", rentalpayment.TypeCompleted}
	if !inOrder(types, want) {
		t.Errorf("timeline %v, want %v in that order", types, want)
	}
	cause := evaluate[string](t, ctx, `document.querySelector('#timeline li[data-type="PaymentCancelled"] .cause').textContent`)
	if !strings.Contains(cause, "the sweep") {
		t.Errorf("PaymentCancelled's cause = %q, want the sweep", cause)
	}
	rejected := evaluate[string](t, ctx, `document.querySelector('#timeline li[data-type="RequestRejected"] .cause').textContent`)
	if !strings.Contains(rejected, "caused by PaymentCancelled") {
		t.Errorf("RequestRejected's cause = %q, want the PaymentCancelled it reacted to", rejected)
	}

	// The provider's success arrives after the sweep gave up: the money is owed
	// back (the generic provider cannot refund), and the console lists it.
	s.provider(a, generic.TypeSucceeded, "")
	run(t, ctx, "the refund owed", js(`location.hash = '#/backlog'`),
		waitFor(present(fmt.Sprintf(`#refunds-table tr[data-rental=%q]`, a))),
		waitFor(`document.getElementById('stuck-body').textContent === 'No rental is stuck: every process finished in time.'`))
	screenshot(t, ctx, "refunds.png")
	run(t, ctx, "the refund owed on the to-do list", js(`location.hash = '#/todo'`),
		waitFor(present(row(a, "refund"))),
		waitFor(fmt.Sprintf(`document.querySelector(%q).classList.contains('overdue')`, row(a, "refund"))))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .badge').textContent`, row(a, "refund"))); got != "Refund owed" {
		t.Errorf("a refund owed's row reads %q, want its kind as \"Refund owed\"", got)
	}
	run(t, ctx, "the refund on the rental's page", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, a)),
		waitFor(`document.getElementById('refund-state')?.textContent === 'owed'`),
		waitFor(`document.querySelector('#timeline li[data-type="RefundOwed"]') !== null`))
	timesInUTC(t, ctx, "the rental's timeline", 8)
	onlyTheRefundByHand(t, ctx)
	// What the provider's event recorded says so, naming the event.
	for _, typ := range []string{"PaymentSucceededAfterCancellation", "RefundOwed"} {
		got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('#timeline li[data-type=%q] .cause').textContent`, typ))
		if want := "caused by the provider's event " + providerEventID(generic.TypeSucceeded, a) + " (generic)"; got != want {
			t.Errorf("%s's cause = %q, want %q", typ, got, want)
		}
	}
	screenshot(t, ctx, "rental.png")

	// Cancelling by click: offered while the payment is open (and no return then),
	// "cancelled", and then no longer offered; from the Actions page, which offers it
	// for any id, "nothing-to-do".
	b := s.request("bob", "b2")
	run(t, ctx, "cancel by click", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, b)),
		waitFor(`document.getElementById('rental-status')?.textContent === 'awaiting-payment'`))
	if evaluate[bool](t, ctx, present(`#record-return`)) {
		t.Error("a rental awaiting its payment offers to record its return")
	}
	run(t, ctx, "cancel by click, confirmed", confirmIn(`#cancel-payment`),
		waitFor(`document.getElementById('cancel-outcome')?.textContent === 'cancelled'`),
		waitFor(`document.getElementById('rental-status')?.textContent === 'cancelled'`))
	noActionOnAnEndedRental(t, ctx)
	run(t, ctx, "cancel an ended rental's payment from the Actions page", js(`location.hash = '#/actions'`),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-rental-id`)), chromedp.SetValue(chromedp.CSS(`#cancel-rental-id`), b),
		confirmIn(`#cancel-form button[type=submit]`),
		waitFor(`document.querySelector('#cancel-form-result .outcome')?.textContent === 'nothing-to-do'`))

	// A refusal reads as the problem's title and detail, styled as an error: b1 is
	// not rented.
	watch.expect("POST", "/bikes/b1/return", http.StatusConflict)
	run(t, ctx, "a refused return", chromedp.SetValue(chromedp.CSS(`#return-bike-id`), "b1"),
		confirmIn(`#return-form button[type=submit]`), waitFor(present(`#return-form-result .problem .problem-title`)))
	readsAsAProblem(t, ctx, "#return-form-result", "Conflict")
	run(t, ctx, "show the refusal", js(`document.getElementById('return-form').scrollIntoView({ block: 'center' })`))
	screenshot(t, ctx, "problem.png")

	// Markup in a rental id and in an event's field stays text.
	watch.expect("GET", "/rentals/"+strings.ReplaceAll(url.QueryEscape(markup), "+", "%20"), http.StatusBadRequest)
	run(t, ctx, "a crafted rental id", js(fmt.Sprintf(`location.hash = '#/rental/' + encodeURIComponent(%q)`, markup)),
		chromedp.WaitVisible(chromedp.CSS(`#rental-error`)))
	if got := evaluate[string](t, ctx, `document.getElementById('rental-error').textContent`); !strings.Contains(got, markup) {
		t.Errorf("the error about a crafted id says %q, want it to show the id as text", got)
	}
	if !evaluate[bool](t, ctx, noInjection) {
		t.Error("a crafted rental id made an element")
	}
	readsAsAProblem(t, ctx, "#rental-error", "Bad Request")
	if got := evaluate[string](t, ctx, `document.querySelector('#rental-error ul.invalid li')?.textContent`); !strings.HasPrefix(got, "rentalId must match") {
		t.Errorf("the crafted id's problem names %q, want the rentalId and why", got)
	}
	c := s.request("carol", "b3")
	run(t, ctx, "wait for the payment", js(`location.hash = '#/todo'`), waitFor(present(row(c, "payment"))))
	s.provider(c, generic.TypeFailed, markup)
	run(t, ctx, "a crafted event field", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, c)),
		waitFor(`document.querySelector('#timeline li[data-type="PaymentRejected"]') !== null`))
	if got := evaluate[string](t, ctx, `document.querySelector('#timeline li[data-type="PaymentRejected"] .event-data').textContent`); !strings.Contains(got, markup) {
		t.Errorf("PaymentRejected's data reads %q, want the reason as text", got)
	}
	if !evaluate[bool](t, ctx, noInjection) {
		t.Error("a crafted event field made an element")
	}

	// The to-do list at phone width; a paid rental's return due on the to-do list,
	// and its return, recorded by click, taking it off.
	d := s.request("dave", "b4")
	run(t, ctx, "the to-do list at phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), js(`location.hash = '#/todo'`),
		waitFor(present(row(d, "payment"))), waitFor(`document.documentElement.scrollWidth <= 390`))
	screenshot(t, ctx, "todo-phone.png")
	run(t, ctx, "back to the desktop", chromedp.EmulateReset())
	s.provider(d, generic.TypeSucceeded, "")
	run(t, ctx, "the return due on the to-do list", js(`location.hash = '#/todo'`),
		waitFor(present(row(d, "return"))), waitFor(`!(`+present(row(d, "payment"))+`) && !(`+present(row(d, "stuck"))+`)`))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s td.due').textContent`, row(d, "return"))); !strings.HasPrefix(got, "in ") {
		t.Errorf("countdown of a return due in the rental period = %q, want one that runs", got)
	}
	run(t, ctx, "record a return by click", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, d)),
		waitFor(`document.getElementById('rental-status')?.textContent === 'approved'`))
	if evaluate[bool](t, ctx, present(`#cancel-payment`)) {
		t.Error("an approved rental offers to cancel its payment")
	}
	if got, want := evaluate[string](t, ctx, `document.querySelector('#timeline li[data-type="PaymentConfirmed"] .cause').textContent`),
		"caused by the provider's event "+providerEventID(generic.TypeSucceeded, d)+" (generic)"; got != want {
		t.Errorf("PaymentConfirmed's cause = %q, want %q", got, want)
	}
	run(t, ctx, "record a return by click, confirmed",
		confirmIn(`#record-return`),
		waitFor(`document.getElementById('action-result')?.textContent === 'Return recorded: bike b4 is available.'`),
		waitFor(`document.getElementById('rental-status')?.textContent === 'returned'`))
	noActionOnAnEndedRental(t, ctx)
	run(t, ctx, "the return leaves the list", js(`location.hash = '#/todo'`),
		waitFor(`document.getElementById('todo-status').textContent.startsWith('1 outstanding')`),
		waitFor(`!(`+present(row(d, "return"))+`)`))
}

// inOrder reports whether want appears in got in its order (other entries may come
// between).
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// emptyIDs tries every action of the Actions page with an empty or malformed id,
// by click and by Enter: the browser refuses each before a question is asked, and
// nothing is sent.
func emptyIDs(t *testing.T, ctx context.Context, watch *browserLog) {
	t.Helper()
	run(t, ctx, "the Actions page", js(`location.hash = '#/actions'`), chromedp.WaitVisible(chromedp.CSS(`#cancel-rental-id`)))
	for _, c := range []struct{ form, field, value, fill, fillValue, broken string }{
		{"cancel-form", "cancel-rental-id", "", "", "", "valueMissing"},
		{"cancel-form", "cancel-rental-id", "   ", "", "", "patternMismatch"},
		{"cancel-form", "cancel-rental-id", "b1/../x", "", "", "patternMismatch"},
		{"register-form", "register-bike-id", "", "", "", "valueMissing"},
		{"register-form", "register-bike-id", "<b>", "", "", "patternMismatch"},
		{"return-form", "return-bike-id", "", "return-rental-id", "b1_x", "valueMissing"},
		{"return-form", "return-rental-id", "a b", "return-bike-id", "b1", "patternMismatch"},
	} {
		what := fmt.Sprintf("%s with %s %q", c.form, c.field, c.value)
		set := js(fmt.Sprintf(`document.querySelectorAll('main input').forEach((i) => { i.value = '' }), document.getElementById(%q).value = %q`, c.field, c.value))
		if c.fill != "" {
			set = chromedp.Steps(set, js(fmt.Sprintf(`document.getElementById(%q).value = %q`, c.fill, c.fillValue)))
		}
		invalid := fmt.Sprintf(`document.getElementById(%q).validity.%s && document.activeElement === document.getElementById(%q) && !document.querySelector('dialog')`, c.field, c.broken, c.field)
		run(t, ctx, what+", by click", set, chromedp.Click(chromedp.CSS(`#`+c.form+` button[type=submit]`)), waitFor(invalid))
		run(t, ctx, what+", by Enter", set, chromedp.Focus(chromedp.CSS(`#`+c.field)), chromedp.KeyEvent("\r"), waitFor(invalid))
	}
	if sent := watch.sentMatching(func(r string) bool {
		return strings.HasPrefix(r, "PUT /bikes") || strings.HasPrefix(r, "POST /bikes") || strings.Contains(r, "cancel-payment")
	}); len(sent) != 0 {
		t.Fatalf("an action with an empty or malformed id was sent: %v", sent)
	}
	run(t, ctx, "clear the Actions page", js(`document.querySelectorAll('main input').forEach((i) => { i.value = '' })`))
}

// timesInUTC checks that the page writes every time (at least min of them) one way:
// the date, the time to the second, and the zone.
func timesInUTC(t *testing.T, ctx context.Context, page string, min int) {
	t.Helper()
	times := evaluate[[]string](t, ctx, `[...document.querySelectorAll('main time')].map((e) => e.textContent)`)
	if len(times) < min {
		t.Errorf("%s shows %d times, want at least %d", page, len(times), min)
	}
	for _, s := range times {
		if _, err := time.Parse("2006-01-02 15:04:05 MST", s); err != nil || !strings.HasSuffix(s, " UTC") {
			t.Errorf("%s writes a time as %q, want YYYY-MM-DD HH:MM:SS UTC", page, s)
		}
	}
	if got := evaluate[string](t, ctx, `document.querySelector('main').innerText`); strings.Contains(got, " AM") || strings.Contains(got, " PM") {
		t.Errorf("%s writes a time in the browser's 12-hour clock: %s", page, got)
	}
}

// noActionOnAnEndedRental checks that the rental page on view offers nothing for a
// rental that has ended, and says so.
func noActionOnAnEndedRental(t *testing.T, ctx context.Context) {
	t.Helper()
	run(t, ctx, "an ended rental offers nothing", waitFor(`document.getElementById('no-action')?.textContent === 'Nothing to do: the rental has ended.'`))
	if n := evaluate[float64](t, ctx, `document.querySelectorAll('#rental-actions button').length`); n != 0 {
		t.Errorf("an ended rental (%s) offers %v actions", evaluate[string](t, ctx, `document.getElementById('rental-status').textContent`), n)
	}
}

// onlyTheRefundByHand checks that the rental page on view, of an ended rental
// whose refund is owed, offers to record it made by hand, and nothing else.
func onlyTheRefundByHand(t *testing.T, ctx context.Context) {
	t.Helper()
	run(t, ctx, "a refund owed is offered to record", waitFor(present(`#record-refund-by-hand`)))
	if n := evaluate[float64](t, ctx, `document.querySelectorAll('#rental-actions button').length`); n != 1 || evaluate[bool](t, ctx, present(`#no-action`)) {
		t.Errorf("a rental whose refund is owed offers %v actions, want only to record the refund made by hand", n)
	}
}

// readsAsAProblem checks that the refusal shown in sel reads as a problem in words:
// its title, no raw API terms, styled as an error.
func readsAsAProblem(t *testing.T, ctx context.Context, sel, title string) {
	t.Helper()
	text := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).textContent`, sel))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .problem-title').textContent`, sel)); got != title {
		t.Errorf("%s: the problem's title reads %q, want %q (%s)", sel, got, title, text)
	}
	for _, raw := range []string{"invalidParams", "[HTTP", "see "} {
		if strings.Contains(text, raw) {
			t.Errorf("%s reads like the API's raw answer (%q): %s", sel, raw, text)
		}
	}
	if got := evaluate[string](t, ctx, fmt.Sprintf(`getComputedStyle(document.querySelector('%s .problem')).borderLeftColor`, sel)); got != "rgb(180, 35, 24)" {
		t.Errorf("%s: the problem is not styled as an error (border %s)", sel, got)
	}
}
