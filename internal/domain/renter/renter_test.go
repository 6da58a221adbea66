package renter

import (
	"errors"
	"reflect"
	"testing"
)

const (
	alice = "alice"
	r1    = "b1_AAAAAAAAAAAAAAAAAAAAA1"
	r2    = "b2_AAAAAAAAAAAAAAAAAAAAA2"
	r3    = "b3_AAAAAAAAAAAAAAAAAAAAA3"
)

func open(id, bike string, max int, settled ...string) OpenRequest {
	return OpenRequest{Renter: alice, RentalID: id, BikeID: bike, MaxPending: max, Settled: settled}
}

func requested(id, bike string, outstanding ...string) RentalRequested {
	return RentalRequested{Renter: alice, RentalID: id, BikeID: bike, Outstanding: outstanding}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name  string
		given []Event
		when  OpenRequest
		then  []Event
		err   error
	}{
		{"a first request", nil, open(r1, "b1", 1), []Event{requested(r1, "b1")}, nil},
		{"a second while the first is outstanding", []Event{requested(r1, "b1")}, open(r2, "b2", 1), nil, ErrTooManyPendingRequests},
		{"a second once the first settled", []Event{requested(r1, "b1")}, open(r2, "b2", 1, r1), []Event{requested(r2, "b2")}, nil},
		{"a second within a limit of two carries the first", []Event{requested(r1, "b1")}, open(r2, "b2", 2), []Event{requested(r2, "b2", r1)}, nil},
		{"a third at a limit of two", []Event{requested(r1, "b1"), requested(r2, "b2", r1)}, open(r3, "b3", 2), nil, ErrTooManyPendingRequests},
		{"a third at a limit of two once the first settled", []Event{requested(r1, "b1"), requested(r2, "b2", r1)}, open(r3, "b3", 2, r1), []Event{requested(r3, "b3", r2)}, nil},
		{"the limit lowered below what is outstanding", []Event{requested(r1, "b1"), requested(r2, "b2", r1)}, open(r3, "b3", 1, r2), nil, ErrTooManyPendingRequests},
		{"a repeat of a candidate is nothing to do", []Event{requested(r1, "b1")}, open(r1, "b1", 1), nil, nil},
		{"a settlement named that is not a candidate changes nothing", []Event{requested(r1, "b1")}, open(r2, "b2", 1, r3), nil, ErrTooManyPendingRequests},
		{"an invalid renter", nil, OpenRequest{Renter: "a b", RentalID: r1, BikeID: "b1", MaxPending: 1}, nil, ErrInvalidCommand},
		{"an invalid rental id", nil, OpenRequest{Renter: alice, RentalID: "", BikeID: "b1", MaxPending: 1}, nil, ErrInvalidCommand},
		{"no limit at all", nil, open(r1, "b1", 0), nil, ErrInvalidCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(Fold(tt.given), tt.when)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.then) {
				t.Fatalf("events = %#v, want %#v", got, tt.then)
			}
		})
	}
}

func TestOnlyTheLastEventMatters(t *testing.T) {
	// The state after a stream is the state after its last event alone: loading
	// reads one item however long the renter's history.
	history := []Event{requested(r1, "b1"), requested(r2, "b2", r1), requested(r3, "b3", r2)}
	if got, want := Fold(history), Fold(history[2:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("Fold(all) = %+v, Fold(last) = %+v", got, want)
	}
	if got := Fold(history).Candidates; !reflect.DeepEqual(got, []string{r2, r3}) {
		t.Fatalf("candidates = %v", got)
	}
}

func TestDecodeEvent(t *testing.T) {
	e, err := DecodeEvent("RentalRequested", []byte(`{"renter":"alice","rentalId":"`+r1+`","bikeId":"b1","outstanding":["x"]}`))
	if err != nil || !reflect.DeepEqual(e, requested(r1, "b1", "x")) {
		t.Fatalf("DecodeEvent = %#v, %v", e, err)
	}
	if _, err := DecodeEvent("Nope", []byte(`{}`)); !errors.Is(err, ErrUnknownEventType) {
		t.Fatalf("unknown type: %v", err)
	}
	if _, err := DecodeEvent("RentalRequested", []byte(`{`)); err == nil {
		t.Fatal("bad JSON decoded")
	}
}
