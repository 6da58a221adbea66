// Package orders is an example service of another domain than bikes: orders and
// invoices, kept as events in a DynamoDB table of its own (Orders). Each order's
// and each invoice's events are a stream, keyed by its id and the event's place
// in it (seq), and appended one at a time on the condition that the place is
// free. Its commands read a stream, decide, and append at most one event; each is
// safe to deliver twice.
//
// Its deadlines (an order left unconfirmed, an invoice left unpaid) are not here:
// package deadline declares them over the deadlines module.
package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// The event types, as stored in the type attribute.
const (
	OrderPlaced    = "OrderPlaced"
	OrderConfirmed = "OrderConfirmed"
	OrderCancelled = "OrderCancelled"
	InvoiceIssued  = "InvoiceIssued"
	InvoicePaid    = "InvoicePaid"
	ReminderSent   = "ReminderSent"
)

// MaxID is the longest order or invoice id.
const MaxID = 128

// Errors of the commands.
var (
	// ErrBadID reports an empty id, or one longer than MaxID.
	ErrBadID = errors.New("orders: bad id: want 1 to 128 bytes")
	// ErrNotFound reports a command about an order or invoice that does not exist.
	ErrNotFound = errors.New("orders: not found")
	// ErrIDTaken reports an id that another kind of stream already uses: an order
	// placed with an invoice's id, or the other way round.
	ErrIDTaken = errors.New("orders: id taken by another kind of stream")
	// ErrCancelled reports a confirmation of an order already cancelled.
	ErrCancelled = errors.New("orders: order cancelled")
	// ErrConflict reports an append that lost to other writers of the same stream
	// every time it was tried.
	ErrConflict = errors.New("orders: concurrent appends to the stream")
	// ErrCorrupt reports a stored event that does not decode.
	ErrCorrupt = errors.New("orders: corrupt event")
)

// Event is one stored event of an order or an invoice.
type Event struct {
	// ID is the order's or invoice's id: the stream the event belongs to.
	ID string
	// Seq is the event's place in its stream, from 1.
	Seq int64
	// Type is one of the event types.
	Type string
	// At is when the event was recorded, to the millisecond.
	At time.Time
	// Data is the event's payload, a small JSON object, or empty.
	Data []byte
}

// history is what a stream holds: the types of its events, and how many there are.
type history struct {
	seen map[string]bool
	len  int64
}

func historyOf(events []Event) history {
	h := history{seen: map[string]bool{}, len: int64(len(events))}
	for _, e := range events {
		h.seen[e.Type] = true
	}
	return h
}

// decision is what a command decides from a stream's history: the type of the event
// to append (none when empty) and what the command did. Deciders are pure.
type decision struct {
	append  string
	outcome deadlines.Outcome
}

func decidePlace(h history) (decision, error) {
	switch {
	case h.seen[OrderPlaced]:
		return decision{outcome: deadlines.NothingToDo}, nil
	case h.len > 0:
		return decision{}, ErrIDTaken
	}
	return decision{OrderPlaced, deadlines.Acted}, nil
}

func decideConfirm(h history) (decision, error) {
	switch {
	case !h.seen[OrderPlaced]:
		return decision{}, ErrNotFound
	case h.seen[OrderConfirmed]:
		return decision{outcome: deadlines.NothingToDo}, nil
	case h.seen[OrderCancelled]:
		return decision{}, ErrCancelled
	}
	return decision{OrderConfirmed, deadlines.Acted}, nil
}

func decideCancel(h history) (decision, error) {
	switch {
	case !h.seen[OrderPlaced]:
		return decision{}, ErrNotFound
	case h.seen[OrderCancelled]:
		return decision{outcome: deadlines.NothingToDo}, nil
	case h.seen[OrderConfirmed]:
		return decision{outcome: deadlines.Declined}, nil
	}
	return decision{OrderCancelled, deadlines.Acted}, nil
}

