package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/wiring"
)

const cancelUsage = `Usage: rentalctl cancel [flags] RENTAL_ID

Sends CancelRentalPayment for the rental, as POST /rentals/{id}/cancel-payment and
the sweep do, and prints the outcome:
  cancelled      the payment was called off; the bike is released when the
                 rental-payment process handles the PaymentCancelled
  declined       the payment was already confirmed: the rental stands
  nothing-to-do  no process waits on a payment: the rental is unknown, its process
                 has ended, or its payment was already cancelled or rejected
All three are answers, not failures: each exits 0, and sending it again is safe.
The events it causes name "rentalctl:cancel:<time>" as their cause.

Exits 1 if the command could not be carried out, 2 if RENTAL_ID cannot be a
rental id. Needs dynamodb:Query and dynamodb:PutItem on the Events table.
`

// cancelResult is what cancel --json prints: the answer of POST
// /rentals/{id}/cancel-payment.
type cancelResult struct {
	RentalID string          `json:"rentalId"`
	Outcome  process.Outcome `json:"outcome"`
}

// outcomeSentences say what each outcome means for the rental.
var outcomeSentences = map[process.Outcome]string{
	process.OutcomeCancelled:   "the payment was called off; the bike is released once the rental-payment process handles the cancellation",
	process.OutcomeDeclined:    "the payment was already confirmed, so the rental stands",
	process.OutcomeNothingToDo: "no payment was waiting: the rental is unknown, its process has ended, or its payment was already cancelled or rejected",
}

func runCancel(ctx context.Context, c *cli, args []string) error {
	r, err := parseRentalCommand(ctx, c, args, "cancel", cancelUsage, "the process reads and appends to")
	if err != nil {
		return err
	}
	rentalID, eventsTable, store, asJSON := r.rentalID, r.eventsTable, r.store, r.asJSON
	provider, err := paymentProvider(ctx, r.cfg, r.flags.lookup)
	if err != nil {
		return configError("cancel", err)
	}
	process, err := wiring.Process(store, command.New(store, command.WithProvider(provider)), r.flags.lookup, c.logger())
	if err != nil {
		return configError("cancel", err)
	}
	meta := command.Meta{CausationID: "rentalctl:cancel:" + time.Now().UTC().Format(time.RFC3339Nano)}
	outcome, err := process.CancelRentalPayment(ctx, rentalID, meta)
	if err != nil {
		return fmt.Errorf("cancel %s (Events table %s): %w", rentalID, eventsTable, err)
	}
	if asJSON {
		return c.printJSON(cancelResult{RentalID: rentalID, Outcome: outcome})
	}
	fmt.Fprintf(c.stdout, "%s: %s: %s\n", rentalID, outcome, outcomeSentences[outcome])
	return nil
}
