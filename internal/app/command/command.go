// Package command executes the bike and payment commands: it loads the command's
// stream from the event store, decides with the domain's pure decider, and appends
// the resulting events with optimistic concurrency, retrying conflicts (Runner). The
// HTTP API and the rental-payment process both send their commands through it, and
// the process records its own events through a Runner of its decider.
package command

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/bikestream"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Meta ties the events a command appends to what caused them.
type Meta struct {
	// CorrelationID groups every event of one business flow. When empty, events
	// that belong to a rental take the rental id.
	CorrelationID string
	// CausationID is the id of the request, command or event that caused this one.
	CausationID string
}

// Result is the outcome of a command that was accepted.
type Result[S any] struct {
	// State is the stream's state after the command.
	State S
	// Appended holds the records the command wrote: none when it repeated a command
	// that had already taken effect.
	Appended []eventstore.Record
}

// Handler executes commands against an event store. It is safe for concurrent use.
type Handler struct {
	store      eventstore.Store
	policy     eventstore.RetryPolicy
	newID      func() string
	maxPending int
	provider   PaymentProvider
	// providerTimeout bounds each call to the provider (WithProviderTimeout).
	providerTimeout time.Duration
	// cancelRetry bounds the retries of a cancellation the provider did not answer.
	cancelRetry eventstore.RetryPolicy
	// rentalPeriod and now are what FlagOverdueReturn and ReturnBike are decided
	// with (overdue.go); zero values mean rental.DefaultPeriod and time.Now.
	rentalPeriod time.Duration
	now          func() time.Time
}

// Option configures a Handler.
type Option func(*Handler)

// WithMaxPending sets how many outstanding requests (requested or awaiting payment)
// one renter may have at once (renter.DefaultMaxPending by default; below 1 keeps it).
func WithMaxPending(n int) Option {
	return func(h *Handler) {
		if n >= 1 {
			h.maxPending = n
		}
	}
}

// WithEventIDs sets how event ids are made (random UUIDs by default).
func WithEventIDs(newID func() string) Option { return func(h *Handler) { h.newID = newID } }

// New returns a Handler on store. Without WithProvider it executes bike commands
// only: every payment command is refused with ErrNoProvider.
func New(store eventstore.Store, opts ...Option) *Handler {
	h := &Handler{store: store, policy: eventstore.DefaultRetryPolicy, newID: ident.UUID, maxPending: renter.DefaultMaxPending, cancelRetry: DefaultCancelRetry, providerTimeout: DefaultProviderTimeout}
	for _, o := range opts {
		o(h)
	}
	h.provider = boundedBy(h.provider, h.providerTimeout)
	return h
}

// Store returns the event store the handler writes to.
func (h *Handler) Store() eventstore.Store { return h.store }

// Bike executes a bike command on its bike's stream. Business refusals are the
// rental package's sentinel errors; a command that repeats one already applied
// succeeds with no events appended. After repeated concurrency conflicts the error
// matches eventstore.ErrRetriesExhausted.
//
// RequestBike is also counted against its renter's limit of outstanding requests: it
// is refused with renter.ErrTooManyPendingRequests at the limit, and otherwise its
// BikeRequested and the renter's RentalRequested are appended together, each at the
// version it was decided on, so that two requests by one renter that read the same
// renter state can never both succeed.
//
// A ReturnBike is stamped with the handler's clock, and FlagOverdueReturn decided
// as FlagOverdueReturn (the method) says, which maps its refusals to outcomes.
func (h *Handler) Bike(ctx context.Context, c rental.Command, meta Meta) (Result[rental.Bike], error) {
	bikeID, err := bikeOf(c)
	if err != nil {
		return Result[rental.Bike]{}, err
	}
	switch cmd := c.(type) {
	case rental.RequestBike:
		return h.requestBike(ctx, cmd, meta)
	case rental.FlagOverdueReturn:
		return h.flagOverdue(ctx, bikeID, cmd, meta)
	case rental.ReturnBike:
		cmd.At = h.clock() // what a late return's lateness is measured with
		c = cmd
	}
	history, err := h.bikeHistory(ctx, bikeID, rentalOfCommand(c))
	if err != nil {
		return Result[rental.Bike]{}, err
	}
	return runFrom(ctx, h, bikes, rental.StreamID(bikeID), history, c, meta)
}

// bikeHistory returns the records a command about rentalID decides on
// (bikestream.History: the bike's tail and, when older, the rental's own records),
// or the whole stream from a store that cannot read backwards.
func (h *Handler) bikeHistory(ctx context.Context, bikeID, rentalID string) ([]eventstore.Record, error) {
	if r, ok := h.store.(bikestream.Reader); ok {
		return bikestream.History(ctx, r, bikeID, rentalID)
	}
	return h.store.Read(ctx, rental.StreamID(bikeID), 0)
}

// loadBike folds bikeHistory.
func (h *Handler) loadBike(ctx context.Context, bikeID, rentalID string) (rental.Bike, []eventstore.Record, error) {
	records, err := h.bikeHistory(ctx, bikeID, rentalID)
	if err != nil {
		return rental.Bike{}, nil, err
	}
	bike, err := runner(h, bikes).Fold(records)
	if err != nil {
		return rental.Bike{}, nil, err
	}
	return bike, records, nil
}

// rentalOfCommand returns the rental a bike command names, "" for none.
func rentalOfCommand(c rental.Command) string {
	switch c := c.(type) {
	case rental.RequestBike:
		return c.RentalID
	case rental.ApproveRequest:
		return c.RentalID
	case rental.RejectRequest:
		return c.RentalID
	case rental.ReturnBike:
		return c.RentalID
	case rental.FlagOverdueReturn:
		return c.RentalID
	}
	return ""
}

