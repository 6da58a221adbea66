package rental

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/ident"
)

const (
	bike  = "b1"
	alice = "alice"
	bob   = "bob"
	r1    = bike + "_AAAAAAAAAAAAAAAAAAAAA1"
	r2    = bike + "_AAAAAAAAAAAAAAAAAAAAA2"
)

var (
	registered = BikeRegistered{BikeID: bike}
	requested1 = BikeRequested{BikeID: bike, Renter: alice, RentalID: r1}
	approved1  = RequestApproved{BikeID: bike, Renter: alice, RentalID: r1}
	rejected1  = RequestRejected{BikeID: bike, Renter: alice, RentalID: r1}
	returned1  = BikeReturned{BikeID: bike, Renter: alice, RentalID: r1}
	requested2 = BikeRequested{BikeID: bike, Renter: bob, RentalID: r2}
	approved2  = RequestApproved{BikeID: bike, Renter: bob, RentalID: r2}
	returned2  = BikeReturned{BikeID: bike, Renter: bob, RentalID: r2}
)

func request(renter, id string) RequestBike {
	return RequestBike{BikeID: bike, Renter: renter, RentalID: id}
}
func approve(renter, id string) ApproveRequest {
	return ApproveRequest{BikeID: bike, Renter: renter, RentalID: id}
}
func reject(renter, id string) RejectRequest {
	return RejectRequest{BikeID: bike, Renter: renter, RentalID: id}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name  string
		given []Event
		when  Command
		then  []Event // nil means "no events"
		err   error
	}{
		// RegisterBike
		{"register new bike", nil, RegisterBike{BikeID: bike}, []Event{registered}, nil},
		{"register again is a no-op", []Event{registered}, RegisterBike{BikeID: bike}, nil, nil},
		{"register again while rented is a no-op", []Event{registered, requested1, approved1}, RegisterBike{BikeID: bike}, nil, nil},

		// RequestBike
		{"request available bike", []Event{registered}, request(alice, r1), []Event{requested1}, nil},
		{"request after a return", []Event{registered, requested1, approved1, returned1}, request(bob, r2), []Event{requested2}, nil},
		{"request after a rejection", []Event{registered, requested1, rejected1}, request(bob, r2), []Event{requested2}, nil},
		{"request unregistered bike", nil, request(alice, r1), nil, ErrBikeNotRegistered},
		{"request requested bike", []Event{registered, requested1}, request(bob, r2), nil, ErrBikeUnavailable},
		{"request rented bike", []Event{registered, requested1, approved1}, request(bob, r2), nil, ErrBikeUnavailable},
		{"retried request while pending", []Event{registered, requested1}, request(alice, r1), nil, nil},
		{"retried request after approval", []Event{registered, requested1, approved1}, request(alice, r1), nil, nil},
		{"retried request after rejection", []Event{registered, requested1, rejected1}, request(alice, r1), nil, nil},
		{"retried request after return", []Event{registered, requested1, approved1, returned1}, request(alice, r1), nil, nil},
		{"rental id reused by another renter", []Event{registered, requested1, rejected1}, request(bob, r1), nil, ErrRentalIDInUse},

		// ApproveRequest
		{"approve pending request", []Event{registered, requested1}, approve(alice, r1), []Event{approved1}, nil},
		{"approve again", []Event{registered, requested1, approved1}, approve(alice, r1), nil, nil},
		{"approve again after return", []Event{registered, requested1, approved1, returned1}, approve(alice, r1), nil, nil},
		{"approve again after return and new rental", []Event{registered, requested1, approved1, returned1, requested2}, approve(alice, r1), nil, nil},
		{"approve rejected request", []Event{registered, requested1, rejected1}, approve(alice, r1), nil, ErrNoPendingRequest},
		{"approve with another renter", []Event{registered, requested1}, approve(bob, r1), nil, ErrNoPendingRequest},
		{"approve with another rental id", []Event{registered, requested1}, approve(alice, r2), nil, ErrNoPendingRequest},
		{"approve on available bike", []Event{registered}, approve(alice, r1), nil, ErrNoPendingRequest},
		{"approve old rejected rental while a newer one is pending", []Event{registered, requested1, rejected1, requested2}, approve(alice, r1), nil, ErrNoPendingRequest},
		{"approve approved rental with another renter", []Event{registered, requested1, approved1}, approve(bob, r1), nil, ErrNoPendingRequest},
		{"approve on unregistered bike", nil, approve(alice, r1), nil, ErrBikeNotRegistered},

		// RejectRequest
		{"reject pending request", []Event{registered, requested1}, reject(alice, r1), []Event{rejected1}, nil},
		{"reject again", []Event{registered, requested1, rejected1}, reject(alice, r1), nil, nil},
		{"reject again while a newer rental is pending", []Event{registered, requested1, rejected1, requested2}, reject(alice, r1), nil, nil},
		{"reject approved request", []Event{registered, requested1, approved1}, reject(alice, r1), nil, ErrRequestAlreadyApproved},
		{"reject returned request", []Event{registered, requested1, approved1, returned1}, reject(alice, r1), nil, ErrRequestAlreadyApproved},
		{"reject returned request while a newer rental is pending", []Event{registered, requested1, approved1, returned1, requested2}, reject(alice, r1), nil, ErrRequestAlreadyApproved},
		{"reject with another renter", []Event{registered, requested1}, reject(bob, r1), nil, ErrNoPendingRequest},
		{"reject with another rental id", []Event{registered, requested1}, reject(alice, r2), nil, ErrNoPendingRequest},
		{"reject on available bike", []Event{registered}, reject(alice, r1), nil, ErrNoPendingRequest},
		{"reject on unregistered bike", nil, reject(alice, r1), nil, ErrBikeNotRegistered},

		// ReturnBike
		{"return rented bike", []Event{registered, requested1, approved1}, ReturnBike{BikeID: bike}, []Event{returned1}, nil},
		{"return second rental", []Event{registered, requested1, approved1, returned1, requested2, approved2}, ReturnBike{BikeID: bike}, []Event{returned2}, nil},
		{"return twice", []Event{registered, requested1, approved1, returned1}, ReturnBike{BikeID: bike}, nil, ErrBikeNotRented},
		{"return available bike", []Event{registered}, ReturnBike{BikeID: bike}, nil, ErrBikeNotRented},
		{"return requested bike", []Event{registered, requested1}, ReturnBike{BikeID: bike}, nil, ErrBikeNotRented},
		{"return unregistered bike", nil, ReturnBike{BikeID: bike}, nil, ErrBikeNotRegistered},
		{"return a named rental", []Event{registered, requested1, approved1}, ReturnBike{BikeID: bike, RentalID: r1}, []Event{returned1}, nil},
		{"return a named rental again", []Event{registered, requested1, approved1, returned1}, ReturnBike{BikeID: bike, RentalID: r1}, nil, nil},
		{"return a named rental again after the bike was rented again", []Event{registered, requested1, approved1, returned1, requested2, approved2}, ReturnBike{BikeID: bike, RentalID: r1}, nil, nil},
		{"return a named rental that is not the active one", []Event{registered, requested1, approved1}, ReturnBike{BikeID: bike, RentalID: r2}, nil, ErrNotActiveRental},
		{"return a named rental still pending", []Event{registered, requested1}, ReturnBike{BikeID: bike, RentalID: r1}, nil, ErrNotActiveRental},
		{"return a named rental that was rejected", []Event{registered, requested1, rejected1}, ReturnBike{BikeID: bike, RentalID: r1}, nil, ErrNotActiveRental},
		{"return naming another bike's rental", []Event{registered, requested1, approved1}, ReturnBike{BikeID: bike, RentalID: NewRentalID("b2", "AAAAAAAAAAAAAAAAAAAAA1")}, nil, ErrInvalidCommand},
		{"return naming a malformed rental", []Event{registered, requested1, approved1}, ReturnBike{BikeID: bike, RentalID: "r 1"}, nil, ErrInvalidCommand},

		// Invalid commands
		{"nil command", nil, nil, nil, ErrInvalidCommand},
		{"register without bike id", nil, RegisterBike{}, nil, ErrInvalidCommand},
		{"return without bike id", []Event{registered}, ReturnBike{}, nil, ErrInvalidCommand},
		{"request without bike id", []Event{registered}, RequestBike{Renter: alice, RentalID: r1}, nil, ErrInvalidCommand},
		{"request without renter", []Event{registered}, RequestBike{BikeID: bike, RentalID: r1}, nil, ErrInvalidCommand},
		{"request without rental id", []Event{registered}, RequestBike{BikeID: bike, Renter: alice}, nil, ErrInvalidCommand},
		{"request with malformed rental id", []Event{registered}, request(alice, "r 1"), nil, ErrInvalidCommand},
		{"request with too long rental id", []Event{registered}, request(alice, strings.Repeat("a", 65)), nil, ErrInvalidCommand},
		{"request with short suffix", []Event{registered}, request(alice, bike+"_AAAA"), nil, ErrInvalidCommand},
		{"request with another bike's rental id", []Event{registered}, request(alice, NewRentalID("b2", "AAAAAAAAAAAAAAAAAAAAA1")), nil, ErrInvalidCommand},
		{"request with malformed renter", []Event{registered}, request("a lice", r1), nil, ErrInvalidCommand},
		{"register a bike id over 36 characters", nil, RegisterBike{BikeID: strings.Repeat("b", 37)}, nil, ErrInvalidCommand},
		{"register a bike id with a slash", nil, RegisterBike{BikeID: "b/1"}, nil, ErrInvalidCommand},
		{"approve without renter", []Event{registered, requested1}, approve("", r1), nil, ErrInvalidCommand},
		{"reject without rental id", []Event{registered, requested1}, reject(alice, ""), nil, ErrInvalidCommand},
		{"command for another bike", []Event{registered}, RequestBike{BikeID: "b2", Renter: alice, RentalID: r1}, nil, ErrInvalidCommand},
		{"register another bike on this stream", []Event{registered}, RegisterBike{BikeID: "b2"}, nil, ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(Fold(tc.given), tc.when)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Decide error = %v, want %v", err, tc.err)
			}
			if tc.then == nil && got != nil || !slices.Equal(got, tc.then) {
				t.Fatalf("Decide events = %#v, want %#v", got, tc.then)
			}
			if len(got) == 0 {
				return
			}
			// Once its events are applied, repeating the command changes nothing.
			again, err := Decide(Fold(append(slices.Clone(tc.given), got...)), tc.when)
			if c, ok := tc.when.(ReturnBike); ok && c.RentalID == "" {
				if !errors.Is(err, ErrBikeNotRented) {
					t.Fatalf("repeated ReturnBike error = %v, want %v", err, ErrBikeNotRented)
				}
				return
			}
			if again != nil || err != nil {
				t.Fatalf("repeated command = %#v, %v; want nil, nil", again, err)
			}
		})
	}
}

