package ctl

import (
	"context"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Summary is what a sweep did.
type Summary = deadline.Summary

// Sweep runs the sweep once as of now, as the sweep function does on its schedule:
// it gives up on the overdue payments, repairs the stuck rentals that need no
// operator (unless STUCK_REPAIR is off), asks the provider again for the
// cancellations owed to it and delivers the parked records that are due. A
// SettingsError means it did not start; any other error is the sweep's, returned
// with what it did.
func (s *Stack) Sweep(ctx context.Context, now time.Time) (Summary, error) {
	sweeper, err := s.sweeper(ctx)
	if err != nil {
		return Summary{}, err
	}
	return sweeper.Sweep(ctx, now)
}

// sweeper is the sweep function's sweep, wired as the function wires it.
func (s *Stack) sweeper(ctx context.Context) (*deadline.Sweeper, error) {
	provider, err := s.provider(ctx)
	if err != nil {
		return nil, err
	}
	core, err := wiring.Core(s.cfg, s.getenv, s.logger, command.WithProvider(provider))
	if err != nil {
		return nil, settings(err)
	}
	sweeper, err := wiring.Sweeper(core.Projection, core.Process, s.getenv, s.logger, nil)
	if err != nil {
		return nil, settings(err)
	}
	repairs, err := wiring.StuckRepairs(core, s.cfg, s.getenv)
	if err != nil {
		return nil, settings(err)
	}
	receivers := deadlinekinds.Receivers{Canceller: core.Process, Flagger: core.Commands}
	if repairs != nil {
		receivers.Repairer = repairs
	}
	if err := wiring.Receiving(sweeper, receivers, s.getenv); err != nil {
		return nil, settings(err)
	}
	sweeper.Retrier = deadlinekinds.Retrier(core.Commands)
	redelivery, parked, err := wiring.Redelivery(core, s.cfg, s.getenv)
	if err != nil {
		return nil, settings(err)
	}
	sweeper.Redeliverer, sweeper.Parked = redelivery, parked
	return sweeper, nil
}
