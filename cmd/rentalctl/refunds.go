package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

const refundsUsage = `Usage: rentalctl refunds [flags]

Lists the refunds the service owes, oldest first: money a payment provider took
for a rental that did not get its bike and could not refund (the generic provider
cannot refund at all; Stripe refuses some refunds for good, say of a disputed
payment, and REASON then says what it refused). Each refund is a line of its own:
a rental may owe the refund of its own payment's late success (CAUSE late-success)
and one per other provider payment that the provider reported taking money on
under the rental's payment reference (CAUSE other-payment, from a mismatched
event). PROVIDER PAYMENT names the payment the money was taken on; AMOUNT is what
the provider said it took ("unknown" where it did not say). Each needs paying back
by hand, and leaves the list once that is recorded (rentalctl refund-made-by-hand,
with --payment-id for a refund on another provider payment); the RefundsOwed alarm
reports them as they happen. A refund Stripe fails for a while, or refuses for a
reason an operator fixes at Stripe (a key without the right to refund, a balance
too low), is not listed: it is retried until it is made.

It scans the Events table, filtered on the events that open or settle a refund
owed (RefundOwed, UnexpectedRefundOwed, PaymentRefunded, RefundMadeByHand,
UnexpectedRefundMadeByHand), so it reads the whole table, printing on stderr how
many events it has scanned after each page; it only reads, and is safe to run at
any time. Needs dynamodb:Scan on the Events table.
`

func runRefunds(ctx context.Context, c *cli, args []string) error {
	stack, asJSON, err := openListing(ctx, c, "refunds", refundsUsage, eventsScan, args)
	if err != nil {
		return err
	}
	start := time.Now()
	list, err := stack.Refunds(ctx, func(scanned int) {
		fmt.Fprintf(c.stderr, "%s scanned (%s)\n", count(scanned, "event"), seconds(time.Since(start)))
	})
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(list)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PAYMENT\tRENTAL\tPROVIDER PAYMENT\tCAUSE\tAMOUNT\tOWED SINCE\tREASON")
	for _, o := range list.Refunds {
		reason := o.Reason
		if reason == "" {
			reason = "-"
		}
		amount := "unknown " + o.Currency
		if o.Amount != 0 {
			amount = formatAmount(o.Amount, o.Currency)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.PaymentReference, o.RentalID, o.PaymentID, o.Cause, strings.TrimSpace(amount),
			timestamp(o.OwedSince), reason)
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%s owed\n", count(list.Count, "refund"))
	return nil
}