func TestEvolve(t *testing.T) {
	tests := []struct {
		name  string
		given []Event
		want  Bike
	}{
		{"no events", nil, Bike{Status: StatusUnregistered}},
		{"registered", []Event{registered}, Bike{ID: bike, Registered: true, Status: StatusAvailable}},
		{"registered twice", []Event{registered, requested1, registered},
			Bike{ID: bike, Registered: true, Status: StatusRequested, RentalID: r1, Renter: alice,
				Rentals: map[string]Rental{r1: {alice, OutcomeRequested}}}},
		{"requested", []Event{registered, requested1},
			Bike{ID: bike, Registered: true, Status: StatusRequested, RentalID: r1, Renter: alice,
				Rentals: map[string]Rental{r1: {alice, OutcomeRequested}}}},
		{"approved", []Event{registered, requested1, approved1},
			Bike{ID: bike, Registered: true, Status: StatusRented, RentalID: r1, Renter: alice,
				Rentals: map[string]Rental{r1: {alice, OutcomeApproved}}}},
		{"rejected", []Event{registered, requested1, rejected1},
			Bike{ID: bike, Registered: true, Status: StatusAvailable,
				Rentals: map[string]Rental{r1: {alice, OutcomeRejected}}}},
		{"returned then requested again", []Event{registered, requested1, approved1, returned1, requested2},
			Bike{ID: bike, Registered: true, Status: StatusRequested, RentalID: r2, Renter: bob,
				Rentals: map[string]Rental{r1: {alice, OutcomeReturned}, r2: {bob, OutcomeRequested}}}},
		{"stale rejection leaves the current rental alone", []Event{registered, requested1, rejected1, requested2, rejected1},
			Bike{ID: bike, Registered: true, Status: StatusRequested, RentalID: r2, Renter: bob,
				Rentals: map[string]Rental{r1: {alice, OutcomeRejected}, r2: {bob, OutcomeRequested}}}},
		{"unknown event", []Event{registered, unknownEvent{}},
			Bike{ID: bike, Registered: true, Status: StatusAvailable}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fold(tc.given); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Fold = %#v, want %#v", got, tc.want)
			}
		})
	}
}

