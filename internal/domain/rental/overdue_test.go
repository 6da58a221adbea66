package rental

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

var (
	approvedAt = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	period     = 2 * time.Hour
	dueAt      = approvedAt.Add(period)
	flaggedAt  = dueAt.Add(90 * time.Second)
	overdue1   = ReturnOverdue{BikeID: bike, Renter: alice, RentalID: r1, ApprovedAt: approvedAt, DueAt: dueAt, FlaggedAt: flaggedAt}
)

func flag(id string, at time.Time) FlagOverdueReturn {
	return FlagOverdueReturn{RentalID: id, ApprovedAt: approvedAt, Period: period, At: at}
}

// TestFlagOverdueReturn: the flag is recorded once, for the bike's current approved
// rental past its due time, and declined otherwise, with the reason as the error.
func TestFlagOverdueReturn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		given []Event
		when  Command
		then  []Event
		err   error
	}{
		{"the current rental past its due time", []Event{registered, requested1, approved1}, flag(r1, flaggedAt), []Event{overdue1}, nil},
		{"exactly at its due time", []Event{registered, requested1, approved1}, flag(r1, dueAt),
			[]Event{ReturnOverdue{BikeID: bike, Renter: alice, RentalID: r1, ApprovedAt: approvedAt, DueAt: dueAt, FlaggedAt: dueAt}}, nil},
		{"on the stream's tail alone", []Event{approved1}, flag(r1, flaggedAt), []Event{overdue1}, nil},
		{"already flagged", []Event{registered, requested1, approved1, overdue1}, flag(r1, flaggedAt.Add(time.Hour)), nil, nil},
		{"already flagged, on a tail that begins with the flag", []Event{overdue1}, flag(r1, flaggedAt.Add(time.Hour)), nil, nil},
		{"before its due time", []Event{registered, requested1, approved1}, flag(r1, dueAt.Add(-time.Second)), nil, ErrReturnNotDue},
		{"returned meanwhile", []Event{registered, requested1, approved1, returned1}, flag(r1, flaggedAt), nil, ErrRentalReturned},
		{"returned after it was flagged", []Event{registered, requested1, approved1, overdue1, returned1}, flag(r1, flaggedAt), nil, ErrRentalReturned},
		{"returned, and the bike rented again", []Event{registered, requested1, approved1, returned1, requested2, approved2}, flag(r1, flaggedAt), nil, ErrRentalReturned},
		{"another rental is current", []Event{registered, requested1, approved1}, flag(r2, flaggedAt), nil, ErrNotActiveRental},
		{"still pending", []Event{registered, requested1}, flag(r1, flaggedAt), nil, ErrNotActiveRental},
		{"rejected", []Event{registered, requested1, rejected1}, flag(r1, flaggedAt), nil, ErrNotActiveRental},
		{"on an available bike", []Event{registered}, flag(r1, flaggedAt), nil, ErrNotActiveRental},
		{"on a bike never registered", nil, flag(r1, flaggedAt), nil, ErrBikeNotRegistered},
		{"a malformed rental id", []Event{registered, requested1, approved1}, flag("b1_short", flaggedAt), nil, ErrInvalidCommand},
		{"another bike's rental on this stream", []Event{registered, requested1, approved1}, flag(NewRentalID("b2", "AAAAAAAAAAAAAAAAAAAAA1"), flaggedAt), nil, ErrInvalidCommand},
		{"without the approval time", []Event{registered, requested1, approved1}, FlagOverdueReturn{RentalID: r1, Period: period, At: flaggedAt}, nil, ErrInvalidCommand},
		{"without a rental period", []Event{registered, requested1, approved1}, FlagOverdueReturn{RentalID: r1, ApprovedAt: approvedAt, At: flaggedAt}, nil, ErrInvalidCommand},
		{"with a negative rental period", []Event{registered, requested1, approved1}, FlagOverdueReturn{RentalID: r1, ApprovedAt: approvedAt, Period: -period, At: flaggedAt}, nil, ErrInvalidCommand},
		{"without the time now", []Event{registered, requested1, approved1}, FlagOverdueReturn{RentalID: r1, ApprovedAt: approvedAt, Period: period}, nil, ErrInvalidCommand},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(Fold(tc.given), tc.when)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("Decide error = %v, want %v", err, tc.err)
			}
			if !slices.Equal(got, tc.then) {
				t.Fatalf("Decide events = %#v, want %#v", got, tc.then)
			}
			if len(got) == 0 {
				return
			}
			again, err := Decide(Fold(append(slices.Clone(tc.given), got...)), tc.when)
			if again != nil || err != nil {
				t.Fatalf("the flag repeated = %#v, %v; want nil, nil", again, err)
			}
		})
	}
}