func decideIssue(h history) (decision, error) {
	switch {
	case h.seen[InvoiceIssued]:
		return decision{outcome: deadlines.NothingToDo}, nil
	case h.len > 0:
		return decision{}, ErrIDTaken
	}
	return decision{InvoiceIssued, deadlines.Acted}, nil
}

func decidePay(h history) (decision, error) {
	switch {
	case !h.seen[InvoiceIssued]:
		return decision{}, ErrNotFound
	case h.seen[InvoicePaid]:
		return decision{outcome: deadlines.NothingToDo}, nil
	}
	return decision{InvoicePaid, deadlines.Acted}, nil
}

func decideRemind(h history) (decision, error) {
	switch {
	case !h.seen[InvoiceIssued]:
		return decision{}, ErrNotFound
	case h.seen[InvoicePaid]:
		return decision{outcome: deadlines.Declined}, nil
	case h.seen[ReminderSent]:
		return decision{outcome: deadlines.NothingToDo}, nil
	}
	return decision{ReminderSent, deadlines.Acted}, nil
}

// Place places the order id: OrderPlaced, or nothing to do if it was placed
// already.
func (s *Store) Place(ctx context.Context, id string) (deadlines.Outcome, error) {
	return s.run(ctx, id, nil, decidePlace)
}

// Confirm confirms the order id: OrderConfirmed, or nothing to do if it was
// confirmed already. An order cancelled is not confirmed: ErrCancelled.
func (s *Store) Confirm(ctx context.Context, id string) (deadlines.Outcome, error) {
	return s.run(ctx, id, nil, decideConfirm)
}

// Cancel cancels the order id, naming cause in the event: OrderCancelled, Acted.
// It declines an order already confirmed (Declined, records nothing) and finds
// nothing to do for one already cancelled.
func (s *Store) Cancel(ctx context.Context, id, cause string) (deadlines.Outcome, error) {
	return s.run(ctx, id, payload("cause", cause), decideCancel)
}

// Issue issues the invoice id for the order order: InvoiceIssued, or nothing to
// do if it was issued already.
func (s *Store) Issue(ctx context.Context, id, order string) (deadlines.Outcome, error) {
	return s.run(ctx, id, payload("order", order), decideIssue)
}

// Pay records the payment of the invoice id: InvoicePaid, or nothing to do if it
// was paid already.
func (s *Store) Pay(ctx context.Context, id string) (deadlines.Outcome, error) {
	return s.run(ctx, id, nil, decidePay)
}

// Remind sends the one reminder of the invoice id, naming cause in the event:
// ReminderSent, Acted. It declines an invoice paid (Declined, records nothing) and
// finds nothing to do for one reminded already.
func (s *Store) Remind(ctx context.Context, id, cause string) (deadlines.Outcome, error) {
	return s.run(ctx, id, payload("cause", cause), decideRemind)
}

// tries bounds how often a command decides again after losing an append.
const tries = 3

// run reads the stream id, decides, and appends what was decided at the next
// place; an append that loses to another writer is decided again on what that
// writer appended.
func (s *Store) run(ctx context.Context, id string, data []byte, decide func(history) (decision, error)) (deadlines.Outcome, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	for range tries {
		events, err := s.Read(ctx, id)
		if err != nil {
			return "", err
		}
		h := historyOf(events)
		d, err := decide(h)
		if err != nil || d.append == "" {
			return d.outcome, err
		}
		err = s.append(ctx, Event{ID: id, Seq: h.len + 1, Type: d.append, At: s.now(), Data: data})
		if err == nil {
			return d.outcome, nil
		}
		if !errors.Is(err, ErrConflict) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: %s, %d tries", ErrConflict, id, tries)
}

func checkID(id string) error {
	if id == "" || len(id) > MaxID {
		return fmt.Errorf("%w: %q", ErrBadID, id)
	}
	return nil
}

// payload is a JSON object of one string member, or nothing for an empty value.
func payload(name, value string) []byte {
	if value == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{name: value}) // a map of strings always encodes
	return b
}
