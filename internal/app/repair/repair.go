// Package repair brings a rental's process and projection to where its events say
// they should be, from the event store alone: for records that left the stream
// (it keeps them 24 hours) or ended in a dead-letter queue, whose message names
// only a shard and a sequence range. It delivers the rental's records again to the
// same idempotent handlers the stream consumers run, so it writes nothing by hand,
// is safe to run twice, and safe while the live consumers run.
package repair

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Handler is one stream consumer's handler of a record, as the functions run it:
// (*process.Process).Handle, (*deadlinetable.Projection).Apply.
type Handler func(ctx context.Context, r eventstore.Record) error

// Repairer delivers a rental's records to the consumers.
type Repairer struct {
	Store eventstore.Store
	// Consumers are the handlers by consumer name (eventfilter.Process,
	// eventfilter.Projector); each receives the records its filter lets through,
	// as its event source mapping would.
	Consumers map[string]Handler
}

// Delivery is one record given to one consumer.
type Delivery struct {
	Consumer string `json:"consumer"`
	Stream   string `json:"stream"`
	Version  int64  `json:"version"`
	Type     string `json:"type"`
}

// Result is what a repair did, or with a dry run would do, and the rental's status
// before and after.
type Result struct {
	RentalID   string            `json:"rentalId"`
	Case       Case              `json:"case"`
	Before     rentalview.Status `json:"before"`
	After      rentalview.Status `json:"after"`
	Deliveries []Delivery        `json:"deliveries"`
}

// Case is where a rental's events leave it, as far as a repair is concerned.
type Case string

// The cases, from the rental's bike, payment and process streams.
const (
	// CaseNoRequest: no bike holds a request for the rental; nothing to repair.
	CaseNoRequest Case = "no-request"
	// CaseNotStarted: the bike was requested and nothing else happened: the process
	// never started and no payment was prepared (BikeRequested never reached it, or
	// the provider refused until the record was given up on).
	CaseNotStarted Case = "not-started"
	// CaseStartMissing: the payment was prepared, and perhaps settled, but the
	// process never recorded its start.
	CaseStartMissing Case = "start-missing"
	// CaseOutstanding: the process started and the payment is still outstanding.
	CaseOutstanding Case = "payment-outstanding"
	// CaseSettled: the payment settled and the process has not completed.
	CaseSettled Case = "settled-not-completed"
	// CaseCompleted: the process completed; at most a projection missed it.
	CaseCompleted Case = "completed"
)

// Automatic reports whether the sweep may repair a stuck rental of this case without
// an operator, and why (see docs/decisions/0007-stuck-rentals.md). A repair then
// only finishes what a recorded event already decided, or gives the sweep back a
// payment it can call off; it never asks the renter for money.
func (c Case) Automatic() (bool, string) {
	switch c {
	case CaseStartMissing, CaseSettled, CaseCompleted:
		return true, "the payment was prepared; the repair finishes what its events decided"
	case CaseOutstanding:
		return true, "the repair gives the payment back to the projection, and the sweep calls it off"
	case CaseNotStarted:
		return false, "no payment was ever prepared: repairing would ask the renter for money long after the request; an operator decides (rentalctl repair)"
	}
	return false, "no bike holds a request for this rental"
}

// Repair reads the rental's bike, payment and process streams and delivers the
// rental's records, in the order they were recorded, to each consumer they wake,
// then what those deliveries appended (so that the projection learns of the
// completion the repair caused); with dryRun it only says which. A consumer that still refuses a record (a payment
// whose provider is down, say) stops the repair with its error; run it again later.
func (r *Repairer) Repair(ctx context.Context, rentalID string, dryRun bool) (Result, error) {
	return r.repair(ctx, rentalID, func(Case) bool { return !dryRun })
}

