package ctl

import (
	"context"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

// Summary is what a sweep did: a summary per kind (Summary.Of), and the owed
// cancellations' and the parked records'.
type Summary = sweep.Summary

// The names of the kinds whose counts rentalctl sweep prints on lines of their
// own, as declared in deadlinekinds.
const (
	KindPayment = deadlinekinds.Payment
	KindStuck   = deadlinekinds.Stuck
)

// Sweep runs the sweep once as of now, as the sweep function does on its schedule:
// it gives up on the overdue payments, repairs the stuck rentals that need no
// operator (unless STUCK_REPAIR is off), asks the provider again for the
// cancellations owed to it and delivers the parked records that are due. A
// SettingsError means it did not start; any other error is the sweep's, returned
// with what it did.
func (s *Stack) Sweep(ctx context.Context, now time.Time) (Summary, error) {
	provider, err := s.provider(ctx)
	if err != nil {
		return Summary{}, err
	}
	// The sweep function's own recipe, its commands reaching the provider.
	sweeper, err := sweepfn.Sweep(s.cfg, s.getenv, s.logger, nil, provider)
	if err != nil {
		return Summary{}, settings(err)
	}
	return sweeper.Sweep(ctx, now)
}
