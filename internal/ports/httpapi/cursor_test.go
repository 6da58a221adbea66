package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// listed is one row of a GET /deadlines answer, as a client tells rows apart.
type listed struct{ Kind, RentalID, DueAt string }

// page is a GET /deadlines answer.
type page struct {
	Deadlines  []listed
	Count      int
	NextCursor string
}

func (h *harness) deadlinesPage(params map[string]string) (page, reply) {
	h.t.Helper()
	h.query = params
	defer func() { h.query = nil }()
	r := h.do(http.MethodGet, "/deadlines", "", nil)
	var p page
	if r.status == http.StatusOK {
		if err := json.Unmarshal([]byte(r.raw), &p); err != nil {
			h.t.Fatal(err)
		}
	}
	return p, r
}

// busyToDo fills a to-do list of 2 shards with n rentals' payment and stuck rows,
// the stuck of every third due in the same millisecond as its payment, half of
// them overdue at now.
func busyToDo(t *testing.T, now time.Time, n int) *toDo {
	d := newToDo(t, 2)
	for i := range n {
		id := rental.NewRentalID(fmt.Sprintf("b%d", i), strings.Repeat("A", rental.RentalSuffixLength))
		due := now.Add(time.Duration(i-n/2) * time.Second)
		d.open("payment", id, due)
		if i%3 == 0 {
			d.open("stuck", id, due)
		} else {
			d.open("stuck", id, due.Add(time.Duration(i)*time.Millisecond))
		}
	}
	return d
}

// TestDeadlinesPageThroughTheToDoList: following nextCursor from the first page
// lists every row of the query once, in the order of one page that holds them all,
// rows due in the same millisecond included, whatever the limit; each page reads
// at most about its limit from each shard of each kind listed, never the list.
func TestDeadlinesPageThroughTheToDoList(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.now = h.now.Truncate(time.Millisecond)
	const rentals = 60
	d := busyToDo(t, h.now, rentals)
	h.withToDo(d)
	for _, query := range []map[string]string{{}, {"overdue": "true"}, {"overdue": "false"}, {"kind": "stuck"}, {"kind": "payment", "overdue": "true"}} {
		whole, _ := h.deadlinesPage(with(query, map[string]string{"limit": "1000"}))
		if whole.NextCursor != "" || len(whole.Deadlines) == 0 {
			t.Fatalf("%v: one page of %d rows, next %q", query, len(whole.Deadlines), whole.NextCursor)
		}
		for _, limit := range []int{1, 3, 7} {
			var got []listed
			cursor, pages := "", 0
			for {
				params := with(query, map[string]string{"limit": strconv.Itoa(limit)})
				if cursor != "" {
					params["cursor"] = cursor
				}
				calls, read := d.reads()
				p, r := h.deadlinesPage(params)
				if r.status != http.StatusOK {
					t.Fatalf("%v: %d %s", params, r.status, r.raw)
				}
				afterCalls, afterRead := d.reads()
				// A read of one shard of a kind (2 shards of the 5 kinds listed
				// for every kind) reads, from the cursor's row (which it
				// skips) or the start, a page of the limit and the page after
				// its limit-th row, for the rows due in its millisecond
				// (deadlines.List); rows due in the same millisecond here are
				// of different kinds.
				if max := (afterCalls - calls) * int64(2*limit+1); afterRead-read > max {
					t.Errorf("%v: a page of %d read %d items in %d reads, want at most %d", params, limit, afterRead-read, afterCalls-calls, max)
				}
				if afterCalls-calls > 10 {
					t.Errorf("%v: %d reads, want one per shard of each kind", params, afterCalls-calls)
				}
				got = append(got, p.Deadlines...)
				if pages++; p.NextCursor == "" || pages > 2*rentals {
					break
				}
				if len(p.Deadlines) != limit {
					t.Errorf("%v: a page of %d rows, not the last, has %d", params, limit, len(p.Deadlines))
				}
				cursor = p.NextCursor
			}
			if !slices.Equal(got, whole.Deadlines) {
				t.Errorf("%v by %d: %d rows in %d pages\n%v\nwant the %d of one page\n%v", query, limit, len(got), pages, got, len(whole.Deadlines), whole.Deadlines)
			}
		}
	}
}

