// Package rentalview builds what an operator reads about one rental: its status and
// its history, every event of its bike, its payment and its process that belongs to
// it, in order. It reads the event store alone.
package rentalview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/bikerental/bikerental/internal/app/bikestream"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// ErrNotFound reports that no bike was ever requested under the rental id.
var ErrNotFound = errors.New("rental not found")

// Status is where a rental stands.
type Status string

// Rental statuses.
const (
	StatusRequested       Status = "requested"        // the bike is held, no payment yet
	StatusAwaitingPayment Status = "awaiting-payment" // a payment is prepared
	StatusApproved        Status = "approved"         // paid, the renter has the bike
	StatusOverdue         Status = "overdue"          // approved, and the bike was not back by its due time
	StatusReturned        Status = "returned"         // approved and the bike came back
	StatusRejecting       Status = "rejecting"        // the payment was refused; the bike is being released
	StatusRejected        Status = "rejected"         // the payment was refused, the bike is free, the process ended
	StatusCancelling      Status = "cancelling"       // the payment was called off; the bike is being released
	StatusCancelled       Status = "cancelled"        // the payment was called off, the bike is free, the process ended
)

// Statuses returns every status, in the order a rental reaches them.
func Statuses() []Status {
	return []Status{StatusRequested, StatusAwaitingPayment, StatusApproved, StatusOverdue, StatusReturned,
		StatusRejecting, StatusRejected, StatusCancelling, StatusCancelled}
}

// BikeOut reports whether the renter has the bike: a return can be recorded.
func (s Status) BikeOut() bool { return s == StatusApproved || s == StatusOverdue }

// PaymentOpen reports whether the rental's payment is prepared and neither
// settled nor called off: cancelling it can still succeed.
func (s Status) PaymentOpen() bool { return s == StatusAwaitingPayment }

// Moving reports whether the rental will reach another status without anyone
// acting on it: its payment is on its way, or its bike is being released.
func (s Status) Moving() bool {
	return s == StatusRequested || s == StatusAwaitingPayment || s == StatusCancelling || s == StatusRejecting
}

// View is one rental as an operator sees it.
type View struct {
	RentalID         string   `json:"rentalId"`
	BikeID           string   `json:"bikeId"`
	Renter           string   `json:"renter"`
	Status           Status   `json:"status"`
	PaymentReference string   `json:"paymentReference"`
	Payment          *Payment `json:"payment,omitempty"`
	Overdue          *Overdue `json:"overdue,omitempty"`
	History          []Entry  `json:"history"`
}

// Overdue is what a rental whose return was flagged overdue (rental.ReturnOverdue)
// shows of it: when the bike was due, and, once it came back, how late.
type Overdue struct {
	// DueAt is when the bike was due back: its approval's time plus the rental period.
	DueAt time.Time `json:"dueAt"`
	// FlaggedAt is when the return was flagged overdue.
	FlaggedAt time.Time `json:"flaggedAt,omitzero"`
	// ReturnedAt is when the bike came back, once it did.
	ReturnedAt *time.Time `json:"returnedAt,omitempty"`
	// LateSeconds is how late it came back, in whole seconds, once it did.
	LateSeconds *int64 `json:"lateSeconds,omitempty"`
}

// Payment is what the rental's payment stands at: how a client pays it, and where
// any money taken after it was given up on stands.
type Payment struct {
	// PaymentID is the provider's id of the payment: what a client of a provider
	// that only calls back needs to pay.
	PaymentID string `json:"paymentId"`
	// ClientSecret is what a Stripe client needs to pay. Load fills it in only while
	// the payment can be paid (payment.Payment.Payable, and the rental awaits the
	// payment: no cancellation or rejection under way); it is for the renter alone,
	// and WithoutSecrets removes it for every other reader.
	ClientSecret string `json:"clientSecret,omitempty"`
	// Amount is what the payment was prepared for, in minor units of Currency
	// (ISO 4217).
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// Taken is what the provider took after the payment was given up on, as it
	// reported it: what goes back, and so what a refund owed must be made by hand
	// for. It may differ from Amount and Currency (a provider that said it took
	// another amount or currency); absent until such money is recorded.
	Taken  *Money `json:"taken,omitempty"`
	Status string `json:"status"`
	// Refund is "requested", "owed", "refunded" (by the provider),
	// "refunded-by-hand" (an operator recorded the refund owed paid back by hand)
	// or "refunded-twice" (by hand, then by the provider as well) once money taken
	// after the payment was given up on goes back.
	Refund string `json:"refund,omitempty"`
	// UnexpectedRefunds are the refunds owed on other provider payments that took
	// money under the payment's reference (payment.UnexpectedRefund), one per
	// provider payment, in the order they became owed.
	UnexpectedRefunds []UnexpectedRefund `json:"unexpectedRefunds,omitempty"`
}

// UnexpectedRefund is where the refund owed on another provider payment stands:
// what it took (0 and "" where the provider did not say) and "owed" or
// "refunded-by-hand".
type UnexpectedRefund struct {
	PaymentID string `json:"paymentId"`
	Amount    int64  `json:"amount,omitempty"`
	Currency  string `json:"currency,omitempty"`
	Refund    string `json:"refund"`
}

