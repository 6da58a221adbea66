package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

type fakeDeadlines struct {
	rows    []deadline.Row
	queries []deadline.Query
}

// Deadlines answers with the rows of the kind asked for (every row for every kind),
// as given: the order is the lister's.
func (f *fakeDeadlines) Deadlines(_ context.Context, q deadline.Query) ([]deadline.Row, error) {
	f.queries = append(f.queries, q)
	var out []deadline.Row
	for _, r := range f.rows {
		if q.Kind == "" || r.Kind == q.Kind {
			out = append(out, r)
		}
	}
	return out, nil
}

// TestDeadlines: GET /deadlines lists the rows of every kind the lister answers
// with their kind, rental, due time, age and whether they are overdue; it passes
// kind, overdue and limit on, and refuses each malformed one with 400 and an
// invalid param naming it, asking the lister nothing.
func TestDeadlines(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusNotImplemented) // no projection configured
	fake := &fakeDeadlines{rows: []deadline.Row{
		{Kind: "return", Subject: "b1_AAAAAAAAAAAAAAAAAAAAAA", Since: h.now.Add(-3 * time.Hour), Due: h.now.Add(-time.Hour)},
		{Kind: "payment", Subject: "b2_AAAAAAAAAAAAAAAAAAAAAA", Since: h.now.Add(-time.Minute), Due: h.now.Add(14 * time.Minute)},
	}}
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Deadlines: fake, Now: func() time.Time { return h.now }})
	r := h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK)
	rows := r.body["deadlines"].([]any)
	first := rows[0].(map[string]any)
	if len(rows) != 2 || r.body["count"] != float64(2) || r.body["limit"] != float64(httpapi.DefaultPendingLimit) || first["kind"] != "return" ||
		first["rentalId"] != "b1_AAAAAAAAAAAAAAAAAAAAAA" || first["ageSeconds"] != float64(3*3600) || first["overdue"] != true || rows[1].(map[string]any)["overdue"] != false {
		t.Errorf("deadlines: %s", r.raw)
	}
	if q := fake.queries[0]; q.Kind != "" || q.Overdue != nil || q.Limit != httpapi.DefaultPendingLimit || !q.Now.Equal(h.now) {
		t.Errorf("query %+v, want every kind, overdue or not, the default limit, now", q)
	}
	req := func(params map[string]string) events.APIGatewayV2HTTPResponse {
		resp, _ := h.api.Handle(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: "/deadlines", QueryStringParameters: params,
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "q", Authorizer: claims("ops", true), HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
		return resp
	}
	if resp := req(map[string]string{"kind": "return", "overdue": "true", "limit": "5"}); resp.StatusCode != 200 {
		t.Errorf("kind=return&overdue=true&limit=5: %d %s", resp.StatusCode, resp.Body)
	}
	if q := fake.queries[len(fake.queries)-1]; q.Kind != "return" || q.Overdue == nil || !*q.Overdue || q.Limit != 5 {
		t.Errorf("query %+v, want return, overdue, 5", q)
	}
	asked := len(fake.queries)
	for name, params := range map[string]map[string]string{
		"kind":    {"kind": "bikes"},
		"overdue": {"overdue": "yes"},
		"limit":   {"limit": "1001"},
	} {
		resp := req(params)
		if resp.StatusCode != 400 || resp.Headers["Content-Type"] != "application/problem+json" || !strings.Contains(resp.Body, `"name":"`+name+`"`) {
			t.Errorf("%v: %d %v %s, want 400 problem+json naming %s", params, resp.StatusCode, resp.Headers, resp.Body, name)
		}
	}
	for _, bad := range []map[string]string{{"limit": "0"}, {"limit": "ten"}, {"overdue": "True"}, {"kind": ""}, {"kind": "<b>stuck</b>"}} {
		if resp := req(bad); resp.StatusCode != 400 {
			t.Errorf("%v: %d, want 400", bad, resp.StatusCode)
		}
	}
	if len(fake.queries) != asked {
		t.Errorf("a refused request asked the lister: %+v", fake.queries[asked:])
	}
}

// TestStuckRentalsAndRefundsOwed reads GET /processes/stuck, the stuck kind's
// overdue rows, and GET /refunds/owed, the refund kind's rows, each through the
// to-do list's lister with the route's kind and the limit asked for, oldest first
// as the lister answers; a malformed limit is refused asking the lister nothing,
// and without a lister both answer 501.
func TestStuckRentalsAndRefundsOwed(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	for _, path := range []string{"/processes/stuck", "/refunds/owed"} {
		h.expect(http.MethodGet, path, "", nil, http.StatusNotImplemented)
	}
	fake := &fakeDeadlines{}
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Deadlines: fake, Now: func() time.Time { return h.now }})

	fake.rows = []deadline.Row{{Kind: "stuck", Subject: "b3_AAAAAAAAAAAAAAAAAAAAAA", Since: h.now.Add(-30 * time.Minute), Due: h.now.Add(-5 * time.Minute)}}
	r := h.expect(http.MethodGet, "/processes/stuck", "", nil, http.StatusOK)
	rentals := r.body["rentals"].([]any)
	if len(rentals) != 1 || r.body["count"] != float64(1) {
		t.Fatalf("stuck: %s", r.raw)
	}
	if s := rentals[0].(map[string]any); s["rentalId"] != "b3_AAAAAAAAAAAAAAAAAAAAAA" || s["ageSeconds"] != float64(1800) ||
		s["requestedAt"] != h.now.Add(-30*time.Minute).UTC().Format(time.RFC3339Nano) || s["stuckSince"] != h.now.Add(-5*time.Minute).UTC().Format(time.RFC3339Nano) {
		t.Errorf("stuck: %s", r.raw)
	}
	if q := fake.queries[len(fake.queries)-1]; q.Kind != "stuck" || q.Overdue == nil || !*q.Overdue || q.Limit != httpapi.DefaultPendingLimit || !q.Now.Equal(h.now) {
		t.Errorf("stuck query %+v, want the stuck kind, overdue, the default limit, now", q)
	}

	fake.rows = []deadline.Row{{Kind: "refund", Subject: "b4_AAAAAAAAAAAAAAAAAAAAAA", Since: h.now.Add(-time.Hour), Due: h.now.Add(-time.Hour)}}
	h.query = map[string]string{"limit": "7"}
	r = h.expect(http.MethodGet, "/refunds/owed", "", nil, http.StatusOK)
	refunds := r.body["refunds"].([]any)
	if len(refunds) != 1 || r.body["limit"] != float64(7) {
		t.Fatalf("refunds: %s", r.raw)
	}
	if o := refunds[0].(map[string]any); o["rentalId"] != "b4_AAAAAAAAAAAAAAAAAAAAAA" || o["paymentReference"] != "rp_b4_AAAAAAAAAAAAAAAAAAAAAA" ||
		o["ageSeconds"] != float64(3600) || o["owedSince"] != h.now.Add(-time.Hour).UTC().Format(time.RFC3339Nano) {
		t.Errorf("refunds: %s", r.raw)
	}
	if q := fake.queries[len(fake.queries)-1]; q.Kind != "refund" || q.Overdue != nil || q.Limit != 7 {
		t.Errorf("refunds query %+v, want the refund kind, overdue or not, 7", q)
	}

	asked := len(fake.queries)
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
	if len(fake.queries) != asked {
		t.Errorf("a refused request asked the lister: %+v", fake.queries[asked:])
	}
}