// TestADeadlinesCursorMovesOnlyWhereTheListStarts: a cursor forged, altered, or
// replayed after the list changed changes nothing but where the list starts: the
// answer is 200 with a run of the rows the query lists, from where the cursor
// says (to the end of the list, or limit rows), or 400 invalid-request naming the
// cursor, as is another query's cursor (another kind or overdue) and one that is
// no cursor at all (GET /rentals's, markup, too long). Nothing a cursor holds is
// repeated in an answer.
func TestADeadlinesCursorMovesOnlyWhereTheListStarts(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.now = h.now.Truncate(time.Millisecond)
	d := busyToDo(t, h.now, 12)
	h.withToDo(d)
	queries := []map[string]string{{"limit": "4"}, {"limit": "4", "kind": "stuck"}, {"limit": "4", "overdue": "true"}, {"limit": "4", "kind": "payment", "overdue": "false"}}
	for _, query := range queries {
		whole, _ := h.deadlinesPage(with(query, map[string]string{"limit": "1000"}))
		first, _ := h.deadlinesPage(query)
		if first.NextCursor == "" {
			t.Fatalf("%v: no second page", query)
		}
		answered := map[int]int{} // by status
		checkWindow := func(what, cursor string) {
			t.Helper()
			p, r := h.deadlinesPage(with(query, map[string]string{"cursor": cursor}))
			answered[r.status]++
			for _, planted := range []string{"<img", `\u003cimg`, "onerror"} {
				if strings.Contains(r.raw, planted) {
					t.Errorf("%v with %s: the answer repeats the cursor's markup: %s", query, what, r.raw)
				}
			}
			switch r.status {
			case http.StatusBadRequest:
				if !strings.Contains(r.raw, `"name":"cursor"`) || !strings.HasSuffix(r.str("type"), "#problem-invalid-request") {
					t.Errorf("%v with %s: %s, want invalid-request naming the cursor", query, what, r.raw)
				}
			case http.StatusOK:
				if !window(p.Deadlines, whole.Deadlines, 4) {
					t.Errorf("%v with %s: %v, not a run of the query's rows %v", query, what, p.Deadlines, whole.Deadlines)
				}
			default:
				t.Errorf("%v with %s: %d %s", query, what, r.status, r.raw)
			}
		}
		checkWindow("its own cursor", first.NextCursor)
		for i, forged := range forgeries(t, first.NextCursor) {
			checkWindow(fmt.Sprintf("forgery %d %q", i, forged), forged)
		}
		// Some forgeries move the start, and some are refused: both ways were
		// checked.
		if answered[http.StatusOK] < 2 || answered[http.StatusBadRequest] == 0 {
			t.Errorf("%v: forgeries answered %v, want some of them 200 and some 400", query, answered)
		}
		// Another query's cursor is refused; a query's own, replayed, goes on.
		for _, other := range queries {
			if sameQuery(other, query) {
				continue
			}
			p, _ := h.deadlinesPage(other)
			if _, r := h.deadlinesPage(with(query, map[string]string{"cursor": p.NextCursor})); r.status != http.StatusBadRequest || !strings.Contains(r.raw, `"name":"cursor"`) {
				t.Errorf("%v with the cursor of %v: %d %s, want 400 naming the cursor", query, other, r.status, r.raw)
			}
		}
		again, _ := h.deadlinesPage(with(query, map[string]string{"cursor": first.NextCursor}))
		if want := whole.Deadlines[4:min(8, len(whole.Deadlines))]; !slices.Equal(again.Deadlines, want) {
			t.Errorf("%v: the second page %v, want %v", query, again.Deadlines, want)
		}
	}
	// The list changes: the second page's rows settle; the first page's cursor,
	// replayed, starts after the same row.
	query := queries[1]
	first, _ := h.deadlinesPage(query)
	second, _ := h.deadlinesPage(with(query, map[string]string{"cursor": first.NextCursor}))
	for _, row := range second.Deadlines {
		d.settle(row.Kind, row.RentalID)
	}
	whole, _ := h.deadlinesPage(with(query, map[string]string{"limit": "1000"}))
	replayed, _ := h.deadlinesPage(with(query, map[string]string{"cursor": first.NextCursor}))
	if i := slices.Index(whole.Deadlines, first.Deadlines[3]); i < 0 || !slices.Equal(replayed.Deadlines, whole.Deadlines[i+1:min(i+5, len(whole.Deadlines))]) {
		t.Errorf("a replayed cursor: %v, want the 4 rows after %v in %v", replayed.Deadlines, first.Deadlines[3], whole.Deadlines)
	}
}

// window reports whether got is a run of the rows of all: limit of them, or
// fewer up to its end.
func window(got, all []listed, limit int) bool {
	if len(got) == 0 {
		return true // from after the last row
	}
	i := slices.Index(all, got[0])
	if i < 0 || i+len(got) > len(all) || !slices.Equal(got, all[i:i+len(got)]) {
		return false
	}
	return len(got) == limit || i+len(got) == len(all)
}

func sameQuery(a, b map[string]string) bool {
	return a["kind"] == b["kind"] && a["overdue"] == b["overdue"]
}

// forgeries returns cursors made from cursor as an attacker would: each member of
// the JSON it decodes to (if it does) set to other values, markup among them,
// members dropped and added, and cursors that are not base64 or not JSON.
func forgeries(t *testing.T, cursor string) []string {
	t.Helper()
	enc := base64.RawURLEncoding
	out := []string{"<img src=x onerror=alert(1)>", enc.EncodeToString([]byte("<img src=x onerror=alert(1)>")), cursor + "A", cursor[1:],
		strings.ToUpper(cursor), enc.EncodeToString([]byte("v2")), enc.EncodeToString([]byte("{}")), enc.EncodeToString([]byte("null")),
		base64.StdEncoding.EncodeToString([]byte(`{"a":"b"}`)) + "==", "%3Cimg%3E", "../../", " " + cursor}
	raw, err := enc.DecodeString(cursor)
	if err != nil {
		return out
	}
	var members map[string]any
	if json.Unmarshal(raw, &members) != nil {
		return append(out, enc.EncodeToString(append(raw, '}')))
	}
	values := []any{"", "<img src=x onerror=alert(1)>", "payment", "stuck", "return", "refund", "cancellation", "redelivery",
		"b1_AAAAAAAAAAAAAAAAAAAAAA", "rp_b1_AAAAAAAAAAAAAAAAAAAAAA/x", 0, -1, 1e15, 9.9e300, true, false, nil, []any{}, map[string]any{}}
	for name := range members {
		for _, v := range values {
			forged := clone(members)
			forged[name] = v
			out = append(out, encode(t, forged))
		}
		dropped := clone(members)
		delete(dropped, name)
		out = append(out, encode(t, dropped))
	}
	added := clone(members)
	added["<img src=x onerror=alert(1)>"] = "x"
	return append(out, encode(t, added))
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func encode(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
