package ctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/wiring"
)

// RepairResult is what the repair of one rental did, or with a dry run would do.
type RepairResult = repair.Result

// RepairList is what repair did.
type RepairList struct {
	DryRun  bool           `json:"dryRun"`
	Rentals []RepairResult `json:"rentals"`
}

// Repairs delivers rentals' records again to the handlers the stream consumers
// run: the rental-payment process and the projector.
type Repairs struct {
	stack    *Stack
	repairer *repair.Repairer
}

// Repairs opens the event store, the process (with its payment provider) and the
// Deadlines table as the projector writes it, and checks that the table's shard
// count is the settings'.
func (s *Stack) Repairs(ctx context.Context) (*Repairs, error) {
	store, err := s.store()
	if err != nil {
		return nil, err
	}
	process, err := s.process(ctx, store)
	if err != nil {
		return nil, err
	}
	table, err := wiring.DeadlineProjection(s.cfg, s.getenv)
	if err == nil && table == nil {
		err = wiring.ErrNoDeadlinesTable
	}
	if err != nil {
		return nil, settings(err)
	}
	if err := table.CheckShards(ctx); err != nil {
		return nil, err
	}
	// The projector's handler, as the projector function runs it: each record as
	// the Events table's stream decoder reads it.
	projector := func(ctx context.Context, r eventstore.Record) error { return table.Apply(ctx, dynamo.RecordOf(r)) }
	return &Repairs{stack: s, repairer: &repair.Repairer{Store: store, Consumers: map[string]repair.Handler{
		eventfilter.Process: process.Handle, eventfilter.Projector: projector,
	}}}, nil
}

// Stuck returns the rentals the auditor reports stuck, each once, in the order of
// the audit's report. It runs an audit (a scan of the Events table, and the
// Deadlines table's rows through its index) with the checks that need a quiet
// service: a rental still in flight may be reported too, and repairing it does
// what its consumers are about to do, no more.
func (r *Repairs) Stuck(ctx context.Context) ([]string, error) {
	report, err := r.stack.Audit(ctx, audit.Options{Quiet: true, Now: time.Now}, audit.DefaultScanSegments)
	if err != nil {
		return nil, fmt.Errorf("audit before the repair: %w", err)
	}
	var ids []string
	seen := map[string]bool{}
	for _, v := range report.Violations {
		if v.Rental != "" && !seen[v.Rental] {
			seen[v.Rental] = true
			ids = append(ids, v.Rental)
		}
	}
	return ids, nil
}

// Repair repairs each of the rentals in turn (with dryRun, only says what it would
// deliver) and calls done, if not nil, after each one repaired. A rental whose
// repair fails does not stop the others: the errors are joined.
func (r *Repairs) Repair(ctx context.Context, rentalIDs []string, dryRun bool, done func(rentalID string, res RepairResult)) (RepairList, error) {
	out := RepairList{DryRun: dryRun, Rentals: []RepairResult{}}
	var errs []error
	for _, id := range rentalIDs {
		res, err := r.repairer.Repair(ctx, id, dryRun)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.Rentals = append(out.Rentals, res)
		if done != nil {
			done(id, res)
		}
	}
	return out, errors.Join(errs...)
}

// StreamRepair is what the repair of one stream did, or with a dry run would do.
type StreamRepair = repair.StreamResult

// Delivery is one record a repair gave one consumer.
type Delivery = repair.Delivery

// ReceiptStreamPrefix starts the id of every stream RepairStream repairs: a
// provider event's receipt stream.
const ReceiptStreamPrefix = repair.ReceiptStreamPrefix

// RepairStream delivers a provider event's receipt stream's records again to the
// handlers the stream consumers run (repair.Repairer.RepairStream): what the
// auditor asks for a refund owed at a mismatched event's receipt that its payment
// does not record.
func (r *Repairs) RepairStream(ctx context.Context, streamID string, dryRun bool) (StreamRepair, error) {
	return r.repairer.RepairStream(ctx, streamID, dryRun)
}
