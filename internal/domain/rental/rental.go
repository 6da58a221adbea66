// Package rental is the decider for bikes: one event stream per bike records its
// registration and every rental request, approval, rejection and return.
// Decide and Evolve are pure; ids are chosen by the caller.
package rental

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/bikerental/bikerental/internal/domain/eventtype"
	"github.com/bikerental/bikerental/internal/domain/ident"
)

// Sentinel errors returned by Decide. Business refusals are meant to reach API
// clients as they are; ErrInvalidCommand marks a malformed command.
var (
	// ErrInvalidCommand wraps every refusal of a malformed command (empty or
	// malformed ids, a command for another bike's stream, an unknown command).
	ErrInvalidCommand = errors.New("invalid command")
	// ErrBikeNotRegistered is returned for any command but RegisterBike on a bike
	// that was never registered.
	ErrBikeNotRegistered = errors.New("bike is not registered")
	// ErrBikeUnavailable is returned by RequestBike while the bike is requested or rented.
	ErrBikeUnavailable = errors.New("bike is not available")
	// ErrRentalIDInUse is returned by RequestBike when the rental id was already
	// used on this bike by another renter.
	ErrRentalIDInUse = errors.New("rental id is already used by another renter")
	// ErrNoPendingRequest is returned when no pending request matches the
	// command's renter and rental id (including a rental that was rejected).
	ErrNoPendingRequest = errors.New("no pending request for this renter and rental")
	// ErrRequestAlreadyApproved is returned by RejectRequest for a rental that was
	// approved; the bike stays rented.
	ErrRequestAlreadyApproved = errors.New("request is already approved")
	// ErrBikeNotRented is returned by ReturnBike when the bike is not rented.
	ErrBikeNotRented = errors.New("bike is not rented")
	// ErrNotActiveRental is returned by ReturnBike with a rental id when that rental
	// is neither the bike's active rental nor one already returned.
	ErrNotActiveRental = errors.New("rental is not the bike's active rental")
	// ErrRentalReturned is returned by FlagOverdueReturn for a rental whose bike
	// was returned: it is not overdue any more.
	ErrRentalReturned = errors.New("rental's bike was returned")
	// ErrReturnNotDue is returned by FlagOverdueReturn before the rental's return is
	// due (approval time plus the rental period).
	ErrReturnNotDue = errors.New("rental's return is not due yet")
	// ErrInvalidRentalID is returned by BikeIDOf for a string that is not a rental
	// id made by NewRentalID.
	ErrInvalidRentalID = errors.New("not a valid rental id")
	// ErrUnknownEventType is returned, wrapped with the type name, by DecodeEvent
	// for a type not listed in EventTypes.
	ErrUnknownEventType = eventtype.ErrUnknown
)

// StreamID returns the event stream id of a bike: "bike-" + bikeID.
func StreamID(bikeID string) string { return "bike-" + bikeID }

// Identifier limits. A rental id is its bike's id, "_" and a RentalSuffixLength
// character alphanumeric suffix, so that the rental's bike can be found from the
// rental id alone (docs/decisions/0002-rental-ids-carry-their-bike.md); bike ids are
// kept short enough for the rental id, and the payment reference made from it, to
// stay within the 64 characters every id of the API may have.
const (
	MaxBikeIDLength    = 36
	RentalSuffixLength = 22
)

// ValidBikeID reports whether id can name a bike: 1 to MaxBikeIDLength characters
// of A-Z, a-z, 0-9, _ and -.
func ValidBikeID(id string) bool { return len(id) <= MaxBikeIDLength && ident.Valid(id) }

// NewRentalID returns the rental id for a request of bikeID, made unique by suffix,
// which must be RentalSuffixLength characters of A-Z, a-z and 0-9 (random, or
// derived from an idempotency key). BikeIDOf reverses it.
func NewRentalID(bikeID, suffix string) string { return bikeID + "_" + suffix }

