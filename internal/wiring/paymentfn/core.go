package paymentfn

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Service is the parts of a function that sends payment commands, wired together.
// Deadlines, the to-do list's listings, is nil when DEADLINES_TABLE is not set.
type Service struct {
	Store     *dynamo.Store
	Commands  *command.Handler
	Process   *process.Process
	Deadlines *deadlinekinds.Listing
}

// Commands returns the command handler on store, configured by opts, with the
// generic provider (which only calls back) unless opts set another: the payment
// provider is picked here, never by package command.
func Commands(store eventstore.Store, opts ...command.Option) *command.Handler {
	return command.New(store, append([]command.Option{command.WithProvider(generic.Provider{})}, opts...)...)
}

// Core wires the parts the command function and the sweep share: the event store,
// the command handler, the rental-payment process and (when DEADLINES_TABLE is set)
// the to-do list's listings. It needs no secret. The command handler flags returns
// overdue by RENTAL_PERIOD; opts configure it further (Commands: the generic
// provider unless they set one, Payments.Option the configured one).
func Core(cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, opts ...command.Option) (*Service, error) {
	store, err := wiring.EventStore(cfg, getenv)
	if err != nil {
		return nil, err
	}
	// The returns the commands flag overdue are due RENTAL_PERIOD after their
	// approval, for every caller: the sweep function, rentalctl and the tools.
	period, err := wiring.RentalPeriod(getenv)
	if err != nil {
		return nil, err
	}
	commands := Commands(store, append([]command.Option{command.WithRentalPeriod(period)}, opts...)...)
	process, err := wiring.Process(store, commands, getenv, logger)
	if err != nil {
		return nil, err
	}
	listing, err := wiring.DeadlinesReader(cfg, getenv)
	if err != nil {
		return nil, err
	}
	return &Service{Store: store, Commands: commands, Process: process, Deadlines: listing}, nil
}
