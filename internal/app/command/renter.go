package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
)

var renters = Decider[renter.State, renter.Event, renter.OpenRequest]{
	Fold: renter.Fold, Evolve: renter.Evolve, Decide: renter.Decide, Decode: renter.DecodeEvent,
	Rental: func(e renter.Event) string {
		if r, ok := e.(renter.RentalRequested); ok {
			return r.RentalID
		}
		return ""
	},
	Tags: func(e renter.Event) []string {
		r, _ := e.(renter.RentalRequested)
		return []string{"renter:" + r.Renter, "rental:" + r.RentalID}
	},
}

// ErrNeedsMultiStreamStore reports an event store that cannot append to a bike's and
// a renter's streams together or read a stream newest first, which RequestBike and
// RenterRentals need.
var ErrNeedsMultiStreamStore = errors.New("command: the event store cannot append to several streams at once or read backwards")

// renterStore is what the renter's limit needs of the event store.
type renterStore interface {
	eventstore.MultiStreamStore
	eventstore.BackwardReader
}

// requestBike decides a RequestBike on the bike and, when the bike takes it, on the
// renter, and appends both decisions in one write, retrying conflicts on either
// stream from fresh reads (eventstore.ExecuteStreams).
func (h *Handler) requestBike(ctx context.Context, c rental.RequestBike, meta Meta) (Result[rental.Bike], error) {
	store, ok := h.store.(renterStore)
	if !ok {
		return Result[rental.Bike]{}, ErrNeedsMultiStreamStore
	}
	// after is the bike as the last attempt decided it; decided says that attempt
	// decided, so that an error is the store's.
	var after rental.Bike
	decided := false
	appended, err := eventstore.ExecuteStreams(ctx, store, func(ctx context.Context) (parts []eventstore.StreamAppend, err error) {
		after, parts, err = h.decideRequest(ctx, store, c, meta)
		decided = err == nil
		return parts, err
	}, h.policy)
	switch {
	case err != nil && decided:
		return Result[rental.Bike]{}, err
	case err != nil:
		return Result[rental.Bike]{State: after}, err
	}
	return Result[rental.Bike]{State: after, Appended: appended}, nil
}

// decideRequest is one attempt of requestBike, from fresh reads: the bike after
// the request, and the bike's and the renter's appends, none for a repeat of a
// request that took effect (it was counted then). A refusal, by the bike or by the
// renter's limit, is returned with the bike as it was read.
func (h *Handler) decideRequest(ctx context.Context, store renterStore, c rental.RequestBike, meta Meta) (rental.Bike, []eventstore.StreamAppend, error) {
	bike, bikeRecords, err := h.loadBike(ctx, c.BikeID, c.RentalID)
	if err != nil {
		return rental.Bike{}, nil, err
	}
	decided, err := rental.Decide(bike, c)
	if err != nil || len(decided) == 0 {
		return bike, nil, err
	}
	state, renterVersion, err := h.loadRenter(ctx, store, c.Renter)
	if err != nil {
		return rental.Bike{}, nil, err
	}
	settled, err := h.settled(ctx, state.Candidates, bike)
	if err != nil {
		return rental.Bike{}, nil, err
	}
	opened, err := renter.Decide(state, renter.OpenRequest{
		Renter: c.Renter, RentalID: c.RentalID, BikeID: c.BikeID, MaxPending: h.maxPending, Settled: settled,
	})
	if err != nil {
		return bike, nil, err
	}
	after := bike
	for _, e := range decided {
		after = rental.Evolve(after, e)
	}
	bikeEvents, err := runner(h, bikes).Encode(decided, meta)
	if err != nil {
		return rental.Bike{}, nil, err
	}
	parts := []eventstore.StreamAppend{{StreamID: rental.StreamID(c.BikeID), ExpectedVersion: lastVersion(bikeRecords), Events: bikeEvents}}
	if len(opened) > 0 {
		renterEvents, err := runner(h, renters).Encode(opened, meta)
		if err != nil {
			return rental.Bike{}, nil, err
		}
		parts = append(parts, eventstore.StreamAppend{StreamID: renter.StreamID(c.Renter), ExpectedVersion: renterVersion, Events: renterEvents})
	}
	return after, parts, nil
}

// loadRenter returns a renter's state and the version it was read at, from the
// stream's last event alone (renter.State needs no more).
func (h *Handler) loadRenter(ctx context.Context, store eventstore.BackwardReader, name string) (renter.State, int64, error) {
	records, err := store.ReadBackward(ctx, renter.StreamID(name), 0, 1)
	if err != nil || len(records) == 0 {
		return renter.State{}, 0, err
	}
	s, err := runner(h, renters).Fold(records)
	if err != nil {
		return renter.State{}, 0, err
	}
	return s, records[0].Version, nil
}

// settled returns the candidates whose bikes say they are no longer outstanding:
// approved, rejected or returned, or unknown to their bike. current is the state of
// the bike being requested, which is not read again.
func (h *Handler) settled(ctx context.Context, candidates []string, current rental.Bike) ([]string, error) {
	var out []string
	for _, id := range candidates {
		bikeID, err := rental.BikeIDOf(id)
		if err != nil {
			out = append(out, id) // not a rental id: it holds no bike
			continue
		}
		// On the bike being requested, what its tail says is enough: an outstanding
		// request is the bike's newest record, so a rental its tail does not mention
		// has settled. On another bike, that rental's own records say.
		bike := current
		if bikeID != current.ID {
			if bike, _, err = h.loadBike(ctx, bikeID, id); err != nil {
				return nil, err
			}
		}
		if r, ok := bike.Rentals[id]; !ok || r.Outcome != rental.OutcomeRequested {
			out = append(out, id)
		}
	}
	return out, nil
}

// MaxRentalsPage is the most rentals RenterRentals returns at once.
const MaxRentalsPage = 100

// RenterRental is one rental in a renter's list.
type RenterRental struct {
	RentalID    string
	BikeID      string
	RequestedAt time.Time
	// Version is the rental's place in the renter's stream: pass it as before to
	// RenterRentals for the rentals older than this one.
	Version int64
}

// RenterRentals returns up to limit of a renter's rentals, newest first, that were
// requested before the one at version before (0: from the newest). It reads only the
// renter's own stream, one page of it.
func (h *Handler) RenterRentals(ctx context.Context, name string, before int64, limit int) ([]RenterRental, error) {
	store, ok := h.store.(eventstore.BackwardReader)
	if !ok {
		return nil, ErrNeedsMultiStreamStore
	}
	if limit < 1 || limit > MaxRentalsPage {
		return nil, fmt.Errorf("%w: limit %d, want 1 to %d", eventstore.ErrInvalidInput, limit, MaxRentalsPage)
	}
	records, err := store.ReadBackward(ctx, renter.StreamID(name), before, limit)
	if err != nil {
		return nil, err
	}
	events, err := runner(h, renters).DecodeAll(records)
	if err != nil {
		return nil, err
	}
	out := make([]RenterRental, 0, len(events))
	for i, e := range events {
		if r, ok := e.(renter.RentalRequested); ok {
			out = append(out, RenterRental{RentalID: r.RentalID, BikeID: r.BikeID, RequestedAt: records[i].RecordedAt, Version: records[i].Version})
		}
	}
	return out, nil
}
