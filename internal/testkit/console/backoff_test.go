package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/dev/local"
)

// retryAfter is the Retry-After of the 429 the test plays: longer than the to-do
// list's polling interval, so that a console that ignored it would ask sooner.
const retryAfter = 10

// TestTheConsoleWaitsOutA429 signs an operator in, then answers the to-do list's
// next GET /deadlines with a 429 carrying Retry-After (as the edge's per-address
// rule does): the console says so, asks again no sooner than Retry-After allows,
// and on the next answer recovers, saying that the API answers again.
func TestTheConsoleWaitsOutA429(t *testing.T) {
	ctx, _ := browser(t)
	s := startStack(t, nil)
	run(t, ctx, "sign in as an operator", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("ops", true),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)),
		waitFor(`document.getElementById('todo-status').textContent.includes('Nothing outstanding')`))

	// The page's fetch answers the next GET /deadlines itself with a 429, and keeps
	// the time of every GET /deadlines the console makes.
	run(t, ctx, "throttle the next GET /deadlines", js(`(() => {
		window.__calls = [];
		window.__throttle = 1;
		const real = window.fetch;
		window.fetch = (path, init) => {
			if (String(path).startsWith('/deadlines')) {
				window.__calls.push(Date.now());
				if (window.__throttle > 0) {
					window.__throttle--;
					return Promise.resolve(new Response('{"message":"Too Many Requests"}',
						{ status: 429, headers: { 'Content-Type': 'application/json', 'Retry-After': '`+itoa(retryAfter)+`' } }));
				}
			}
			return real(path, init);
		};
	})()`),
		waitFor(`document.getElementById('notice').textContent.includes('429')`))
	if got := evaluate[string](t, ctx, `document.getElementById('notice').textContent`); !contains(got, "waits") {
		t.Errorf("the notice of a 429: %q", got)
	}

	run(t, ctx, "the console asks again and recovers", waitFor(`window.__calls.length >= 2`),
		waitFor(`document.getElementById('notice').textContent === 'The API answers again.'`),
		waitFor(`document.getElementById('todo-status').textContent.includes('Nothing outstanding')`))
	if gap := evaluate[float64](t, ctx, `window.__calls[1] - window.__calls[0]`); gap < retryAfter*1000 {
		t.Errorf("the console asked again %.0f ms after a 429 with Retry-After: %d", gap, retryAfter)
	}
	if n := evaluate[float64](t, ctx, `document.querySelectorAll('#notice.error').length`); n != 0 {
		t.Errorf("the notice still shows an error after the recovery")
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
