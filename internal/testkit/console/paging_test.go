package console_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/dev/local"
)

// TestTheToDoListPages: with a page of 2 rows (#/todo/2), the to-do list shows
// its 6 rows (3 rentals' payment and process check) 2 at a time, soonest due
// first, each page starting after the last row of the one before (the API's
// nextCursor): Next reads the rest in the API's order, each once, the last page
// offers no Next, Previous and First go back, and the status says whether more
// follow. A page size that is not one, markup included, shows the usual page.
func TestTheToDoListPages(t *testing.T) {
	ctx, watch := browser(t)
	s := startStack(t, nil)
	op, err := s.tokens.Operator(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	for i, bike := range []string{"b1", "b2", "b3"} {
		if code := s.send("PUT", "/bikes/"+bike, op, nil, nil, nil); code != http.StatusCreated && code != http.StatusOK {
			t.Fatalf("register %s: %d", bike, code)
		}
		s.request([]string{"rita", "sam", "tom"}[i], bike)
	}
	// The whole list, as the API lists it on one page, once the projector has
	// every row.
	type row struct{ Kind, RentalID string }
	var whole []row
	for deadline := time.Now().Add(30 * time.Second); len(whole) != 6; time.Sleep(50 * time.Millisecond) {
		var list struct{ Deadlines []row }
		if code := s.send("GET", "/deadlines?limit=1000", op, nil, nil, &list); code != http.StatusOK {
			t.Fatalf("GET /deadlines: %d", code)
		}
		whole = list.Deadlines
		if time.Now().After(deadline) {
			t.Fatalf("the to-do list holds %v, want 6 rows", whole)
		}
	}

	shown := func() []row {
		var out []row
		for _, r := range evaluate[[][]string](t, ctx, `[...document.querySelectorAll('#todo-rows tr')].map((tr) => [tr.dataset.kind, tr.dataset.rental])`) {
			out = append(out, row{r[0], r[1]})
		}
		return out
	}
	run(t, ctx, "the first page of 2", chromedp.Navigate(local.ConsoleURL(s.base)), signIn("ops", true),
		chromedp.WaitVisible(chromedp.CSS(`#signed-in-as`)), js(`location.hash = '#/todo/2'`),
		waitFor(`document.querySelectorAll('#todo-rows tr').length === 2`), waitFor(present(`#todo-next`)))
	if got := evaluate[string](t, ctx, `document.getElementById('todo-status').textContent`); !strings.HasPrefix(got, "2 outstanding (the first 2; more follow)") {
		t.Errorf("the first page's status reads %q", got)
	}
	if evaluate[bool](t, ctx, present(`#todo-first`)) || evaluate[bool](t, ctx, present(`#todo-previous`)) {
		t.Error("the first page offers to go back")
	}
	got := shown()
	for page := 2; page <= 3; page++ {
		run(t, ctx, fmt.Sprintf("page %d", page), js(`window.__page = document.getElementById('todo-status').textContent`), chromedp.Click(chromedp.CSS(`#todo-next`)),
			waitFor(fmt.Sprintf(`document.getElementById('todo-status').textContent.startsWith('Page %d: 2 more outstanding')`, page)),
			waitFor(`document.activeElement === document.querySelector('#todo-rows tr a')`))
		got = append(got, shown()...)
	}
	if !slices.Equal(got, whole) {
		t.Errorf("the pages show %v, want the API's list %v", got, whole)
	}
	if evaluate[bool](t, ctx, present(`#todo-next`)) || !evaluate[bool](t, ctx, present(`#todo-previous`)) || !evaluate[bool](t, ctx, present(`#todo-first`)) {
		t.Error("the last page offers Next, or not Previous and First")
	}
	if got := evaluate[string](t, ctx, `document.getElementById('todo-status').textContent`); strings.Contains(got, "more follow") {
		t.Errorf("the last page's status reads %q", got)
	}
	// A refresh reads the page on view again, from where it starts.
	run(t, ctx, "a refresh keeps the page", js(`window.__read = document.getElementById('todo-status').textContent`),
		waitFor(`document.getElementById('todo-status').textContent !== window.__read`))
	if page := shown(); !slices.Equal(page, whole[4:]) {
		t.Errorf("the third page, refreshed, shows %v, want %v", page, whole[4:])
	}
	run(t, ctx, "back a page", chromedp.Click(chromedp.CSS(`#todo-previous`)),
		waitFor(`document.getElementById('todo-status').textContent.startsWith('Page 2: 2 more outstanding; more follow')`))
	if page := shown(); !slices.Equal(page, whole[2:4]) {
		t.Errorf("the second page shows %v, want %v", page, whole[2:4])
	}
	run(t, ctx, "back to the first page", chromedp.Click(chromedp.CSS(`#todo-first`)),
		waitFor(`document.getElementById('todo-status').textContent.startsWith('2 outstanding')`))
	if page := shown(); !slices.Equal(page, whole[:2]) {
		t.Errorf("the first page shows %v, want %v", page, whole[:2])
	}
	for _, size := range []string{"0", "1001", "x", encodeHash(markup)} {
		run(t, ctx, "a page size of "+size, js(`location.hash = '#/todo/`+size+`'`),
			waitFor(`document.querySelectorAll('#todo-rows tr').length === 6`), waitFor(`!document.getElementById('todo-status').textContent.includes('more follow')`))
		if !evaluate[bool](t, ctx, noInjection) {
			t.Errorf("a page size of %s made an element", size)
		}
	}
	if sent := watch.sentMatching(func(r string) bool { return strings.Contains(r, "/deadlines?") && strings.Contains(r, "cursor=") }); len(sent) < 2 {
		t.Errorf("the pages after the first were read by cursor %d times: %v", len(sent), sent)
	}
}

// encodeHash writes s as a fragment's segment.
func encodeHash(s string) string {
	return strings.NewReplacer("%", "%25", "<", "%3C", ">", "%3E", `"`, "%22", " ", "%20", "=", "%3D", "'", "%27").Replace(s)
}