// Payment executes a payment command on its payment's stream, with the same
// guarantees as Bike. PreparePayment creates the payment at the provider first and
// records the provider's payment id; CancelPayment asks the provider first and is
// declined with payment.ErrPaymentAlreadyConfirmed when the payment already
// succeeded there. A Handler without a provider refuses every payment command with
// ErrNoProvider.
func (h *Handler) Payment(ctx context.Context, c payment.Command, meta Meta) (Result[payment.Payment], error) {
	if err := h.needProvider(fmt.Sprintf("%T", c)); err != nil {
		return Result[payment.Payment]{}, err
	}
	ref, err := referenceOf(c)
	if err != nil {
		return Result[payment.Payment]{}, err
	}
	switch c := c.(type) {
	case payment.PreparePayment:
		return h.preparePayment(ctx, c, meta)
	case payment.CancelPayment:
		return h.cancelPayment(ctx, c, meta)
	}
	return run(ctx, h, payments, payment.StreamID(ref), c, meta)
}

// LoadBike returns a bike's current state and the records it was read from: the
// stream's newest (bikestream.Tail), so its Rentals holds only the rentals those
// mention.
func (h *Handler) LoadBike(ctx context.Context, bikeID string) (rental.Bike, []eventstore.Record, error) {
	return h.loadBike(ctx, bikeID, "")
}

// LoadPayment returns a payment's state and its stream's records.
func (h *Handler) LoadPayment(ctx context.Context, reference string) (payment.Payment, []eventstore.Record, error) {
	l, err := runner(h, payments).Load(ctx, payment.StreamID(reference))
	return l.State, l.Records, err
}

func bikeOf(c rental.Command) (string, error) {
	switch c := c.(type) {
	case rental.RegisterBike:
		return c.BikeID, nil
	case rental.RequestBike:
		return c.BikeID, nil
	case rental.ApproveRequest:
		return c.BikeID, nil
	case rental.RejectRequest:
		return c.BikeID, nil
	case rental.ReturnBike:
		return c.BikeID, nil
	case rental.FlagOverdueReturn:
		bikeID, err := rental.BikeIDOf(c.RentalID)
		if err != nil {
			return "", fmt.Errorf("%w: %w", rental.ErrInvalidCommand, err)
		}
		return bikeID, nil
	}
	return "", fmt.Errorf("%w: unknown command %T", rental.ErrInvalidCommand, c)
}

func referenceOf(c payment.Command) (string, error) {
	switch c := c.(type) {
	case payment.PreparePayment:
		return c.Reference, nil
	case payment.ConfirmPayment:
		return c.Reference, nil
	case payment.RejectPayment:
		return c.Reference, nil
	case payment.CancelPayment:
		return c.Reference, nil
	case payment.RecordRefund:
		return c.Reference, nil
	case payment.OweRefund:
		return c.Reference, nil
	case payment.ConfirmRefund:
		return c.Reference, nil
	case payment.RecordRefundFailed:
		return c.Reference, nil
	case payment.RecordCancelledAtProvider:
		return c.Reference, nil
	case payment.GiveUpUnmatchedSuccess:
		return c.Reference, nil
	case payment.RecordCancellationStillOwed:
		return c.Reference, nil
	case payment.RecordRefundMadeByHand:
		return c.Reference, nil
	case payment.OweUnexpectedRefund:
		return c.Reference, nil
	}
	return "", fmt.Errorf("%w: unknown command %T", payment.ErrInvalidCommand, c)
}

// bikes, payments and renters are the deciders the handler runs.
var bikes = Decider[rental.Bike, rental.Event, rental.Command]{
	Fold: rental.Fold, Evolve: rental.Evolve, Decide: rental.Decide, Decode: rental.DecodeEvent,
	Rental: rental.RentalOf,
	Tags: func(e rental.Event) []string {
		rentalID := rental.RentalOf(e)
		bikeID, _ := rental.BikeIDOf(rentalID)
		if b, ok := e.(rental.BikeRegistered); ok {
			bikeID = b.BikeID
		}
		tags := make([]string, 1, 2)
		tags[0] = "bike:" + bikeID
		if rentalID != "" {
			tags = append(tags, "rental:"+rentalID)
		}
		return tags
	},
}

var payments = Decider[payment.Payment, payment.Event, payment.Command]{
	Fold: payment.Fold, Evolve: payment.Evolve, Decide: payment.Decide, Decode: payment.DecodeEvent,
	Rental: func(e payment.Event) string {
		rentalID, _ := payment.RentalIDFor(payment.ReferenceOf(e))
		return rentalID
	},
	Tags: func(e payment.Event) []string {
		ref := payment.ReferenceOf(e)
		tags := make([]string, 1, 2)
		tags[0] = "payment:" + ref
		if rentalID, err := payment.RentalIDFor(ref); err == nil {
			tags = append(tags, "rental:"+rentalID)
		}
		return tags
	},
}

// runner is the Runner of d on the handler's store, with its retries and event ids.
func runner[S any, E Event, C any](h *Handler, d Decider[S, E, C]) Runner[S, E, C] {
	return Runner[S, E, C]{Decider: d, Store: h.store, Retry: h.policy, NewID: h.newID}
}

// run executes c on stream through d's Runner.
func run[S any, E Event, C any](ctx context.Context, h *Handler, d Decider[S, E, C], stream string, c C, meta Meta) (Result[S], error) {
	return runner(h, d).Run(ctx, stream, c, meta)
}

// runFrom is run on a history the caller has just read.
func runFrom[S any, E Event, C any](ctx context.Context, h *Handler, d Decider[S, E, C], stream string, history []eventstore.Record, c C, meta Meta) (Result[S], error) {
	return runner(h, d).RunFrom(ctx, stream, history, c, meta)
}