type unknownEvent struct{}

func (unknownEvent) EventType() string { return "Unknown" }

func TestEvolveDoesNotMutateEarlierState(t *testing.T) {
	before := Fold([]Event{registered, requested1})
	snapshot := maps.Clone(before.Rentals)
	after := Evolve(before, rejected1)
	after = Evolve(after, requested2)
	if !reflect.DeepEqual(before.Rentals, snapshot) {
		t.Fatalf("earlier state's Rentals changed to %v, want %v", before.Rentals, snapshot)
	}
	if before.Status != StatusRequested || before.RentalID != r1 {
		t.Fatalf("earlier state changed: %+v", before)
	}
	if len(after.Rentals) != 2 {
		t.Fatalf("later state Rentals = %v, want two rentals", after.Rentals)
	}
}

// TestFoldIsEvolveInOrder checks that Fold, which writes its own Rentals map in
// place, ends where applying Evolve to each event does, and shares no map with a
// state folded before.
func TestFoldIsEvolveInOrder(t *testing.T) {
	history := []Event{registered}
	for i := range 40 {
		id := NewRentalID(bike, strings.Repeat("A", RentalSuffixLength-2)+string(rune('a'+i%26))+string(rune('a'+i/26)))
		history = append(history, BikeRequested{BikeID: bike, Renter: alice, RentalID: id})
		switch i % 3 {
		case 0:
			history = append(history, RequestRejected{BikeID: bike, Renter: alice, RentalID: id})
		default:
			history = append(history, RequestApproved{BikeID: bike, Renter: alice, RentalID: id},
				BikeReturned{BikeID: bike, Renter: alice, RentalID: id})
		}
	}
	want := Bike{Status: StatusUnregistered}
	for _, e := range history {
		want = Evolve(want, e)
	}
	shorter := Fold(history[:10])
	snapshot := maps.Clone(shorter.Rentals)
	got := Fold(history)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fold = %+v, want %+v", got, want)
	}
	if len(got.Rentals) != 40 || !reflect.DeepEqual(shorter.Rentals, snapshot) {
		t.Fatalf("Fold shares its map: %d rentals, earlier fold's changed to %v", len(got.Rentals), shorter.Rentals)
	}
}