// BikeIDOf returns the bike a rental id belongs to, or ErrInvalidRentalID if id is
// not of the form NewRentalID makes.
func BikeIDOf(rentalID string) (string, error) {
	cut := len(rentalID) - RentalSuffixLength - 1
	if cut < 1 || rentalID[cut] != '_' || !ident.Alphanumeric(rentalID[cut+1:]) || !ValidBikeID(rentalID[:cut]) {
		return "", fmt.Errorf("%w: %q", ErrInvalidRentalID, rentalID)
	}
	return rentalID[:cut], nil
}

// Status is where a bike is in its lifecycle.
type Status string

// Bike statuses. The zero Bike has an empty Status and is treated as unregistered.
const (
	StatusUnregistered Status = "unregistered"
	StatusAvailable    Status = "available"
	StatusRequested    Status = "requested"
	StatusRented       Status = "rented"
)

// Outcome is how far a rental got, or how it ended.
type Outcome string

// Rental outcomes. A returned rental had been approved.
const (
	OutcomeRequested Outcome = "requested"
	OutcomeApproved  Outcome = "approved"
	OutcomeRejected  Outcome = "rejected"
	OutcomeReturned  Outcome = "returned"
)

// DefaultPeriod is how long an approved rental lasts when no rental period is
// configured: its bike is due back two hours after the approval.
const DefaultPeriod = 2 * time.Hour

// ReturnDue returns when the bike of a rental approved at approvedAt is due back, for
// a rental period of period: the one rule of a rental's due time.
func ReturnDue(approvedAt time.Time, period time.Duration) time.Time { return approvedAt.Add(period) }

// Rental is what the bike remembers of one rental, so that repeated commands
// about an already settled rental can be recognised.
type Rental struct {
	Renter  string
	Outcome Outcome
}

// Bike is the state of one bike's stream. RentalID and Renter describe the
// current pending or active rental and are empty while the bike is available;
// DueAt is set while the current rental is flagged overdue (ReturnOverdue): when its
// bike was due back.
// Rentals holds the rentals the folded events mention, by rental id: every rental
// the bike has seen after a whole stream, the current one and the one a command
// names after bikestream.History. Evolve never mutates a Rentals map it was given,
// so earlier Bike values stay valid.
type Bike struct {
	ID         string
	Registered bool
	Status     Status
	RentalID   string
	Renter     string
	DueAt      time.Time
	Rentals    map[string]Rental
}

// Event is a fact in a bike's stream. EventType returns the struct's type name,
// which is the stored event type: renaming an event is a schema change.
type Event interface{ EventType() string }

// BikeRegistered records that a bike exists and is available.
type BikeRegistered struct {
	BikeID string `json:"bikeId"`
}

// BikeRequested records that a renter asked for the bike under a new rental id.
type BikeRequested struct {
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	RentalID string `json:"rentalId"`
}

// RequestApproved records that a pending request was approved; the bike is rented.
type RequestApproved struct {
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	RentalID string `json:"rentalId"`
}

// RequestRejected records that a pending request was rejected; the bike is available.
type RequestRejected struct {
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	RentalID string `json:"rentalId"`
}

// BikeReturned records that the renter of an approved rental returned the bike.
// Late is set when the rental had been flagged overdue (ReturnOverdue), and is
// absent from the returns recorded before rentals could be.
type BikeReturned struct {
	BikeID   string   `json:"bikeId"`
	Renter   string   `json:"renter"`
	RentalID string   `json:"rentalId"`
	Late     Lateness `json:"late,omitzero"`
}

// Lateness is how late an overdue rental's bike came back.
type Lateness struct {
	// DueAt is when the bike was due back (ReturnOverdue.DueAt).
	DueAt time.Time `json:"dueAt"`
	// ReturnedAt is when it came back.
	ReturnedAt time.Time `json:"returnedAt"`
	// Seconds is ReturnedAt minus DueAt in whole seconds, rounded down, never negative.
	Seconds int64 `json:"seconds"`
}