// Money is an amount in minor units of a currency (ISO 4217).
type Money struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// WithoutSecrets returns the view with the payment's client secret removed, for
// readers other than the renter.
func (v View) WithoutSecrets() View {
	if v.Payment != nil && v.Payment.ClientSecret != "" {
		p := *v.Payment
		p.ClientSecret = ""
		v.Payment = &p
	}
	return v
}

// operatorsOnly names, by event type, the members of an event's data that are the
// operators' business and not the renter's: who recorded a refund made by hand and
// the operator's own reference for it, and why a provider refused a refund (its
// message and request id).
var operatorsOnly = map[string][]string{
	payment.RefundMadeByHand{}.EventType():           {"recordedBy", "operatorReference"},
	payment.RefundOwed{}.EventType():                 {"reason"},
	payment.UnexpectedRefundMadeByHand{}.EventType(): {"recordedBy", "operatorReference"},
	payment.UnexpectedRefundOwed{}.EventType():       {"reason"},
}

// ForRenter returns the view as its renter may read it: WithoutSecrets' view but
// the client secret kept (it is the renter's to pay with), and the history's events
// without the members that are the operators' business (operatorsOnly). An entry
// whose data does not decode as an object is left as it is.
func (v View) ForRenter() View {
	history := make([]Entry, len(v.History))
	for i, e := range v.History {
		history[i] = e
		drop, ok := operatorsOnly[e.Type]
		if !ok {
			continue
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(e.Data, &members) != nil {
			continue
		}
		for _, name := range drop {
			delete(members, name)
		}
		if data, err := json.Marshal(members); err == nil {
			history[i].Data = data
		}
	}
	v.History = history
	return v
}

// Entry is one event of the rental's history.
type Entry struct {
	// EventID is the event's id: what the causation id of an event it caused names.
	EventID       string          `json:"eventId,omitempty"`
	At            time.Time       `json:"at"`
	Stream        string          `json:"stream"`
	Version       int64           `json:"version"`
	Type          string          `json:"type"`
	Data          json.RawMessage `json:"data"`
	CorrelationID string          `json:"correlationId,omitempty"`
	CausationID   string          `json:"causationId,omitempty"`
}

// Load reads the rental's three streams and builds its view. It returns an error
// matching ErrNotFound if the rental id is not one the bike's stream knows, and
// rental.ErrInvalidRentalID if it cannot be a rental id at all.
func Load(ctx context.Context, store eventstore.Store, rentalID string) (View, error) {
	recs, err := Read(ctx, store, rentalID)
	if err != nil {
		return View{}, err
	}
	return Of(rentalID, recs)
}

// Records are what a rental's view is built from: its own records on its bike, and
// its payment's and its process's streams.
type Records struct {
	Bike, Payment, Process []eventstore.Record
}

// All returns every record, the bike's, the payment's and the process's, in a new
// slice.
func (r Records) All() []eventstore.Record {
	return append(append(append([]eventstore.Record(nil), r.Bike...), r.Payment...), r.Process...)
}

// Read reads what a rental's view is built from, one stream after the other: the
// process's stream, then, on its bike, only the rental's own records
// (bikestream.Rental: the bike's tail, or the versions its process recorded), never
// the bike's whole history, then the payment's stream.
//
// That is the reverse of the order in which the rental's story is written, so that
// whatever a read finds, the reads after it find what caused it: the process records
// its start after the bike was requested and the payment prepared, and its
// completion after the payment settled and the bike was told; the bike is told after
// the payment settled. A view therefore never shows a rental ended without the
// settlement that ended it. Read at once, a payment's stream read just before its
// cancellation, beside a process's read just after the completion that followed,
// made a cancelled rental look rejected, a status it never had.
func Read(ctx context.Context, store eventstore.Store, rentalID string) (Records, error) {
	bikeID, err := rental.BikeIDOf(rentalID)
	if err != nil {
		return Records{}, err
	}
	var recs Records
	if recs.Process, err = store.Read(ctx, rentalpayment.StreamID(rentalID), 0); err != nil {
		return Records{}, err
	}
	if r, ok := store.(bikestream.Reader); ok {
		recs.Bike, err = bikestream.Rental(ctx, r, rentalID, recs.Process)
	} else {
		recs.Bike, err = store.Read(ctx, rental.StreamID(bikeID), 0)
	}
	if err != nil {
		return Records{}, err
	}
	if recs.Payment, err = store.Read(ctx, payment.StreamID(payment.ReferenceFor(rentalID)), 0); err != nil {
		return Records{}, err
	}
	return recs, nil
}

// Of builds a rental's view from its records (Read); errors as Load's.
func Of(rentalID string, recs Records) (View, error) {
	bikeID, err := rental.BikeIDOf(rentalID)
	if err != nil {
		return View{}, err
	}
	ref := payment.ReferenceFor(rentalID)
	records := [][]eventstore.Record{recs.Bike, recs.Payment, recs.Process}

	v := View{RentalID: rentalID, BikeID: bikeID, PaymentReference: ref, History: []Entry{}}
	var bikeEvents []rental.Event
	for _, r := range records[0] {
		e, err := rental.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return View{}, fmt.Errorf("rentalview: %w", eventstore.Corrupt(r, err))
		}
		bikeEvents = append(bikeEvents, e)
		if rental.RentalOf(e) == rentalID {
			v.History = append(v.History, entry(r))
			v.Overdue = overdue(v.Overdue, e)
		}
	}
	bike := rental.Fold(bikeEvents)
	rec, ok := bike.Rentals[rentalID]
	if !ok {
		return View{}, fmt.Errorf("%w: %s", ErrNotFound, rentalID)
	}
	flagged := rec.Outcome == rental.OutcomeApproved && bike.RentalID == rentalID && !bike.DueAt.IsZero()
	v.Renter = rec.Renter
	paymentStatus := payment.StatusNone
	var pay payment.Payment
	var paymentEvents []payment.Event
	for _, r := range records[1] {
		e, err := payment.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return View{}, fmt.Errorf("rentalview: %w", eventstore.Corrupt(r, err))
		}
		paymentEvents = append(paymentEvents, e)
		v.History = append(v.History, entry(r))
	}
	if len(paymentEvents) > 0 {
		pay = payment.Fold(paymentEvents)
		paymentStatus = pay.Status
		v.Payment = &Payment{PaymentID: pay.PaymentID, Amount: pay.Amount, Currency: pay.Currency, Status: string(pay.Status),
			Refund: string(pay.Refund)}
		if pay.LateSuccess {
			taken := pay.Charge()
			v.Payment.Taken = &Money{Amount: taken.Amount, Currency: taken.Currency}
		}
		for _, u := range pay.Unexpected {
			v.Payment.UnexpectedRefunds = append(v.Payment.UnexpectedRefunds, UnexpectedRefund{PaymentID: u.PaymentID, Amount: u.Amount,
				Currency: u.Currency, Refund: string(u.Refund)})
		}
	}
	processStarted, processEnded := false, false
	for _, r := range records[2] {
		processStarted = processStarted || rentalpayment.Starts(r.Type)
		processEnded = processEnded || rentalpayment.Ends(r.Type)
		v.History = append(v.History, entry(r))
	}
	// Events of one stream are in version order; across streams, order by time.
	sort.SliceStable(v.History, func(i, j int) bool { return v.History[i].At.Before(v.History[j].At) })
	v.Status = status(rec.Outcome, flagged, paymentStatus, processStarted, processEnded)
	if v.Payment != nil && pay.Payable() && v.Status == StatusAwaitingPayment {
		v.Payment.ClientSecret = pay.ClientSecret // an ended payment offers nothing to pay with
	}
	return v, nil
}