var allEvents = []Event{registered, requested1, approved1, rejected1, returned1, overdue1}

func TestEventTypes(t *testing.T) {
	var names []string
	for _, e := range allEvents {
		if name := reflect.TypeOf(e).Name(); e.EventType() != name {
			t.Errorf("%s.EventType() = %q, want the type name", name, e.EventType())
		}
		names = append(names, e.EventType())
	}
	if got := EventTypes(); !slices.Equal(got, names) {
		t.Fatalf("EventTypes() = %v, want %v", got, names)
	}
}

func TestDecodeEventRoundTrip(t *testing.T) {
	for _, e := range allEvents {
		t.Run(e.EventType(), func(t *testing.T) {
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEvent(e.EventType(), data)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if got != e {
				t.Fatalf("DecodeEvent = %#v, want %#v", got, e)
			}
		})
	}
}

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name, eventType, data string
		want                  Event
		err                   error
	}{
		{"camelCase fields", "BikeRequested", `{"bikeId":"b1","renter":"alice","rentalId":"b1_AAAAAAAAAAAAAAAAAAAAA1"}`, requested1, nil},
		{"unknown fields are ignored", "BikeRegistered", `{"bikeId":"b1","colour":"red"}`, registered, nil},
		{"unknown event type", "BikeStolen", `{}`, nil, ErrUnknownEventType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEvent(tc.eventType, []byte(tc.data))
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("DecodeEvent = %#v, %v; want %#v, %v", got, err, tc.want, tc.err)
			}
		})
	}
	for _, data := range []string{`{"bikeId":`, `{"bikeId":42}`, ``, `{} {}`} {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if _, err := DecodeEvent("BikeRegistered", []byte(data)); !errors.As(err, &syntax) && !errors.As(err, &typ) {
			t.Errorf("DecodeEvent(%q) error = %v, want a json error", data, err)
		}
	}
}

