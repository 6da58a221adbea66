package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

const refundMadeByHandUsage = `Usage: rentalctl refund-made-by-hand [flags] RENTAL_ID

Records that a refund the service owes for the rental (listed by rentalctl
refunds and GET /refunds/owed) was paid back by hand: --amount, in minor units of
the currency owed, which must be the amount owed; --reference, your own reference
of the refund (a bank transfer's id, say); --by, who recorded it. All three are
required: --by has no default, so that the record names a person, not the account
the command happens to run under. A rental may owe two refunds or more, each on
the provider payment that took the money: --payment-id names which, as rentalctl
refunds lists it (PROVIDER PAYMENT); left out, it is the refund of the rental's own
payment. --currency, where given, must be the currency owed; it is required for
money a provider took without saying in which currency (AMOUNT reads "unknown").
It records RefundMadeByHand (or, for money taken on another provider payment,
UnexpectedRefundMadeByHand) in the payment's stream, as POST
/rentals/{id}/refund-made-by-hand does; the refund leaves the list of refunds owed
once the projector has handled it, and the auditor counts the money returned. No
payment provider is called. The event names "rentalctl:refund-made-by-hand:<time>"
as its cause.

It is refused, and changes nothing, when the rental owes no such refund to be made
by hand (no money was taken after its payment was given up on, nothing is owed on
the provider payment named, or the provider is refunding it), when that refund is
recorded as made already (by hand or by the provider: running it a second time is
refused), or for another amount or currency than owed (the message says what is
owed).

Exits 1 if it was refused or could not be carried out (an unknown rental
included), 2 for a bad command line (RENTAL_ID that cannot be a rental id, an
amount that is not from 1 to 99999999, a reference, name or provider payment id
that is empty, too long or not printable, a currency that is not 3 upper-case
letters). Needs dynamodb:Query and dynamodb:PutItem on the Events table.
`

func runRefundMadeByHand(ctx context.Context, c *cli, args []string) error {
	var (
		eventsTable, reference, by, paymentID, currency string
		amount                                          int64
		asJSON                                          bool
	)
	f := newFlags("refund-made-by-hand", refundMadeByHandUsage, c.getenv)
	f.eventsTable(&eventsTable, "to read and append to")
	f.fs.Int64Var(&amount, "amount", 0, "the amount paid back, in minor units of the payment's currency: the amount owed (required)")
	f.fs.StringVar(&reference, "reference", "", fmt.Sprintf("your reference of the refund, such as a bank transfer's id, 1 to %d characters (required)", payment.MaxOperatorReferenceLength))
	f.fs.StringVar(&by, "by", "", "who recorded it: your name or operator id (required)")
	f.fs.StringVar(&paymentID, "payment-id", "", "the provider payment the refund is owed on, as rentalctl refunds lists it (default: the rental's own payment)")
	f.fs.StringVar(&currency, "currency", "", "the currency paid back: the currency owed (default: the one owed)")
	f.jsonFlag(&asJSON)
	pos, err := f.parse(args, c, "RENTAL_ID")
	if err != nil {
		return err
	}
	rentalID := pos[0]
	if err := f.rentalID(c, rentalID); err != nil {
		return err
	}
	if err := payment.CheckAmount(amount); err != nil {
		return f.fail(c, "-amount: %w", err)
	}
	if err := payment.CheckText("-reference", reference, payment.MaxOperatorReferenceLength); err != nil {
		return f.fail(c, "%w", err)
	}
	if err := payment.CheckText("-by", by, payment.MaxRecordedByLength); err != nil {
		return f.fail(c, "%w", err)
	}
	if paymentID != "" {
		if err := payment.CheckText("-payment-id", paymentID, payment.MaxEventIDLength); err != nil {
			return f.fail(c, "%w", err)
		}
	}
	if currency != "" {
		if err := payment.CheckCurrency(currency); err != nil {
			return f.fail(c, "-currency: %w", err)
		}
	}
	stack, err := f.open(ctx, c, "events-table")
	if err != nil {
		return err
	}
	res, err := stack.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{PaymentID: paymentID, Amount: amount, Currency: currency,
		OperatorReference: reference, RecordedBy: by})
	if err != nil {
		return failed("refund-made-by-hand", err)
	}
	if asJSON {
		return c.printJSON(res)
	}
	fmt.Fprintf(c.stdout, "%s: %s: %s paid back by hand under reference %s, recorded by %s at %s (owed on provider payment %s)\n", res.RentalID, res.Refund,
		formatAmount(res.Amount, res.Currency), strconv.Quote(res.Reference), strconv.Quote(res.RecordedBy), timestamp(res.RecordedAt), strconv.Quote(res.PaymentID))
	return nil
}
