package rentalpayment_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// The process's decider, given its events, when a recording command, then the events
// it appends or the refusal: pure, with no store.
func TestDecideGivenWhenThen(t *testing.T) {
	const id = "b1_AAAAAAAAAAAAAAAAAAAAAA"
	started := rentalpayment.RentalPaymentRequested{RentalID: id, BikeID: "b1", Renter: "alice", Amount: 1500, Currency: "EUR", BikeVersion: 2}
	ended := rentalpayment.RentalPaymentProcessCompleted{RentalID: id, Outcome: rentalpayment.CompletedApproved}
	start := rentalpayment.RecordPaymentRequested{RentalPaymentRequested: started}
	end := rentalpayment.RecordProcessCompleted{RentalPaymentProcessCompleted: ended}
	for _, tc := range []struct {
		name  string
		given []rentalpayment.Event
		when  rentalpayment.Command
		then  []rentalpayment.Event
		err   error
	}{
		{"a new process starts", nil, start, []rentalpayment.Event{started}, nil},
		{"a started process does not start again", []rentalpayment.Event{started}, start, nil, nil},
		{"a started process ends", []rentalpayment.Event{started}, end, []rentalpayment.Event{ended}, nil},
		{"an ended process does not end again", []rentalpayment.Event{started, ended}, end, nil, nil},
		{"an ended process does not start again", []rentalpayment.Event{started, ended}, start, nil, nil},
		{"a process that never started cannot end", nil, end, nil, rentalpayment.ErrProcessNotStarted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rentalpayment.Decide(rentalpayment.Fold(tc.given), tc.when)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("Decide = %v, %v; want %v", got, err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.then) {
				t.Errorf("Decide = %#v, want %#v", got, tc.then)
			}
		})
	}
}

// TestFoldKeepsTheFirstStartAndTheFirstCompletion: a fold is pure and order-driven;
// the first start and the first completion count, whatever follows.
func TestFoldKeepsTheFirstStartAndTheFirstCompletion(t *testing.T) {
	first := rentalpayment.RentalPaymentRequested{RentalID: "r", BikeID: "b", Renter: "alice"}
	second := rentalpayment.RentalPaymentRequested{RentalID: "r", BikeID: "b", Renter: "mallory"}
	approved := rentalpayment.RentalPaymentProcessCompleted{RentalID: "r", Outcome: rentalpayment.CompletedApproved}
	cancelled := rentalpayment.RentalPaymentProcessCompleted{RentalID: "r", Outcome: rentalpayment.CompletedCancelled}
	s := rentalpayment.Fold([]rentalpayment.Event{first, second, approved, cancelled})
	if s.Status != rentalpayment.StatusCompleted || s.Renter != "alice" || s.Outcome != rentalpayment.CompletedApproved {
		t.Errorf("Fold = %+v, want completed, approved, for alice", s)
	}
	if z := rentalpayment.Fold(nil); z.Status != rentalpayment.StatusNotStarted || z.Started() {
		t.Errorf("Fold(nil) = %+v, want not started", z)
	}
}

func TestDecodeEventRoundTrips(t *testing.T) {
	for _, typ := range rentalpayment.EventTypes() {
		if _, err := rentalpayment.DecodeEvent(typ, []byte(`{}`)); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
	if _, err := rentalpayment.DecodeEvent("Nope", []byte(`{}`)); !errors.Is(err, rentalpayment.ErrUnknownEventType) {
		t.Errorf("an unknown type: %v", err)
	}
	if _, err := rentalpayment.DecodeEvent(rentalpayment.TypeRequested, []byte(`{`)); err == nil {
		t.Error("bad JSON: no error")
	}
}

// TestStartsAndEnds: the process starts with its payment requested and ends with
// its completion, and no other event type does either.
func TestStartsAndEnds(t *testing.T) {
	for _, typ := range append(rentalpayment.EventTypes(), "PaymentConfirmed", "BikeRequested", "") {
		if got, want := rentalpayment.Starts(typ), typ == (rentalpayment.RentalPaymentRequested{}).EventType(); got != want {
			t.Errorf("Starts(%q) = %v, want %v", typ, got, want)
		}
		if got, want := rentalpayment.Ends(typ), typ == (rentalpayment.RentalPaymentProcessCompleted{}).EventType(); got != want {
			t.Errorf("Ends(%q) = %v, want %v", typ, got, want)
		}
	}
	if got := rentalpayment.RentalOf(rentalpayment.RentalPaymentProcessCompleted{RentalID: "r"}); got != "r" {
		t.Errorf("RentalOf = %q, want r", got)
	}
}