// status is where the rental stands. A rental is cancelled or rejected only once the
// whole story is told: the bike released (RequestRejected) and, when the process
// had started, its completion recorded. Until then it is cancelling or rejecting,
// so that whoever sees cancelled can request the bike again at once.
func status(bike rental.Outcome, flagged bool, pay payment.Status, processStarted, processEnded bool) Status {
	ended := bike == rental.OutcomeRejected && (processEnded || !processStarted)
	switch {
	case bike == rental.OutcomeReturned:
		return StatusReturned
	case bike == rental.OutcomeApproved && flagged:
		return StatusOverdue
	case bike == rental.OutcomeApproved:
		return StatusApproved
	case pay == payment.StatusCancelled && ended:
		return StatusCancelled
	case pay == payment.StatusCancelled:
		return StatusCancelling
	case ended:
		return StatusRejected
	case bike == rental.OutcomeRejected || pay == payment.StatusRejected:
		return StatusRejecting
	case pay != payment.StatusNone || processStarted:
		return StatusAwaitingPayment
	}
	return StatusRequested
}

// overdue returns o updated by the rental's bike event e: its flag says when the
// bike was due, and a late return how late it came back.
func overdue(o *Overdue, e rental.Event) *Overdue {
	switch e := e.(type) {
	case rental.ReturnOverdue:
		if o == nil {
			o = &Overdue{}
		}
		o.DueAt, o.FlaggedAt = e.DueAt, e.FlaggedAt
	case rental.BikeReturned:
		if e.Late.DueAt.IsZero() {
			return o
		}
		if o == nil {
			o = &Overdue{DueAt: e.Late.DueAt}
		}
		returned, late := e.Late.ReturnedAt, e.Late.Seconds
		o.ReturnedAt, o.LateSeconds = &returned, &late
	}
	return o
}

// entry is one record of the history. The client secret of a PaymentPrepared
// never reaches the history, whoever reads it: View.Payment carries it.
func entry(r eventstore.Record) Entry {
	data := r.Data
	if r.Type == (payment.PaymentPrepared{}).EventType() {
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) == nil {
			if _, ok := fields["clientSecret"]; ok {
				delete(fields, "clientSecret")
				data, _ = json.Marshal(fields)
			}
		}
	}
	return Entry{EventID: r.ID, At: r.RecordedAt, Stream: r.StreamID, Version: r.Version, Type: r.Type, Data: data,
		CorrelationID: r.CorrelationID, CausationID: r.CausationID}
}
