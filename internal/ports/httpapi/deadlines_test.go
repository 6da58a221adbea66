package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// withToDo sets the harness's API to read the to-do list d.
func (h *harness) withToDo(d *toDo) {
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(h.t), Deadlines: d.listing(), Now: func() time.Time { return h.now }})
}

// deadlinesRequest sends GET /deadlines with params as the operator.
func (h *harness) deadlinesRequest(params map[string]string) events.APIGatewayV2HTTPResponse {
	resp, _ := h.api.Handle(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: "/deadlines", QueryStringParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "q", Authorizer: claims("ops", true), HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
	return resp
}

// TestDeadlines: GET /deadlines lists the rows of every kind of the to-do list
// with their kind, rental, due time, age (since their opening: their kind's After
// before their due time) and whether they are overdue, soonest due first; kind,
// overdue and limit choose the rows, and each malformed one is refused with 400
// and an invalid param naming it, reading nothing.
func TestDeadlines(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusNotImplemented) // no to-do list configured
	h.now = h.now.Truncate(time.Millisecond)
	d := newToDo(t, 2)
	const returned, paying, flagged = "b1_AAAAAAAAAAAAAAAAAAAAAA", "b2_AAAAAAAAAAAAAAAAAAAAAA", "b3_AAAAAAAAAAAAAAAAAAAAAA"
	d.open("return", returned, h.now.Add(-time.Hour))
	d.open("payment", paying, h.now.Add(14*time.Minute))
	d.open("overdue", flagged, h.now.Add(-2*time.Hour))
	h.withToDo(d)
	r := h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK)
	rows := r.body["deadlines"].([]any)
	if len(rows) != 3 || r.body["count"] != float64(3) || r.body["limit"] != float64(httpapi.DefaultPendingLimit) || r.body["nextCursor"] != nil {
		t.Fatalf("deadlines: %s", r.raw)
	}
	period := rental.DefaultPeriod.Seconds()
	for i, want := range []struct {
		kind, rental string
		age          float64
		overdue      bool
	}{
		{"return", flagged, 2*3600 + period, true}, // a flagged overdue return lists as a return
		{"return", returned, 3600 + period, true},
		{"payment", paying, 60, false},
	} {
		row := rows[i].(map[string]any)
		if row["kind"] != want.kind || row["rentalId"] != want.rental || row["ageSeconds"] != want.age || row["overdue"] != want.overdue {
			t.Errorf("row %d: %v, want %+v", i, row, want)
		}
	}
	if row := rows[2].(map[string]any); row["dueAt"] != h.now.Add(14*time.Minute).UTC().Format(time.RFC3339Nano) {
		t.Errorf("payment due at %v, want %v", row["dueAt"], h.now.Add(14*time.Minute).UTC())
	}
	for _, c := range []struct {
		params map[string]string
		want   []string
	}{
		{map[string]string{"kind": "return", "overdue": "true", "limit": "1"}, []string{flagged}},
		{map[string]string{"kind": "return", "overdue": "false"}, nil},
		{map[string]string{"overdue": "false"}, []string{paying}},
		{map[string]string{"kind": "payment"}, []string{paying}},
		{map[string]string{"limit": "2"}, []string{flagged, returned}},
	} {
		h.query = c.params
		got := rentalsOf(h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK))
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%v: %v, want %v", c.params, got, c.want)
		}
	}
	h.query = nil
	calls, _ := d.reads()
	for name, params := range map[string]map[string]string{
		"kind":    {"kind": "bikes"},
		"overdue": {"overdue": "yes"},
		"limit":   {"limit": "1001"},
		"cursor":  {"cursor": ""},
	} {
		resp := h.deadlinesRequest(params)
		if resp.StatusCode != 400 || resp.Headers["Content-Type"] != "application/problem+json" || !strings.Contains(resp.Body, `"name":"`+name+`"`) {
			t.Errorf("%v: %d %v %s, want 400 problem+json naming %s", params, resp.StatusCode, resp.Headers, resp.Body, name)
		}
	}
	for _, bad := range []map[string]string{{"limit": "0"}, {"limit": "ten"}, {"overdue": "True"}, {"kind": ""}, {"kind": "<b>stuck</b>"},
		{"kind": "cancellation"}, {"kind": "redelivery"}, {"kind": "overdue"}, {"cursor": strings.Repeat("A", httpapi.MaxCursorLength+1)}} {
		resp := h.deadlinesRequest(bad)
		if resp.StatusCode != 400 || strings.Contains(resp.Body, "<b>") {
			t.Errorf("%v: %d %s, want 400 that does not repeat the markup", bad, resp.StatusCode, resp.Body)
		}
	}
	if after, _ := d.reads(); after != calls {
		t.Errorf("a refused request read the to-do list %d times", after-calls)
	}
}