// lateness is how late a bike due at due came back at returned.
func lateness(due, returned time.Time) Lateness {
	return Lateness{DueAt: due, ReturnedAt: returned, Seconds: max(0, int64(returned.Sub(due)/time.Second))}
}

// ReturnOverdue records that the bike of the current, approved rental was not back
// by its due time: ApprovedAt (when RequestApproved was recorded) plus the rental
// period. It is recorded at most once per rental; the bike stays rented.
type ReturnOverdue struct {
	BikeID     string    `json:"bikeId"`
	Renter     string    `json:"renter"`
	RentalID   string    `json:"rentalId"`
	ApprovedAt time.Time `json:"approvedAt"`
	DueAt      time.Time `json:"dueAt"`
	FlaggedAt  time.Time `json:"flaggedAt"`
}

// EventType returns "BikeRegistered".
func (BikeRegistered) EventType() string { return "BikeRegistered" }

// EventType returns "BikeRequested".
func (BikeRequested) EventType() string { return "BikeRequested" }

// EventType returns "RequestApproved".
func (RequestApproved) EventType() string { return "RequestApproved" }

// EventType returns "RequestRejected".
func (RequestRejected) EventType() string { return "RequestRejected" }

// EventType returns "BikeReturned".
func (BikeReturned) EventType() string { return "BikeReturned" }

// EventType returns "ReturnOverdue".
func (ReturnOverdue) EventType() string { return "ReturnOverdue" }

// RentalOf returns the rental id an event concerns, or "" for an event about the
// bike alone (BikeRegistered).
func RentalOf(e Event) string {
	switch e := e.(type) {
	case BikeRequested:
		return e.RentalID
	case RequestApproved:
		return e.RentalID
	case RequestRejected:
		return e.RentalID
	case BikeReturned:
		return e.RentalID
	case ReturnOverdue:
		return e.RentalID
	}
	return ""
}

// events declares the bike's events: their names, structs and decoder.
var events = eventtype.Declare[Event]("rental",
	eventtype.Of[BikeRegistered](),
	eventtype.Of[BikeRequested](),
	eventtype.Of[RequestApproved](),
	eventtype.Of[RequestRejected](),
	eventtype.Of[BikeReturned](),
	eventtype.Of[ReturnOverdue](),
)

// EventTypes returns the type name of every event of this package, in a new slice.
func EventTypes() []string { return events.Types() }

// DecodeEvent decodes stored JSON data into the event struct (a value, not a
// pointer) named by eventType. Unknown JSON fields are ignored so that older code
// reads newer events; invalid JSON is an error wrapping the json error. An
// unknown eventType yields an error wrapping ErrUnknownEventType.
func DecodeEvent(eventType string, data []byte) (Event, error) { return events.Decode(eventType, data) }

// Command is a request to a bike's stream. Only this package's command structs
// implement it.
type Command interface{ isCommand() }

// RegisterBike asks to register a bike; repeating it changes nothing.
type RegisterBike struct {
	BikeID string `json:"bikeId"`
}

// RequestBike asks for an available bike under a fresh, caller-chosen rental id.
type RequestBike struct {
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	RentalID string `json:"rentalId"`
}

// ApproveRequest asks to approve the pending request of Renter under RentalID.
type ApproveRequest struct {
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	RentalID string `json:"rentalId"`
}

// RejectRequest asks to reject the pending request of Renter under RentalID,
// releasing the bike. It never affects any other rental.
type RejectRequest struct {
	BikeID   string `json:"bikeId"`
	Renter   string `json:"renter"`
	RentalID string `json:"rentalId"`
}

// ReturnBike asks to end the bike's active rental. With RentalID it asks to end that
// rental only: a repeat after the rental was returned does nothing, even if the bike
// has been rented again since, and a rental that is not the active one is refused.
// Without it, it ends whichever rental is active. At is when the bike came back: the
// command side's clock, which a return of a rental flagged overdue needs to record
// how late it was.
type ReturnBike struct {
	BikeID   string    `json:"bikeId"`
	RentalID string    `json:"rentalId,omitempty"`
	At       time.Time `json:"at,omitzero"`
}

