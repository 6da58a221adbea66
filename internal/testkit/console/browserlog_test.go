package console_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// reportViolations runs in every document before its own scripts: it writes each
// Content-Security-Policy violation the page sees (securitypolicyviolation, which
// the console's policy has no report-uri for) to the console as an error, so that
// the browser log holds it whatever Chromium itself logs about it.
const reportViolations = `document.addEventListener('securitypolicyviolation', (e) =>
  console.error('securitypolicyviolation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') +
    ' at ' + e.sourceFile + ':' + e.lineNumber), true);`

// browserLog is everything the browser reported as going wrong in the console's
// tab: calls of console.error, uncaught exceptions and unhandled rejections,
// entries of the browser log at error level (a pattern that does not compile, a
// policy that refused something), and requests that failed or were answered with
// a status of 400 or more. A request the test makes fail on purpose is expected by
// its method, path and status, once.
type browserLog struct {
	mu       sync.Mutex
	requests map[network.RequestID]string // "GET /path?query"
	sent     []string
	failed   []string
	failedBy map[network.RequestID]bool
	errors   []string
	expected map[string]int
}

// watchBrowser collects what goes wrong in the tab of ctx from now on, and fails t
// at its end with every error that was not expected.
func watchBrowser(t *testing.T, ctx context.Context) *browserLog {
	t.Helper()
	l := &browserLog{requests: map[network.RequestID]string{}, failedBy: map[network.RequestID]bool{}, expected: map[string]int{}}
	if err := chromedp.Listen(ctx, l.event); err != nil {
		t.Fatalf("listen to the browser: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: reportViolations}); err != nil {
		t.Fatalf("watch for policy violations: %v", err)
	}
	t.Cleanup(func() { l.check(t, ctx) })
	return l
}

// expect allows one request of method to path (its query included, the origin
// left out) to be answered with status: the test makes it fail on purpose.
func (l *browserLog) expect(method, path string, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expected[fmt.Sprintf("%s %s %d", method, path, status)]++
}

// sentMatching returns the requests the tab sent so far ("METHOD /path?query")
// that match.
func (l *browserLog) sentMatching(match func(string) bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.sent {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// event is called by chromedp for every event of the tab, on its reading
// goroutine: it only records.
func (l *browserLog) event(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		l.requests[e.RequestID] = e.Request.Method + " " + relative(e.Request.URL)
		l.sent = append(l.sent, l.requests[e.RequestID])
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 {
			l.failedBy[e.RequestID] = true
			l.failed = append(l.failed, fmt.Sprintf("%s %d", l.request(e.RequestID, e.Response.URL), e.Response.Status))
		}
	case *network.EventLoadingFailed:
		// A request the page gave up itself (it navigated away: a sign-out to the
		// provider) is cancelled, not failed, and nobody sees it; anything else
		// that did not load (refused by the policy, blocked, no answer) is a failure.
		if !l.failedBy[e.RequestID] && !(e.Canceled && e.BlockedReason == "") {
			l.failedBy[e.RequestID] = true
			l.errors = append(l.errors, fmt.Sprintf("request %s failed: %s %s", l.request(e.RequestID, ""), e.ErrorText, e.BlockedReason))
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			l.errors = append(l.errors, "console."+string(e.Type)+": "+args(e.Args))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		l.errors = append(l.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, text))
	case *log.EventEntryAdded:
		en := e.Entry
		// A failed request's own entry ("Failed to load resource: …") is the
		// request's failure, which is judged above.
		if en.Level == log.EntryLevelError && !(en.NetworkRequestID != "" && l.failedBy[en.NetworkRequestID]) {
			l.errors = append(l.errors, fmt.Sprintf("browser log (%s) %s: %s", en.Source, relative(en.URL), en.Text))
		}
	}
}

func (l *browserLog) request(id network.RequestID, fallback string) string {
	if r, ok := l.requests[id]; ok {
		return r
	}
	return "? " + relative(fallback)
}

// relative is a URL without its scheme and host, so that expectations need not
// name the stack's port.
func relative(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.RequestURI()
}

func args(as []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		switch {
		case len(a.Value) > 0:
			parts = append(parts, strings.Trim(string(a.Value), `"`))
		default:
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

// check fails t with every error the tab reported and every failed request that
// was not expected, and with every expectation that did not happen. A round trip
// to the tab first makes sure every event it sent before has been recorded.
func (l *browserLog) check(t *testing.T, ctx context.Context) {
	t.Helper()
	if ctx.Err() == nil {
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`true`))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failed {
		if l.expected[f] > 0 {
			l.expected[f]--
			continue
		}
		t.Errorf("the browser saw a request fail that the test did not cause: %s", f)
	}
	for _, e := range l.errors {
		t.Errorf("the browser logged an error: %s", e)
	}
	for f, n := range l.expected {
		if n > 0 {
			t.Errorf("the test expected the request %s to fail %d more time(s): it did not", f, n)
		}
	}
}
