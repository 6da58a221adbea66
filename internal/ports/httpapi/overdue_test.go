package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestAnOverdueRentalReadsOverdue: a rental whose return was flagged overdue reads
// overdue, with its due time, for its renter and for operators, as api/openapi.yaml
// says (do checks every answer against it); someone else's token reads it as absent;
// once the bike is back it reads returned, with how late it came back.
func TestAnOverdueRentalReadsOverdue(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		var now time.Time
		h := newHarness(t, store, nil, command.WithRentalPeriod(30*time.Minute), command.WithClock(func() time.Time { return now }))
		id := h.rentBike("b1", "alice")
		h.paid(h.prepare(id), "evt-1")
		approve(t, h, id, "alice")
		now = time.Now().Add(31 * time.Minute)
		if got, err := h.commands.FlagOverdueReturn(context.Background(), id, command.Meta{}); err != nil || got.Outcome != command.OverdueFlagged {
			t.Fatalf("flag: %+v, %v", got, err)
		}
		for _, who := range []map[string]string{nil, as("alice")} {
			view := h.expect(http.MethodGet, "/rentals/"+id, "", who, http.StatusOK)
			overdue, _ := view.body["overdue"].(map[string]any)
			if view.str("status") != "overdue" || overdue["dueAt"] == nil || overdue["lateSeconds"] != nil {
				t.Errorf("as %v: %s; want overdue, with its due time", who, view.raw)
			}
			assertHistory(t, view, "BikeRequested", "PaymentPrepared", "PaymentConfirmed", "RequestApproved", "ReturnOverdue")
		}
		h.expect(http.MethodGet, "/rentals/"+id, "", as("mallory"), http.StatusNotFound)

		now = now.Add(10 * time.Minute)
		h.expect(http.MethodPost, "/bikes/b1/return", `{"rentalId":"`+id+`"}`, nil, http.StatusOK)
		view := h.expect(http.MethodGet, "/rentals/"+id, "", as("alice"), http.StatusOK)
		overdue, _ := view.body["overdue"].(map[string]any)
		if late, _ := overdue["lateSeconds"].(float64); view.str("status") != "returned" || late < 10*60 || overdue["returnedAt"] == nil {
			t.Errorf("after the return: %s; want returned, at least 600 seconds late", view.raw)
		}
	})
}