// FlagOverdueReturn asks to record that the current rental RentalID is overdue:
// its bike was due back at ApprovedAt (when its RequestApproved was recorded) plus
// Period, and At (the command side's clock) is past it. It is declined when the bike
// was returned meanwhile (ErrRentalReturned), when RentalID is not the bike's
// current, approved rental (ErrNotActiveRental, or ErrBikeNotRegistered on a bike
// never registered), or before the due time (ErrReturnNotDue); repeating it once
// it took effect changes nothing. The sender names the rental alone: the command
// side fills in ApprovedAt, Period and At.
type FlagOverdueReturn struct {
	RentalID   string        `json:"rentalId"`
	ApprovedAt time.Time     `json:"approvedAt,omitzero"`
	Period     time.Duration `json:"period,omitempty"`
	At         time.Time     `json:"at,omitzero"`
}

func (RegisterBike) isCommand()      {}
func (RequestBike) isCommand()       {}
func (ApproveRequest) isCommand()    {}
func (RejectRequest) isCommand()     {}
func (ReturnBike) isCommand()        {}
func (FlagOverdueReturn) isCommand() {}

// Fold applies events in order to the initial state, an unregistered Bike. The
// events may be any suffix of the bike's stream, optionally preceded by earlier
// records of one rental (bikestream.History): the bike's current state is its
// newest event's, and Rentals holds the rentals the events mention.
func Fold(events []Event) Bike {
	s := Bike{Status: StatusUnregistered}
	// The Rentals map is Fold's own until it returns, so it is written in place
	// rather than copied for every event, which would cost time quadratic in the
	// events' number.
	for _, e := range events {
		s = evolve(s, e, true)
	}
	return s
}

// Evolve returns the state after event e. It is pure: it never mutates s
// (Rentals is copied on write), and unknown events return s unchanged. An event
// about the current rental, or about a rental the state has not seen (the folded
// events began after its request), sets the bike's state from that event alone:
// only the current rental ever gets an event, so in a stream the newest event says
// it all, and a command can decide on the stream's tail. An approval, rejection or
// return of a rental already seen that is not the current one is stale and leaves
// the bike's status alone.
func Evolve(s Bike, e Event) Bike { return evolve(s, e, false) }

// evolve is Evolve, writing s.Rentals in place when the caller owns it.
func evolve(s Bike, e Event, owned bool) Bike {
	stale := func(id string) bool {
		_, seen := s.Rentals[id]
		return seen && s.RentalID != id
	}
	switch e := e.(type) {
	case BikeRegistered:
		if !s.Registered {
			s.ID, s.Registered, s.Status = e.BikeID, true, StatusAvailable
		}
	case BikeRequested:
		s = markRegistered(s, e.BikeID)
		s.Status, s.RentalID, s.Renter, s.DueAt = StatusRequested, e.RentalID, e.Renter, time.Time{}
		s.Rentals = with(s.Rentals, owned, e.RentalID, Rental{e.Renter, OutcomeRequested})
	case RequestApproved:
		s = markRegistered(s, e.BikeID)
		if !stale(e.RentalID) {
			s.Status, s.RentalID, s.Renter, s.DueAt = StatusRented, e.RentalID, e.Renter, time.Time{}
		}
		s.Rentals = with(s.Rentals, owned, e.RentalID, Rental{e.Renter, OutcomeApproved})
	case RequestRejected:
		s = markRegistered(s, e.BikeID)
		if !stale(e.RentalID) {
			s.Status, s.RentalID, s.Renter, s.DueAt = StatusAvailable, "", "", time.Time{}
		}
		s.Rentals = with(s.Rentals, owned, e.RentalID, Rental{e.Renter, OutcomeRejected})
	case BikeReturned:
		s = markRegistered(s, e.BikeID)
		if !stale(e.RentalID) {
			s.Status, s.RentalID, s.Renter, s.DueAt = StatusAvailable, "", "", time.Time{}
		}
		s.Rentals = with(s.Rentals, owned, e.RentalID, Rental{e.Renter, OutcomeReturned})
	case ReturnOverdue:
		// Only the current, approved rental is ever flagged: a flag of one already
		// seen that is not current (a fold of a rental's records, then the tail)
		// tells nothing the state does not know.
		s = markRegistered(s, e.BikeID)
		if !stale(e.RentalID) {
			s.Status, s.RentalID, s.Renter, s.DueAt = StatusRented, e.RentalID, e.Renter, e.DueAt
			s.Rentals = with(s.Rentals, owned, e.RentalID, Rental{e.Renter, OutcomeApproved})
		}
	}
	return s
}