// TestAFlaggedRentalStaysApproved: the flag changes nothing else the bike decides
// (a repeated approval is still done, a rejection still refused, the bike still
// unavailable), and the state after it says when the bike was due.
func TestAFlaggedRentalStaysApproved(t *testing.T) {
	s := Fold([]Event{registered, requested1, approved1, overdue1})
	want := Bike{ID: bike, Registered: true, Status: StatusRented, RentalID: r1, Renter: alice, DueAt: dueAt,
		Rentals: map[string]Rental{r1: {alice, OutcomeApproved}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("Fold = %#v, want %#v", s, want)
	}
	if got, err := Decide(s, approve(alice, r1)); got != nil || err != nil {
		t.Errorf("approving again: %v, %v; want nothing to do", got, err)
	}
	if _, err := Decide(s, reject(alice, r1)); !errors.Is(err, ErrRequestAlreadyApproved) {
		t.Errorf("rejecting: %v, want ErrRequestAlreadyApproved", err)
	}
	if _, err := Decide(s, request(bob, r2)); !errors.Is(err, ErrBikeUnavailable) {
		t.Errorf("requesting: %v, want ErrBikeUnavailable", err)
	}
	// The next rental starts unflagged.
	next := Fold([]Event{registered, requested1, approved1, overdue1, returned1, requested2, approved2})
	if !next.DueAt.IsZero() {
		t.Errorf("the next rental is flagged: %+v", next)
	}
	if got, err := Decide(next, flag(r2, flaggedAt)); err != nil || len(got) != 1 {
		t.Errorf("flagging the next rental: %v, %v; want it flagged", got, err)
	}
}

// TestALateReturnRecordsHowLate: returning the bike of a flagged rental records its
// due time, when it came back and how late, in whole seconds; a return of a rental
// never flagged records none, whatever its time.
func TestALateReturnRecordsHowLate(t *testing.T) {
	back := dueAt.Add(42*time.Minute + 999*time.Millisecond)
	flagged := []Event{registered, requested1, approved1, overdue1}
	for _, c := range []ReturnBike{{BikeID: bike, At: back}, {BikeID: bike, RentalID: r1, At: back}} {
		got, err := Decide(Fold(flagged), c)
		want := BikeReturned{BikeID: bike, Renter: alice, RentalID: r1, Late: Lateness{DueAt: dueAt, ReturnedAt: back, Seconds: 42 * 60}}
		if err != nil || !slices.Equal(got, []Event{want}) {
			t.Errorf("%+v: %#v, %v; want %#v", c, got, err, want)
		}
	}
	// Clocks disagree: a return stamped before the due time is late by nothing.
	if got, err := Decide(Fold(flagged), ReturnBike{BikeID: bike, At: dueAt.Add(-time.Minute)}); err != nil || got[0].(BikeReturned).Late.Seconds != 0 {
		t.Errorf("a return stamped early: %#v, %v; want late by 0 seconds", got, err)
	}
	if _, err := Decide(Fold(flagged), ReturnBike{BikeID: bike}); !errors.Is(err, ErrInvalidCommand) {
		t.Errorf("a flagged return without its time: %v, want ErrInvalidCommand", err)
	}
	got, err := Decide(Fold([]Event{registered, requested1, approved1}), ReturnBike{BikeID: bike, At: back})
	if err != nil || !slices.Equal(got, []Event{returned1}) {
		t.Errorf("an unflagged return: %#v, %v; want %#v", got, err, returned1)
	}
	if after := Fold(append(flagged, got...)); !after.DueAt.IsZero() || after.Status != StatusAvailable {
		t.Errorf("after the return: %+v", after)
	}
}

// TestEventsOfBeforeTheFlagStillDecodeAndFold: a RequestApproved and a BikeReturned
// stored before rentals could be flagged decode to the events they were, and fold
// as before; a new BikeReturned of an unflagged rental is stored as those were.
func TestEventsOfBeforeTheFlagStillDecodeAndFold(t *testing.T) {
	var events []Event
	for _, rec := range []struct{ typ, data string }{
		{"BikeRegistered", `{"bikeId":"b1"}`},
		{"BikeRequested", `{"bikeId":"b1","renter":"alice","rentalId":"b1_AAAAAAAAAAAAAAAAAAAAA1"}`},
		{"RequestApproved", `{"bikeId":"b1","renter":"alice","rentalId":"b1_AAAAAAAAAAAAAAAAAAAAA1"}`},
		{"BikeReturned", `{"bikeId":"b1","renter":"alice","rentalId":"b1_AAAAAAAAAAAAAAAAAAAAA1"}`},
	} {
		e, err := DecodeEvent(rec.typ, []byte(rec.data))
		if err != nil {
			t.Fatalf("%s: %v", rec.typ, err)
		}
		events = append(events, e)
	}
	if !slices.Equal(events, []Event{registered, requested1, approved1, returned1}) {
		t.Fatalf("decoded %#v", events)
	}
	s := Fold(events)
	if s.Status != StatusAvailable || s.Rentals[r1].Outcome != OutcomeReturned || !s.DueAt.IsZero() {
		t.Errorf("folded %+v", s)
	}
	got, err := Decide(Fold(events[:3]), ReturnBike{BikeID: bike, At: dueAt})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := json.Marshal(got[0]); string(data) != `{"bikeId":"b1","renter":"alice","rentalId":"b1_AAAAAAAAAAAAAAAAAAAAA1"}` {
		t.Errorf("an unflagged return is stored as %s", data)
	}
}