// rentalsOf returns the rentals of a GET /deadlines answer, in its order.
func rentalsOf(r reply) []string {
	var out []string
	for _, row := range r.body["deadlines"].([]any) {
		out = append(out, row.(map[string]any)["rentalId"].(string))
	}
	return out
}

// TestStuckRentalsAndRefundsOwed reads GET /processes/stuck, the stuck kind's
// overdue rows, each requested its kind's After before it fell due, and GET
// /refunds/owed, the refund kind's rows, oldest first, up to the limit asked for;
// a malformed limit is refused reading nothing, and without a to-do list both
// answer 501.
func TestStuckRentalsAndRefundsOwed(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	for _, path := range []string{"/processes/stuck", "/refunds/owed"} {
		h.expect(http.MethodGet, path, "", nil, http.StatusNotImplemented)
	}
	h.now = h.now.Truncate(time.Millisecond)
	d := newToDo(t, 2)
	const stuck, waiting, owed, owedToo = "b3_AAAAAAAAAAAAAAAAAAAAAA", "b5_AAAAAAAAAAAAAAAAAAAAAA", "b4_AAAAAAAAAAAAAAAAAAAAAA", "b6_AAAAAAAAAAAAAAAAAAAAAA"
	d.open("stuck", stuck, h.now.Add(-5*time.Minute))
	d.open("stuck", waiting, h.now.Add(5*time.Minute)) // not stuck yet
	d.open("refund", owedToo, h.now.Add(-time.Minute))
	d.open("refund", owed, h.now.Add(-time.Hour))
	h.withToDo(d)

	r := h.expect(http.MethodGet, "/processes/stuck", "", nil, http.StatusOK)
	rentals := r.body["rentals"].([]any)
	if len(rentals) != 1 || r.body["count"] != float64(1) || r.body["limit"] != float64(httpapi.DefaultPendingLimit) {
		t.Fatalf("stuck: %s", r.raw)
	}
	after := 25 * time.Minute // the default payment timeout and stuck grace
	if s := rentals[0].(map[string]any); s["rentalId"] != stuck || s["ageSeconds"] != (after+5*time.Minute).Seconds() ||
		s["requestedAt"] != h.now.Add(-after-5*time.Minute).UTC().Format(time.RFC3339Nano) || s["stuckSince"] != h.now.Add(-5*time.Minute).UTC().Format(time.RFC3339Nano) {
		t.Errorf("stuck: %s", r.raw)
	}

	h.query = map[string]string{"limit": "1"}
	r = h.expect(http.MethodGet, "/refunds/owed", "", nil, http.StatusOK)
	refunds := r.body["refunds"].([]any)
	if len(refunds) != 1 || r.body["limit"] != float64(1) {
		t.Fatalf("refunds: %s", r.raw)
	}
	if o := refunds[0].(map[string]any); o["rentalId"] != owed || o["paymentReference"] != "rp_"+owed ||
		o["ageSeconds"] != float64(3600) || o["owedSince"] != h.now.Add(-time.Hour).UTC().Format(time.RFC3339Nano) {
		t.Errorf("refunds: %s", r.raw)
	}
	h.query = nil
	if r := h.expect(http.MethodGet, "/refunds/owed", "", nil, http.StatusOK); r.body["count"] != float64(2) {
		t.Errorf("refunds: %s, want both", r.raw)
	}

	calls, _ := d.reads()
	for _, path := range []string{"/processes/stuck", "/refunds/owed"} {
		for _, limit := range []string{"0", "1001", "ten"} {
			h.query = map[string]string{"limit": limit}
			h.expect(http.MethodGet, path, "", nil, http.StatusBadRequest)
		}
	}
	h.query = nil
	for _, path := range []string{"/processes/stuck", "/refunds/owed"} {
		h.expect(http.MethodGet, path, "", as("alice"), http.StatusForbidden)
	}
	if after, _ := d.reads(); after != calls {
		t.Errorf("a refused request read the to-do list %d times", after-calls)
	}
}
