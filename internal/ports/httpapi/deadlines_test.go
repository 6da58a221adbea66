package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// fakeIndex is an index of outstanding work: payments prepared and processes open
// at the times given.
type fakeIndex struct {
	pending []deadline.Pending
	open    []deadline.Open
	refunds []deadline.RefundOwed
	cutoffs []time.Time
}

func (f *fakeIndex) List(_ context.Context, limit int) ([]deadline.Pending, error) {
	return f.Overdue(context.Background(), time.Unix(1<<40, 0), limit)
}

func (f *fakeIndex) Overdue(_ context.Context, cutoff time.Time, limit int) ([]deadline.Pending, error) {
	var out []deadline.Pending
	for _, p := range f.pending {
		if p.PreparedAt.Before(cutoff) && len(out) < limit {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeIndex) OpenBefore(_ context.Context, cutoff time.Time) ([]deadline.Open, int, error) {
	f.cutoffs = append(f.cutoffs, cutoff)
	var out []deadline.Open
	for _, o := range f.open {
		if o.RequestedAt.Before(cutoff) {
			out = append(out, o)
		}
	}
	return out, len(out), nil
}

func (f *fakeIndex) RefundsOwed(context.Context) ([]deadline.RefundOwed, int, error) {
	return f.refunds, len(f.refunds), nil
}

func deadlinesHarness(t *testing.T) (*harness, *fakeIndex) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	now := h.now
	idx := &fakeIndex{
		pending: []deadline.Pending{
			{Reference: "rp_b1_AAAAAAAAAAAAAAAAAAAAAA", RentalID: "b1_AAAAAAAAAAAAAAAAAAAAAA", PreparedAt: now.Add(-20 * time.Minute)},
			{Reference: "rp_b2_AAAAAAAAAAAAAAAAAAAAAA", RentalID: "b2_AAAAAAAAAAAAAAAAAAAAAA", PreparedAt: now.Add(-time.Minute)},
		},
		open: []deadline.Open{
			{RentalID: "b3_AAAAAAAAAAAAAAAAAAAAAA", RequestedAt: now.Add(-30 * time.Minute)},
			{RentalID: "b1_AAAAAAAAAAAAAAAAAAAAAA", RequestedAt: now.Add(-20 * time.Minute)},
			{RentalID: "b2_AAAAAAAAAAAAAAAAAAAAAA", RequestedAt: now.Add(-time.Minute)},
		},
		refunds: []deadline.RefundOwed{{Reference: "rp_b4_AAAAAAAAAAAAAAAAAAAAAA", RentalID: "b4_AAAAAAAAAAAAAAAAAAAAAA", OwedSince: now.Add(-time.Hour)}},
	}
	policy, err := deadline.NewPolicy(15*time.Minute, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.api = httpapi.New(httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Deadlines: idx, Refunds: idx, Policy: policy,
		Now: func() time.Time { return h.now }})
	return h, idx
}

type row struct {
	kind, rental string
	age          float64
}

func rowsOf(t *testing.T, r reply) []row {
	t.Helper()
	var out []row
	for _, x := range r.body["deadlines"].([]any) {
		m := x.(map[string]any)
		out = append(out, row{m["kind"].(string), m["rentalId"].(string), m["ageSeconds"].(float64)})
	}
	return out
}

// TestTheToDoListIsDueSoonestFirst reads GET /deadlines: every outstanding payment
// (due PAYMENT_TIMEOUT after it was prepared) and open process (due PAYMENT_TIMEOUT
// plus STUCK_GRACE after its bike was requested), due soonest first, so the overdue
// lead; by kind, overdue only, and limited, saying when there are more.
func TestTheToDoListIsDueSoonestFirst(t *testing.T) {
	h, _ := deadlinesHarness(t)
	r := h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK)
	got := rowsOf(t, r)
	want := []row{ // due: b1 payment -5m, b3 stuck +(-30+25)=-5m, b2 payment +14m, b1 stuck +5m, b2 stuck +24m
		{"payment", "b1_AAAAAAAAAAAAAAAAAAAAAA", 1200}, {"stuck", "b3_AAAAAAAAAAAAAAAAAAAAAA", 1800},
		{"stuck", "b1_AAAAAAAAAAAAAAAAAAAAAA", 1200}, {"payment", "b2_AAAAAAAAAAAAAAAAAAAAAA", 60}, {"stuck", "b2_AAAAAAAAAAAAAAAAAAAAAA", 60},
	}
	if len(got) != len(want) {
		t.Fatalf("deadlines %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("deadline %d = %v, want %v (%s)", i, got[i], want[i], r.raw)
		}
	}
	if due := r.body["deadlines"].([]any)[0].(map[string]any)["dueAt"]; due != h.now.Add(-5*time.Minute).UTC().Format(time.RFC3339Nano) {
		t.Errorf("the first deadline is due at %v, want 5 minutes ago", due)
	}

	h.query = map[string]string{"overdue": "true"}
	if got := rowsOf(t, h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK)); len(got) != 2 || got[0].rental != "b1_AAAAAAAAAAAAAAAAAAAAAA" || got[1].rental != "b3_AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("overdue only: %v", got)
	}
	h.query = map[string]string{"kind": "stuck"}
	if got := rowsOf(t, h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK)); len(got) != 3 || got[0].kind != "stuck" || got[2].kind != "stuck" {
		t.Errorf("kind=stuck: %v", got)
	}
	h.query = map[string]string{"limit": "2"}
	r = h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK)
	if got := rowsOf(t, r); len(got) != 2 || r.body["more"] != true || r.body["count"] != float64(2) {
		t.Errorf("limit=2: %s", r.raw)
	}
	for _, q := range []map[string]string{{"kind": "return"}, {"kind": "<b>"}, {"overdue": "yes"}, {"limit": "0"}, {"limit": "1001"}} {
		h.query = q
		h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusBadRequest)
	}
	h.query = nil
	h.expect(http.MethodGet, "/deadlines", "", as("alice"), http.StatusForbidden)
}

// TestStuckRentalsAndRefundsOwed reads GET /processes/stuck, the rentals open past
// the sweep's stuck cutoff, and GET /refunds/owed.
func TestStuckRentalsAndRefundsOwed(t *testing.T) {
	h, idx := deadlinesHarness(t)
	r := h.expect(http.MethodGet, "/processes/stuck", "", nil, http.StatusOK)
	rentals := r.body["rentals"].([]any)
	if len(rentals) != 1 || rentals[0].(map[string]any)["rentalId"] != "b3_AAAAAAAAAAAAAAAAAAAAAA" || r.body["count"] != float64(1) {
		t.Errorf("stuck: %s", r.raw)
	}
	if c := idx.cutoffs[len(idx.cutoffs)-1]; !c.Equal(h.now.Add(-25 * time.Minute)) {
		t.Errorf("stuck cutoff %v, want 25 minutes ago", c)
	}
	r = h.expect(http.MethodGet, "/refunds/owed", "", nil, http.StatusOK)
	refunds := r.body["refunds"].([]any)
	if len(refunds) != 1 || refunds[0].(map[string]any)["ageSeconds"] != float64(3600) || refunds[0].(map[string]any)["paymentReference"] != "rp_b4_AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("refunds: %s", r.raw)
	}
	// Without the index, both answer 501.
	h2 := newHarness(t, eventstore.NewMemory(), nil)
	for _, path := range []string{"/deadlines", "/processes/stuck", "/refunds/owed"} {
		h2.expect(http.MethodGet, path, "", nil, http.StatusNotImplemented)
	}
}
