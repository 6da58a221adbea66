// Package repair brings a rental's process and projection to where its events say
// they should be, from the event store alone: for records that left the stream
// (it keeps them 24 hours) or ended in a dead-letter queue, whose message names
// only a shard and a sequence range. It delivers the rental's records again to the
// same idempotent handlers the stream consumers run, so it writes nothing by hand,
// is safe to run twice, and safe while the live consumers run.
package repair

import (
	"context"
	"fmt"
	"sort"

	"github.com/bikerental/bikerental/internal/eventfilter"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/payment"
	"github.com/bikerental/bikerental/internal/rental"
	"github.com/bikerental/bikerental/internal/rentalview"
)

// Handler is one stream consumer's handler of a record, as the functions run it:
// (*rentalpayment.Process).Handle, (*deadline.Projection).Apply.
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
	Before     rentalview.Status `json:"before"`
	After      rentalview.Status `json:"after"`
	Deliveries []Delivery        `json:"deliveries"`
}

// Repair reads the rental's bike and payment streams and delivers the rental's
// records, in the order they were recorded, to each consumer they wake; with
// dryRun it only says which. A consumer that still refuses a record (a payment
// whose provider is down, say) stops the repair with its error; run it again later.
func (r *Repairer) Repair(ctx context.Context, rentalID string, dryRun bool) (Result, error) {
	res := Result{RentalID: rentalID, Deliveries: []Delivery{}}
	before, err := rentalview.Load(ctx, r.Store, rentalID)
	if err != nil {
		return res, err
	}
	res.Before, res.After = before.Status, before.Status
	bikeID, _ := rental.BikeIDOf(rentalID) // Load refused an invalid rental id already
	var records []eventstore.Record
	for _, stream := range []string{rental.StreamID(bikeID), payment.StreamID(payment.ReferenceFor(rentalID))} {
		recs, err := r.Store.Read(ctx, stream, 0)
		if err != nil {
			return res, err
		}
		for _, rec := range recs {
			if belongs(rec, rentalID) {
				records = append(records, rec)
			}
		}
	}
	sort.SliceStable(records, func(i, j int) bool { return records[i].RecordedAt.Before(records[j].RecordedAt) })
	consumers := eventfilter.Consumers()
	for _, rec := range records {
		for _, c := range consumers {
			h, ok := r.Consumers[c]
			if !ok || !eventfilter.Wakes(c, rec.Type) {
				continue
			}
			res.Deliveries = append(res.Deliveries, Delivery{Consumer: c, Stream: rec.StreamID, Version: rec.Version, Type: rec.Type})
			if dryRun {
				continue
			}
			if err := h(ctx, rec); err != nil {
				return res, fmt.Errorf("repair %s: %s refused %s version %d (%s): %w", rentalID, c, rec.StreamID, rec.Version, rec.Type, err)
			}
		}
	}
	if !dryRun {
		after, err := rentalview.Load(ctx, r.Store, rentalID)
		if err != nil {
			return res, err
		}
		res.After = after.Status
	}
	return res, nil
}

// belongs reports whether a record of the rental's bike or payment stream is about
// the rental: the bike's stream holds every rental of the bike.
func belongs(r eventstore.Record, rentalID string) bool {
	if e, err := rental.DecodeEvent(r.Type, r.Data); err == nil {
		return rental.RentalOf(e) == rentalID
	}
	return r.StreamID == payment.StreamID(payment.ReferenceFor(rentalID))
}