func TestStreamID(t *testing.T) {
	if got := StreamID("b1"); got != "bike-b1" {
		t.Fatalf(`StreamID("b1") = %q, want "bike-b1"`, got)
	}
}

func TestRentalIDCarriesItsBike(t *testing.T) {
	longest := strings.Repeat("b", MaxBikeIDLength)
	for _, bikeID := range []string{"b1", "bike_with_underscores", "x", longest} {
		id := NewRentalID(bikeID, "Zz09Zz09Zz09Zz09Zz09Zz")
		got, err := BikeIDOf(id)
		if err != nil || got != bikeID {
			t.Errorf("BikeIDOf(%q) = %q, %v; want %q", id, got, err, bikeID)
		}
		if !ident.Valid(id) {
			t.Errorf("rental id %q is not a valid id", id)
		}
	}
	for _, bad := range []string{"", "_AAAAAAAAAAAAAAAAAAAAA1", "b1-AAAAAAAAAAAAAAAAAAAAA1", "b1_AAAAAAAAAAAAAAAAAAAA-1", "b1_short",
		strings.Repeat("b", MaxBikeIDLength+1) + "_AAAAAAAAAAAAAAAAAAAAA1", "b 1_AAAAAAAAAAAAAAAAAAAAA1"} {
		if _, err := BikeIDOf(bad); !errors.Is(err, ErrInvalidRentalID) {
			t.Errorf("BikeIDOf(%q): err = %v, want ErrInvalidRentalID", bad, err)
		}
	}
}

// TestFoldOfATail: a fold that begins after a rental's request, as a command's does
// on the stream's tail (bikestream.History), takes the bike's state from the first
// event about a rental it has not seen.
func TestFoldOfATail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		given []Event
		want  Bike
	}{
		{"an approval first: rented", []Event{approved1},
			Bike{ID: bike, Registered: true, Status: StatusRented, RentalID: r1, Renter: alice, Rentals: map[string]Rental{r1: {alice, OutcomeApproved}}}},
		{"a return, then a request", []Event{returned1, requested2},
			Bike{ID: bike, Registered: true, Status: StatusRequested, RentalID: r2, Renter: bob,
				Rentals: map[string]Rental{r1: {alice, OutcomeReturned}, r2: {bob, OutcomeRequested}}}},
		{"a rejection first: available", []Event{rejected1},
			Bike{ID: bike, Registered: true, Status: StatusAvailable, Rentals: map[string]Rental{r1: {alice, OutcomeRejected}}}},
		{"an older rental's records, then the tail's", []Event{requested1, approved1, returned1, approved2},
			Bike{ID: bike, Registered: true, Status: StatusRented, RentalID: r2, Renter: bob,
				Rentals: map[string]Rental{r1: {alice, OutcomeReturned}, r2: {bob, OutcomeApproved}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fold(tc.given); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Fold = %#v, want %#v", got, tc.want)
			}
		})
	}
}
