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

func (f *fakeDeadlines) Deadlines(_ context.Context, q deadline.Query) ([]deadline.Row, error) {
	f.queries = append(f.queries, q)
	return f.rows, nil
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