// markRegistered marks s registered: a bike has events about rentals only once it is.
func markRegistered(s Bike, bikeID string) Bike {
	if !s.Registered {
		s.ID, s.Registered = bikeID, true
	}
	return s
}

// with returns m with id set to r: m itself when owned, else a copy.
func with(m map[string]Rental, owned bool, id string, r Rental) map[string]Rental {
	if !owned {
		m = maps.Clone(m)
	}
	if m == nil {
		m = make(map[string]Rental, 1)
	}
	m[id] = r
	return m
}

// Decide returns the events that command c produces on bike s, or the reason it
// is refused. It returns nil, nil when c repeats a command that already took
// effect (safe to call twice), except ReturnBike, whose repeat finds the bike
// not rented. Malformed commands yield an error wrapping ErrInvalidCommand;
// business refusals are the package's other sentinel errors.
func Decide(s Bike, c Command) ([]Event, error) {
	if err := validate(s, c); err != nil {
		return nil, fmt.Errorf("rental: %w: %w", ErrInvalidCommand, err)
	}
	if _, ok := c.(RegisterBike); !ok && !s.Registered {
		return nil, ErrBikeNotRegistered
	}
	switch c := c.(type) {
	case RegisterBike:
		if s.Registered {
			return nil, nil
		}
		return []Event{BikeRegistered(c)}, nil

	case RequestBike:
		if r, ok := s.Rentals[c.RentalID]; ok {
			if r.Renter != c.Renter {
				return nil, ErrRentalIDInUse
			}
			return nil, nil // a retry of a request that already took effect
		}
		if s.Status != StatusAvailable {
			return nil, ErrBikeUnavailable
		}
		return []Event{BikeRequested(c)}, nil

	case ApproveRequest:
		if s.pending(c.Renter, c.RentalID) {
			return []Event{RequestApproved(c)}, nil
		}
		if o := s.outcome(c.Renter, c.RentalID); o == OutcomeApproved || o == OutcomeReturned {
			return nil, nil
		}
		return nil, ErrNoPendingRequest

	case RejectRequest:
		if s.pending(c.Renter, c.RentalID) {
			return []Event{RequestRejected(c)}, nil
		}
		switch s.outcome(c.Renter, c.RentalID) {
		case OutcomeRejected:
			return nil, nil
		case OutcomeApproved, OutcomeReturned:
			return nil, ErrRequestAlreadyApproved
		}
		return nil, ErrNoPendingRequest

	case ReturnBike:
		if c.RentalID != "" && !(s.Status == StatusRented && s.RentalID == c.RentalID) {
			if r, ok := s.Rentals[c.RentalID]; ok && r.Outcome == OutcomeReturned {
				return nil, nil // a retry of a return that already took effect
			}
			return nil, ErrNotActiveRental
		}
		if s.Status != StatusRented {
			return nil, ErrBikeNotRented
		}
		returned := BikeReturned{BikeID: s.ID, Renter: s.Renter, RentalID: s.RentalID}
		if !s.DueAt.IsZero() {
			if c.At.IsZero() {
				return nil, fmt.Errorf("rental: %w: the return of rental %s, flagged overdue, needs the time it happened", ErrInvalidCommand, s.RentalID)
			}
			returned.Late = lateness(s.DueAt, c.At)
		}
		return []Event{returned}, nil

	case FlagOverdueReturn:
		switch {
		case s.Rentals[c.RentalID].Outcome == OutcomeReturned:
			return nil, ErrRentalReturned
		case s.Status != StatusRented || s.RentalID != c.RentalID:
			return nil, ErrNotActiveRental
		case !s.DueAt.IsZero():
			return nil, nil // flagged already
		case c.ApprovedAt.IsZero() || c.Period <= 0 || c.At.IsZero():
			return nil, fmt.Errorf("rental: %w: flagging rental %s needs its approval time, a positive rental period and the time now", ErrInvalidCommand, c.RentalID)
		}
		due := ReturnDue(c.ApprovedAt, c.Period)
		if c.At.Before(due) {
			return nil, fmt.Errorf("%w: rental %s is due back at %s", ErrReturnNotDue, c.RentalID, due.UTC().Format(time.RFC3339))
		}
		return []Event{ReturnOverdue{BikeID: s.ID, Renter: s.Renter, RentalID: c.RentalID, ApprovedAt: c.ApprovedAt, DueAt: due, FlaggedAt: c.At}}, nil
	}
	return nil, fmt.Errorf("rental: %w: unknown command %T", ErrInvalidCommand, c)
}

