package bikestream_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/bikestream"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// memoryBike appends a bike's stream to a Memory store through the command handler:
// registered, then n rentals approved and returned, each with its process's start
// recording the bike's version, as the process does (legacy: without it).
func memoryBike(t *testing.T, m *eventstore.Memory, bikeID string, n int, legacy bool) []string {
	t.Helper()
	h := command.New(m)
	if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: bikeID}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		id := rental.NewRentalID(bikeID, suffix("mem", i))
		renter := "renter-" + id
		res, err := h.Bike(ctx, rental.RequestBike{BikeID: bikeID, Renter: renter, RentalID: id}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		start := rentalpayment.RentalPaymentRequested{RentalID: id, BikeID: bikeID, Renter: renter}
		if !legacy {
			start.BikeVersion = res.Appended[0].Version
		}
		data, _ := json.Marshal(start)
		if _, err := m.Append(ctx, rentalpayment.StreamID(id), 0, eventstore.Event{ID: "s-" + id, Type: rentalpayment.TypeRequested, Data: data}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []rental.Command{rental.ApproveRequest{BikeID: bikeID, Renter: renter, RentalID: id}, rental.ReturnBike{BikeID: bikeID, RentalID: id}} {
			if _, err := h.Bike(ctx, c, command.Meta{}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	return ids
}

func typesOf(recs []eventstore.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Type)
	}
	return out
}

var lifecycle = []string{"BikeRequested", "RequestApproved", "BikeReturned"}

// TestARentalsRecordsAreFoundByKeyAtAnyAge: an old rental's records come from the
// versions its process recorded, a current one's from the tail, a legacy one's from
// a backward search; a rental the bike never held has none, and a history holds the
// rental's records followed by the bike's tail, without a version twice.
func TestARentalsRecordsAreFoundByKeyAtAnyAge(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		m := eventstore.NewMemory()
		ids := memoryBike(t, m, "b1", 150, legacy)
		for _, id := range []string{ids[0], ids[70], ids[149]} {
			recs, err := bikestream.Rental(ctx, m, id, nil)
			if err != nil || !slices.Equal(typesOf(recs), lifecycle) {
				t.Errorf("legacy=%v: %s's records %v, %v; want %v", legacy, id, typesOf(recs), err, lifecycle)
			}
		}
		if recs, err := bikestream.Rental(ctx, m, rental.NewRentalID("b1", suffix("never", 1)), nil); err != nil || recs != nil {
			t.Errorf("a rental never held: %v, %v; want none", typesOf(recs), err)
		}
		history, err := bikestream.History(ctx, m, "b1", ids[0])
		if err != nil {
			t.Fatal(err)
		}
		var versions []int64
		for _, r := range history {
			versions = append(versions, r.Version)
		}
		if want := []int64{2, 3, 4, 448, 449, 450, 451}; !slices.Equal(versions, want) {
			t.Errorf("legacy=%v: history for the first rental at versions %v, want %v", legacy, versions, want)
		}
		var events []rental.Event
		for _, r := range history {
			e, _ := rental.DecodeEvent(r.Type, r.Data)
			events = append(events, e)
		}
		bike := rental.Fold(events)
		if bike.Status != rental.StatusAvailable || bike.Rentals[ids[0]].Outcome != rental.OutcomeReturned || !bike.Registered {
			t.Errorf("legacy=%v: the bike from the history: %+v", legacy, bike)
		}
	}
}

// TestConcurrentRequestsOnALongHistoryHaveOneWinner: optimistic concurrency is as
// strong on the tail as on the whole stream. Four renters ask at once for a bike
// rented a thousand times before, five rounds: exactly one request wins each round,
// on the emulator through the real SDK.
func TestConcurrentRequestsOnALongHistoryHaveOneWinner(t *testing.T) {
	plain, table := emulatortest.EventsTable(t)
	store := dynamo.New(plain, table)
	seed(t, plain, table, store, "busy", 1000)
	h := command.New(store)
	for round := range 5 {
		var wins atomic.Int32
		var winner string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := rental.NewRentalID("busy", suffix("r", round*100+i))
				renter := "racer-" + id
				_, err := h.Bike(ctx, rental.RequestBike{BikeID: "busy", Renter: renter, RentalID: id}, command.Meta{})
				switch {
				case err == nil:
					wins.Add(1)
					mu.Lock()
					winner = id
					mu.Unlock()
				case !errors.Is(err, rental.ErrBikeUnavailable) && !errors.Is(err, eventstore.ErrRetriesExhausted):
					t.Errorf("round %d: %v", round, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d requests won, want exactly 1", round, wins.Load())
		}
		// The winner's request is rejected, freeing the bike for the next round.
		bike, _, err := h.LoadBike(ctx, "busy")
		if err != nil || bike.RentalID != winner {
			t.Fatalf("round %d: the bike holds %q, want the winner %q (%v)", round, bike.RentalID, winner, err)
		}
		if _, err := h.Bike(ctx, rental.RejectRequest{BikeID: "busy", Renter: bike.Renter, RentalID: winner}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAFlaggedRentalsRecordsAreFoundByKey: a rental whose return was flagged overdue
// spans four versions on its bike (requested, approved, overdue, returned); found by
// key long after, it has all four, so a repeated return of it is answered as done.
func TestAFlaggedRentalsRecordsAreFoundByKey(t *testing.T) {
	m := eventstore.NewMemory()
	late := func() time.Time { return time.Now().Add(rental.DefaultPeriod + time.Minute) }
	h := command.New(m, command.WithClock(late))
	if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: "b1"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		id := rental.NewRentalID("b1", suffix("late", i))
		renter := "renter-" + id
		res, err := h.Bike(ctx, rental.RequestBike{BikeID: "b1", Renter: renter, RentalID: id}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(rentalpayment.RentalPaymentRequested{RentalID: id, BikeID: "b1", Renter: renter, BikeVersion: res.Appended[0].Version})
		if _, err := m.Append(ctx, rentalpayment.StreamID(id), 0, eventstore.Event{ID: "s-" + id, Type: rentalpayment.TypeRequested, Data: data}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Bike(ctx, rental.ApproveRequest{BikeID: "b1", Renter: renter, RentalID: id}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		if got, err := h.FlagOverdueReturn(ctx, id, command.Meta{}); err != nil || got.Outcome != command.OverdueFlagged {
			t.Fatalf("flag: %+v, %v", got, err)
		}
		if _, err := h.Bike(ctx, rental.ReturnBike{BikeID: "b1", RentalID: id}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	want := []string{"BikeRequested", "RequestApproved", "ReturnOverdue", "BikeReturned"}
	recs, err := bikestream.Rental(ctx, m, ids[0], nil)
	if err != nil || !slices.Equal(typesOf(recs), want) {
		t.Errorf("the first rental's records %v, %v; want %v", typesOf(recs), err, want)
	}
	if res, err := h.Bike(ctx, rental.ReturnBike{BikeID: "b1", RentalID: ids[0]}, command.Meta{}); err != nil || len(res.Appended) != 0 {
		t.Errorf("a repeated return of the first rental: %+v, %v; want it answered as done", res, err)
	}
	if got, err := h.FlagOverdueReturn(ctx, ids[0], command.Meta{}); err != nil || got.Reason != command.OverdueReturned {
		t.Errorf("a late flag of the first rental: %+v, %v; want declined, returned", got, err)
	}
}
