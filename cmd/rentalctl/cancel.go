package main

import (
	"context"
	"fmt"

	"github.com/bikerental/bikerental/internal/ops/ctl"
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

// outcomeSentences say what each outcome means for the rental.
var outcomeSentences = map[ctl.Outcome]string{
	ctl.OutcomeCancelled:   "the payment was called off; the bike is released once the rental-payment process handles the cancellation",
	ctl.OutcomeDeclined:    "the payment was already confirmed, so the rental stands",
	ctl.OutcomeNothingToDo: "no payment was waiting: the rental is unknown, its process has ended, or its payment was already cancelled or rejected",
}

func runCancel(ctx context.Context, c *cli, args []string) error {
	r, err := parseRentalCommand(ctx, c, args, "cancel", cancelUsage, "the process reads and appends to")
	if err != nil {
		return err
	}
	res, err := r.stack.Cancel(ctx, r.rentalID)
	if err != nil {
		return failed("cancel", err)
	}
	if r.asJSON {
		return c.printJSON(res)
	}
	fmt.Fprintf(c.stdout, "%s: %s: %s\n", res.RentalID, res.Outcome, outcomeSentences[res.Outcome])
	return nil
}