// pending reports whether renter's request under rentalID is the bike's current,
// undecided one.
func (s Bike) pending(renter, rentalID string) bool {
	return s.Status == StatusRequested && s.RentalID == rentalID && s.Renter == renter
}

// outcome returns how renter's rental under rentalID ended, or "" if the bike
// has no such rental.
func (s Bike) outcome(renter, rentalID string) Outcome {
	if r, ok := s.Rentals[rentalID]; ok && r.Renter == renter {
		return r.Outcome
	}
	return ""
}

func validate(s Bike, c Command) error {
	var bikeID string
	switch c := c.(type) {
	case RegisterBike:
		bikeID = c.BikeID
	case FlagOverdueReturn:
		owner, err := BikeIDOf(c.RentalID)
		if err != nil {
			return fmt.Errorf("rentalId: %w", err)
		}
		bikeID = owner
	case ReturnBike:
		bikeID = c.BikeID
		if c.RentalID != "" {
			if owner, err := BikeIDOf(c.RentalID); err != nil || owner != c.BikeID {
				return fmt.Errorf("rentalId %q is not a rental of bike %q", c.RentalID, c.BikeID)
			}
		}
	case RequestBike:
		bikeID = c.BikeID
		if err := validateRental(c.BikeID, c.Renter, c.RentalID); err != nil {
			return err
		}
	case ApproveRequest:
		bikeID = c.BikeID
		if err := validateRental(c.BikeID, c.Renter, c.RentalID); err != nil {
			return err
		}
	case RejectRequest:
		bikeID = c.BikeID
		if err := validateRental(c.BikeID, c.Renter, c.RentalID); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown command %T", c)
	}
	switch {
	case bikeID == "":
		return errors.New("bikeId is required")
	case !ValidBikeID(bikeID):
		return fmt.Errorf("bikeId %q must be 1 to %d characters of A-Z, a-z, 0-9, _ or -", bikeID, MaxBikeIDLength)
	case s.Registered && s.ID != bikeID:
		return fmt.Errorf("command for bike %q sent to bike %q", bikeID, s.ID)
	}
	return nil
}

func validateRental(bikeID, renter, rentalID string) error {
	if renter == "" {
		return errors.New("renter is required")
	}
	if !ident.Valid(renter) {
		return fmt.Errorf("renter %q must match %s", renter, ident.Pattern)
	}
	owner, err := BikeIDOf(rentalID)
	if err != nil {
		return fmt.Errorf("rentalId: %w", err)
	}
	if owner != bikeID {
		return fmt.Errorf("rentalId %q belongs to bike %q, not %q", rentalID, owner, bikeID)
	}
	return nil
}
