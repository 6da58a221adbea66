package rentalview_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

var ctx = context.Background()

// must returns v, failing t with err.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func types(v rentalview.View) []string {
	var out []string
	for _, e := range v.History {
		out = append(out, e.Type)
	}
	return out
}

// TestAnOverdueRentalShowsItUntilItsReturn: a rental whose return was flagged is
// overdue, with its due time, until its bike comes back; then it is returned, with
// how late it came back, in the view and in its history. A rental returned in time
// shows nothing of the kind, and the next rental of the bike starts approved.
func TestAnOverdueRentalShowsItUntilItsReturn(t *testing.T) {
	store := eventstore.NewMemory()
	now := time.Now()
	h := command.New(store, command.WithRentalPeriod(time.Hour), command.WithClock(func() time.Time { return now }))
	must(h.Bike(ctx, rental.RegisterBike{BikeID: "b1"}, command.Meta{}))(t)
	id := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAA1")
	must(h.Bike(ctx, rental.RequestBike{BikeID: "b1", Renter: "alice", RentalID: id}, command.Meta{}))(t)
	approval := must(h.Bike(ctx, rental.ApproveRequest{BikeID: "b1", Renter: "alice", RentalID: id}, command.Meta{}))(t).Appended[0]
	due := approval.RecordedAt.Add(time.Hour)

	if v := must(rentalview.Load(ctx, store, id))(t); v.Status != rentalview.StatusApproved || v.Overdue != nil {
		t.Errorf("before the flag: %s, %+v; want approved, not overdue", v.Status, v.Overdue)
	}
	now = due.Add(time.Minute)
	if got := must(h.FlagOverdueReturn(ctx, id, command.Meta{}))(t); got.Outcome != command.OverdueFlagged {
		t.Fatalf("flag: %+v", got)
	}
	v := must(rentalview.Load(ctx, store, id))(t)
	if v.Status != rentalview.StatusOverdue || v.Overdue == nil || !v.Overdue.DueAt.Equal(due) || !v.Overdue.FlaggedAt.Equal(now) ||
		v.Overdue.ReturnedAt != nil || v.Overdue.LateSeconds != nil {
		t.Errorf("after the flag: %s, %+v; want overdue, due at %v", v.Status, v.Overdue, due)
	}
	if want := []string{"BikeRequested", "RequestApproved", "ReturnOverdue"}; !slices.Equal(types(v), want) {
		t.Errorf("history %v, want %v", types(v), want)
	}
	body, _ := json.Marshal(v.WithoutSecrets())
	if !strings.Contains(string(body), `"status":"overdue"`) || !strings.Contains(string(body), `"overdue":{"dueAt":`) {
		t.Errorf("the view as JSON: %s", body)
	}

	now = due.Add(25 * time.Minute)
	must(h.Bike(ctx, rental.ReturnBike{BikeID: "b1", RentalID: id}, command.Meta{}))(t)
	v = must(rentalview.Load(ctx, store, id))(t)
	if v.Status != rentalview.StatusReturned || v.Overdue == nil || !v.Overdue.DueAt.Equal(due) ||
		v.Overdue.ReturnedAt == nil || !v.Overdue.ReturnedAt.Equal(now) || v.Overdue.LateSeconds == nil || *v.Overdue.LateSeconds != 25*60 {
		t.Errorf("after the return: %s, %+v; want returned, 1500 seconds late", v.Status, v.Overdue)
	}
	last := v.History[len(v.History)-1]
	if last.Type != "BikeReturned" || !strings.Contains(string(last.Data), `"seconds":1500`) {
		t.Errorf("the history's last entry: %s %s; want the return with its lateness", last.Type, last.Data)
	}

	// The bike's next rental, returned in time, shows nothing overdue; the first
	// stays returned late.
	next := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAA2")
	must(h.Bike(ctx, rental.RequestBike{BikeID: "b1", Renter: "bob", RentalID: next}, command.Meta{}))(t)
	must(h.Bike(ctx, rental.ApproveRequest{BikeID: "b1", Renter: "bob", RentalID: next}, command.Meta{}))(t)
	if v := must(rentalview.Load(ctx, store, next))(t); v.Status != rentalview.StatusApproved || v.Overdue != nil {
		t.Errorf("the next rental: %s, %+v; want approved", v.Status, v.Overdue)
	}
	must(h.Bike(ctx, rental.ReturnBike{BikeID: "b1", RentalID: next}, command.Meta{}))(t)
	if v := must(rentalview.Load(ctx, store, next))(t); v.Status != rentalview.StatusReturned || v.Overdue != nil {
		t.Errorf("the next rental returned in time: %s, %+v; want returned, not overdue", v.Status, v.Overdue)
	}
	if v := must(rentalview.Load(ctx, store, id))(t); v.Status != rentalview.StatusReturned || v.Overdue == nil || v.Overdue.LateSeconds == nil || *v.Overdue.LateSeconds != 25*60 {
		t.Errorf("the first rental later: %s, %+v", v.Status, v.Overdue)
	}
}
