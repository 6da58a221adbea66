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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/deadline"
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
		wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvPendingTable: emulatortest.TableName(t, "pending"),
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
func (s *stack) sweep() deadline.Summary {
	s.t.Helper()
	var sum deadline.Summary
	input := map[string]string{}
	if err := local.Call(context.Background(), s.up.Stack.Functions.Sweep, input, &sum); err != nil {
		s.t.Fatal(err)
	}
	return sum
}

// browser starts one headless Chromium for the test, or skips the test when there
// is none (fails under CI=true: make chromium installs it).
func browser(t *testing.T, more ...chromedp.ExecAllocatorOption) context.Context {
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
	return ctx
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
	ctx := browser(t)
	s := startStack(t, nil)

	// A renter's token is refused with a clear "not an operator".
	run(t, ctx, "sign in as a renter", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("rita", false),
		waitFor(`document.getElementById('notice').textContent.includes('Not an operator')`))
	if evaluate[bool](t, ctx, present(`#signed-in-as`)) || evaluate[string](t, ctx, `getComputedStyle(document.getElementById('nav')).display`) != "none" {
		t.Fatal("a renter's token signed in, or the pages show without a sign-in")
	}

	// An operator signs in and registers two bikes through the Actions page.
	run(t, ctx, "sign in as an operator", signIn("ops", true), chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)),
		waitFor(`document.getElementById('todo-status').textContent.includes('Nothing outstanding')`))
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
		waitFor(present(row(a, "payment"))), waitFor(present(row(a, "stuck"))))
	run(t, ctx, "a refresh keeps the keyboard on its row", js(fmt.Sprintf(`document.querySelector('%s a').focus()`, row(a, "payment"))),
		js(`window.__read = document.getElementById('todo-status').textContent`),
		waitFor(`document.getElementById('todo-status').textContent !== window.__read`),
		waitFor(fmt.Sprintf(`document.activeElement === document.querySelector('%s a')`, row(a, "payment"))))
	run(t, ctx, "its payment falls due", waitFor(fmt.Sprintf(`document.querySelector(%q).classList.contains('overdue')`, row(a, "payment"))))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s td.due').textContent`, row(a, "payment"))); !strings.HasPrefix(got, "overdue by ") {
		t.Errorf("countdown of an overdue payment = %q", got)
	}
	screenshot(t, ctx, "todo.png")
	if sum := s.sweep(); sum.Cancelled != 1 {
		t.Fatalf("the sweep cancelled %d payments, want 1: %+v", sum.Cancelled, sum)
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
		waitFor(`document.getElementById('stuck-body').textContent === 'No rental is stuck.'`))
	screenshot(t, ctx, "refunds.png")
	run(t, ctx, "the refund owed on the to-do list", js(`location.hash = '#/todo'`),
		waitFor(present(row(a, "refund"))),
		waitFor(fmt.Sprintf(`document.querySelector(%q).classList.contains('overdue')`, row(a, "refund"))))
	if got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('%s .badge').textContent`, row(a, "refund"))); got != "refund owed" {
		t.Errorf("a refund owed's row reads %q, want its kind as \"refund owed\"", got)
	}
	run(t, ctx, "the refund on the rental's page", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, a)),
		waitFor(`document.getElementById('refund-state')?.textContent === 'owed'`),
		waitFor(`document.querySelector('#timeline li[data-type="RefundOwed"]') !== null`))
	// What the provider's event recorded says so, naming the event.
	for _, typ := range []string{"PaymentSucceededAfterCancellation", "RefundOwed"} {
		got := evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector('#timeline li[data-type=%q] .cause').textContent`, typ))
		if want := "caused by the provider's event " + providerEventID(generic.TypeSucceeded, a) + " (generic)"; got != want {
			t.Errorf("%s's cause = %q, want %q", typ, got, want)
		}
	}
	screenshot(t, ctx, "rental.png")

	// Cancelling by click: "cancelled", and once the process has ended, "nothing-to-do".
	b := s.request("bob", "b2")
	run(t, ctx, "cancel by click", js(fmt.Sprintf(`location.hash = '#/rental/%s'`, b)),
		waitFor(`document.getElementById('rental-status')?.textContent === 'awaiting-payment'`),
		confirmIn(`#cancel-payment`),
		waitFor(`document.getElementById('cancel-outcome')?.textContent === 'cancelled'`),
		waitFor(`document.getElementById('rental-status')?.textContent === 'cancelled'`),
		confirmIn(`#cancel-payment`),
		waitFor(`document.getElementById('cancel-outcome')?.textContent === 'nothing-to-do'`))

	// Markup in a rental id and in an event's field stays text.
	run(t, ctx, "a crafted rental id", js(fmt.Sprintf(`location.hash = '#/rental/' + encodeURIComponent(%q)`, markup)),
		chromedp.WaitVisible(chromedp.CSS(`#rental-error`)))
	if got := evaluate[string](t, ctx, `document.getElementById('rental-error').textContent`); !strings.Contains(got, markup) {
		t.Errorf("the error about a crafted id says %q, want it to show the id as text", got)
	}
	if !evaluate[bool](t, ctx, noInjection) {
		t.Error("a crafted rental id made an element")
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
	if got, want := evaluate[string](t, ctx, `document.querySelector('#timeline li[data-type="PaymentConfirmed"] .cause').textContent`),
		"caused by the provider's event "+providerEventID(generic.TypeSucceeded, d)+" (generic)"; got != want {
		t.Errorf("PaymentConfirmed's cause = %q, want %q", got, want)
	}
	run(t, ctx, "record a return by click, confirmed",
		confirmIn(`#record-return`),
		waitFor(`document.getElementById('action-result')?.textContent === 'Return recorded: bike b4 is available.'`),
		waitFor(`document.getElementById('rental-status')?.textContent === 'returned'`))
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