// repair is Repair, delivering only if act says so for the rental's case: otherwise
// it only says what it would deliver.
func (r *Repairer) repair(ctx context.Context, rentalID string, act func(Case) bool) (Result, error) {
	res := Result{RentalID: rentalID, Deliveries: []Delivery{}}
	recs, err := rentalview.Read(ctx, r.Store, rentalID)
	if err != nil {
		return res, err
	}
	before, err := rentalview.Of(rentalID, recs)
	if err != nil {
		return res, err
	}
	res.Before, res.After = before.Status, before.Status
	records := ordered(recs, rentalID)
	res.Case = caseOf(records)
	dryRun := !act(res.Case)
	// What the reactions append (the process's start and completion) is delivered
	// too, in later rounds, so that a repair needs no live consumer to finish: the
	// projection learns of the completion it causes. A process appends at most two
	// events, so three rounds suffice; a fourth would find nothing new.
	delivered := map[string]bool{}
	for round := 0; round < maxRounds; round++ {
		fresh := 0
		// The first round delivers what was recorded before the repair: the process
		// reports nothing of it again (a refund owed stands). Later rounds deliver
		// what the repair's own deliveries recorded, as new.
		rctx := ctx
		if round == 0 {
			rctx = process.Repairing(ctx)
		}
		for _, rec := range records {
			key := fmt.Sprintf("%s/%d", rec.StreamID, rec.Version)
			if delivered[key] {
				continue
			}
			delivered[key] = true
			fresh++
			if err := r.deliver(rctx, &res, rec, dryRun); err != nil {
				return res, err
			}
		}
		if fresh == 0 || dryRun {
			break
		}
		if recs, err = rentalview.Read(ctx, r.Store, rentalID); err != nil {
			return res, err
		}
		records = ordered(recs, rentalID)
	}
	if !dryRun {
		// The last round read what the repair left and found nothing new.
		after, err := rentalview.Of(rentalID, recs)
		if err != nil {
			return res, err
		}
		res.After = after.Status
	}
	return res, nil
}

// maxRounds bounds a repair's passes over the rental's records.
const maxRounds = 4

// ordered returns the rental's records, as rentalview.Read read them, in the order
// they were recorded.
func ordered(recs rentalview.Records, rentalID string) []eventstore.Record {
	var records []eventstore.Record
	for _, rec := range recs.All() {
		if belongs(rec, rentalID) {
			records = append(records, rec)
		}
	}
	sort.SliceStable(records, func(i, j int) bool { return records[i].RecordedAt.Before(records[j].RecordedAt) })
	return records
}

// deliver gives one record to each consumer it wakes, or with dryRun only notes it.
func (r *Repairer) deliver(ctx context.Context, res *Result, rec eventstore.Record, dryRun bool) error {
	var err error
	res.Deliveries, err = r.deliverTo(ctx, res.Deliveries, rec, dryRun)
	if err != nil {
		return fmt.Errorf("repair %s: %w", res.RentalID, err)
	}
	return nil
}

// deliverTo gives one record to each consumer it wakes, or with dryRun does not,
// and returns deliveries with each one noted.
func (r *Repairer) deliverTo(ctx context.Context, deliveries []Delivery, rec eventstore.Record, dryRun bool) ([]Delivery, error) {
	for _, c := range eventfilter.Consumers() {
		h, ok := r.Consumers[c]
		if !ok || !eventfilter.Wakes(c, rec.Type) {
			continue
		}
		deliveries = append(deliveries, Delivery{Consumer: c, Stream: rec.StreamID, Version: rec.Version, Type: rec.Type})
		if dryRun {
			continue
		}
		if err := h(ctx, rec); err != nil {
			return deliveries, fmt.Errorf("%s refused %s version %d (%s): %w", c, rec.StreamID, rec.Version, rec.Type, err)
		}
	}
	return deliveries, nil
}

// StreamResult is what the repair of one stream did, or with a dry run would do.
type StreamResult struct {
	Stream     string     `json:"stream"`
	Deliveries []Delivery `json:"deliveries"`
}

// ReceiptStreamPrefix starts the id of every provider event's receipt stream
// (command.ReceiptStreamID), the streams RepairStream repairs.
const ReceiptStreamPrefix = "providerevent"

// ErrNotAReceiptStream: RepairStream repairs a provider event's receipt stream
// only; a rental's streams are a rental's repair's.
var ErrNotAReceiptStream = errors.New("repair: not a provider event's receipt stream")

