// Package bikestream reads what a bike command or a rental's view needs of a bike's
// event stream, and no more: the stream's newest records, and one rental's own
// records, found by key. A bike rented a thousand times costs the same to command as a
// new one (docs/decisions/0008-bounded-bike-reads.md).
//
// A bike's current state is its newest event alone: every event after BikeRegistered
// names the rental it is about, and only the bike's current rental ever gets one. So
// the stream's tail decides every command about the current rental. A command about
// an earlier rental (a retried request, a redelivered approval, a late return) reads
// that rental's records: the rental-payment process records, in its first event, the
// version of the BikeRequested it started from, and a rental's records on its bike
// are that version and the (at most three) versions after it, since the bike holds
// no other rental meanwhile.
package bikestream

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Reader is what the bounded reads need of the event store; *dynamo.Store and
// *eventstore.Memory are both.
type Reader interface {
	Read(ctx context.Context, streamID string, fromVersion int64) ([]eventstore.Record, error)
	eventstore.BackwardReader
}

// TailSize is how many of a bike's newest records a command reads: enough for every
// record of the bike's current rental (requested, approved, flagged overdue) and,
// on a new bike, its whole stream (registered, requested, approved, returned) in one
// read, which then needs no lookup of a rental it has not seen.
const TailSize = 4

// rentalSpan is how many versions a rental's records span on its bike: requested,
// approved or rejected, flagged overdue (rental.ReturnOverdue), returned.
const rentalSpan = 4

// legacyPage is the page size of the backward search for a rental whose process
// recorded no bike version (it started before versions were recorded).
const legacyPage = 100

// Tail returns a bike's newest records, at most TailSize, oldest first.
func Tail(ctx context.Context, r Reader, bikeID string) ([]eventstore.Record, error) {
	recs, err := r.ReadBackward(ctx, rental.StreamID(bikeID), 0, TailSize)
	if err != nil {
		return nil, err
	}
	slices.Reverse(recs)
	return recs, nil
}

// complete reports whether a tail is the bike's whole stream.
func complete(tail []eventstore.Record) bool { return len(tail) == 0 || tail[0].Version == 1 }

// History returns the records a command about rentalID (empty: about the bike alone)
// decides on, oldest first: the bike's tail, preceded by the rental's own records when
// they are older than it. Folded (rental.Fold), they give the bike's current state
// and, in Rentals, what the bike knows of rentalID. The newest record is the bike's
// newest, so appending at its version is exactly as guarded as after reading the whole
// stream.
func History(ctx context.Context, r Reader, bikeID, rentalID string) ([]eventstore.Record, error) {
	tail, err := Tail(ctx, r, bikeID)
	if err != nil || rentalID == "" || complete(tail) || mentions(tail, rentalID) {
		return tail, err
	}
	own, err := rentalRecords(ctx, r, bikeID, rentalID, tail, nil)
	if err != nil {
		return nil, err
	}
	return merge(own, tail), nil
}

// Rental returns the records of rentalID on its bike, oldest first, and nil when the
// bike never held it. process is the rental's process stream when the caller has
// read it already (nil: Rental reads it).
func Rental(ctx context.Context, r Reader, rentalID string, process []eventstore.Record) ([]eventstore.Record, error) {
	bikeID, err := rental.BikeIDOf(rentalID)
	if err != nil {
		return nil, err
	}
	tail, err := Tail(ctx, r, bikeID)
	if err != nil {
		return nil, err
	}
	if complete(tail) || mentions(tail, rentalID) {
		return about(tail, rentalID)
	}
	return rentalRecords(ctx, r, bikeID, rentalID, tail, process)
}

// rentalRecords finds a rental's records older than the tail, through its process.
func rentalRecords(ctx context.Context, r Reader, bikeID, rentalID string, tail, process []eventstore.Record) ([]eventstore.Record, error) {
	if process == nil {
		var err error
		if process, err = r.Read(ctx, rentalpayment.StreamID(rentalID), 0); err != nil {
			return nil, err
		}
	}
	if len(process) == 0 || process[0].Type != rentalpayment.TypeRequested {
		// No process: the bike never held the rental. A held rental's process starts
		// before the bike can move on (only the process approves or rejects), and
		// until then the rental is the bike's newest record, in the tail.
		return nil, nil
	}
	e, err := rentalpayment.DecodeEvent(process[0].Type, process[0].Data)
	if err != nil {
		return nil, fmt.Errorf("bikestream: %w: %s version %d: %w", eventstore.ErrCorruptRecord, process[0].StreamID, process[0].Version, err)
	}
	s := e.(rentalpayment.RentalPaymentRequested)
	stream := rental.StreamID(bikeID)
	if s.BikeVersion > 0 {
		recs, err := r.ReadBackward(ctx, stream, s.BikeVersion+rentalSpan, rentalSpan)
		if err != nil {
			return nil, err
		}
		slices.Reverse(recs)
		return about(recs, rentalID)
	}
	// A process that started before it recorded the bike's version: search back from
	// the tail for the rental's request, a page at a time.
	var found []eventstore.Record
	before := tail[0].Version
	for before > 1 {
		page, err := r.ReadBackward(ctx, stream, before, legacyPage)
		if err != nil || len(page) == 0 {
			return nil, err
		}
		slices.Reverse(page)
		mine, err := about(page, rentalID)
		if err != nil {
			return nil, err
		}
		found = append(mine, found...)
		if len(found) > 0 && found[0].Type == (rental.BikeRequested{}).EventType() {
			return found, nil
		}
		before = page[0].Version
	}
	return found, nil
}

// about returns the records of recs that concern rentalID. A record whose data does
// not hold the id at all cannot concern it and is not decoded: the common case, a
// command about the current rental or a new one, decodes nothing here (the command
// decodes the records it folds).
func about(recs []eventstore.Record, rentalID string) ([]eventstore.Record, error) {
	var out []eventstore.Record
	for _, rec := range recs {
		if !bytes.Contains(rec.Data, []byte(rentalID)) {
			continue
		}
		e, err := rental.DecodeEvent(rec.Type, rec.Data)
		if err != nil {
			return nil, fmt.Errorf("bikestream: %w: %s version %d: %w", eventstore.ErrCorruptRecord, rec.StreamID, rec.Version, err)
		}
		if rental.RentalOf(e) == rentalID {
			out = append(out, rec)
		}
	}
	return out, nil
}

// mentions reports whether a record of recs concerns rentalID.
func mentions(recs []eventstore.Record, rentalID string) bool {
	mine, err := about(recs, rentalID)
	return err == nil && len(mine) > 0
}

// merge returns older followed by the records of tail that are newer than all of
// older, so that no version appears twice.
func merge(older, tail []eventstore.Record) []eventstore.Record {
	out := slices.Clone(older)
	for _, rec := range tail {
		if len(out) == 0 || rec.Version > out[len(out)-1].Version {
			out = append(out, rec)
		}
	}
	return out
}
