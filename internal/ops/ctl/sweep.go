package ctl

import (
	"context"
	"time"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

// Summary is what a sweep did, as the sweep function answers: its now, whether it
// stopped early for its deadline, and a summary per kind it covers, the
// cancellations owed to the provider and the parked records' redeliveries
// included (Summary.Kind).
type Summary = awslambda.Summary

// The names of the kinds whose counts rentalctl sweep prints on lines of their
// own, as declared in deadlinekinds.
const (
	KindPayment      = deadlinekinds.Payment
	KindStuck        = deadlinekinds.Stuck
	KindCancellation = deadlinekinds.Cancellation
	KindRedelivery   = deadlinekinds.Redelivery
)

// Sweep runs the sweep once as of now, as the sweep function does on its schedule
// (sweepfn.New, Run): it gives up on the overdue payments, repairs the stuck
// rentals that need no operator (unless STUCK_REPAIR is off), flags the overdue
// returns, asks the provider again for the cancellations owed to it whose backoff
// lets it, and delivers the parked records that are due. A SettingsError means it
// did not start; any other error is the sweep's, returned with what it did.
func (s *Stack) Sweep(ctx context.Context, now time.Time) (Summary, error) {
	provider, err := s.provider(ctx)
	if err != nil {
		return Summary{}, err
	}
	// The sweep function's own recipe, its commands reaching the provider.
	sweep, err := sweepfn.New(s.cfg, s.getenv, s.logger, nil, provider)
	if err != nil {
		return Summary{}, settings(err)
	}
	return sweep.Run(ctx, now)
}