// RepairStream delivers the records of a provider event's receipt stream again, in
// version order, to each consumer its filter lets them through to, as a rental's
// repair does for the rental's streams: a receipt stream belongs to no rental's
// repair, and a reaction to one of its records (the refund owed at a mismatched
// event's receipt, MismatchRefundOwed, which the process records on the payment)
// may have been lost, or recorded before the reaction existed. Every handler is
// idempotent, so it is safe to run twice; with dryRun it only says what it would
// deliver. A consumer that refuses a record stops it with its error.
func (r *Repairer) RepairStream(ctx context.Context, streamID string, dryRun bool) (StreamResult, error) {
	res := StreamResult{Stream: streamID, Deliveries: []Delivery{}}
	if !strings.HasPrefix(streamID, ReceiptStreamPrefix) {
		return res, fmt.Errorf("%w: %q", ErrNotAReceiptStream, streamID)
	}
	recs, err := r.Store.Read(ctx, streamID, 0)
	if err != nil {
		return res, fmt.Errorf("repair %s: %w", streamID, err)
	}
	rctx := process.Repairing(ctx) // what was recorded before the repair is reported as standing, not anew
	for _, rec := range recs {
		if res.Deliveries, err = r.deliverTo(rctx, res.Deliveries, rec, dryRun); err != nil {
			return res, fmt.Errorf("repair %s: %w", streamID, err)
		}
	}
	return res, nil
}

// RepairStuck repairs a rental the sweep found stuck if its case is Automatic, and
// otherwise only reads it: repaired says which, reason why. One read of the rental
// decides both.
func (r *Repairer) RepairStuck(ctx context.Context, rentalID string) (repaired bool, reason string, err error) {
	_, err = r.repair(ctx, rentalID, func(c Case) bool {
		auto, why := c.Automatic()
		reason, repaired = string(c)+": "+why, auto
		return auto
	})
	if err != nil {
		return false, reason, err
	}
	return repaired, reason, nil
}

// caseOf reads the case from a rental's records.
func caseOf(records []eventstore.Record) Case {
	var requested, prepared, settled, started, completed bool
	for _, r := range records {
		switch {
		case r.Type == rental.BikeRequested{}.EventType():
			requested = true
		case r.Type == payment.PaymentPrepared{}.EventType():
			prepared = true
		case payment.Settles(r.Type):
			settled = true
		case rentalpayment.Starts(r.Type):
			started = true
		case rentalpayment.Ends(r.Type):
			completed = true
		}
	}
	switch {
	case completed:
		return CaseCompleted
	case !requested:
		return CaseNoRequest
	case !started && !prepared:
		return CaseNotStarted
	case !started:
		return CaseStartMissing
	case settled:
		return CaseSettled
	}
	return CaseOutstanding
}

// belongs reports whether a record of the rental's bike, payment or process stream
// is about the rental: the bike's stream holds every rental of the bike.
func belongs(r eventstore.Record, rentalID string) bool {
	if e, err := rental.DecodeEvent(r.Type, r.Data); err == nil {
		return rental.RentalOf(e) == rentalID
	}
	return r.StreamID == payment.StreamID(payment.ReferenceFor(rentalID)) || r.StreamID == rentalpayment.StreamID(rentalID)
}

// ErrNotRedeliverable reports a parked record that cannot be delivered again: its
// consumer is not one of the Repairer's, the record is not in the store, or the
// consumer is not woken by its type.
var ErrNotRedeliverable = errors.New("repair: the parked record cannot be delivered again")

// Redeliver reads the record of streamID at version from the store (one Query,
// through eventstore.BackwardReader) and gives it to consumer's handler, as its
// event source mapping would have: the sweep's redelivery of a parked record. It
// returns when the record was recorded, once it is read.
func (r *Repairer) Redeliver(ctx context.Context, consumer, streamID string, version int64) (time.Time, error) {
	h, ok := r.Consumers[consumer]
	if !ok {
		return time.Time{}, fmt.Errorf("%w: unknown consumer %q", ErrNotRedeliverable, consumer)
	}
	br, ok := r.Store.(eventstore.BackwardReader)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: the store reads no single version", ErrNotRedeliverable)
	}
	recs, err := br.ReadBackward(ctx, streamID, version+1, 1)
	if err != nil {
		return time.Time{}, fmt.Errorf("repair: read %s version %d: %w", streamID, version, err)
	}
	if len(recs) != 1 || recs[0].Version != version {
		return time.Time{}, fmt.Errorf("%w: %s has no version %d", ErrNotRedeliverable, streamID, version)
	}
	rec := recs[0]
	if !eventfilter.Wakes(consumer, rec.Type) {
		return rec.RecordedAt, fmt.Errorf("%w: %s is not woken by %s", ErrNotRedeliverable, consumer, rec.Type)
	}
	if err := h(ctx, rec); err != nil {
		return rec.RecordedAt, fmt.Errorf("repair: %s refused %s version %d (%s): %w", consumer, streamID, version, rec.Type, err)
	}
	return rec.RecordedAt, nil
}
