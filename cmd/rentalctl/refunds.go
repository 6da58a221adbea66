package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"
)

const refundsUsage = `Usage: rentalctl refunds [flags]

Lists the refunds the service owes, oldest first: money a payment provider that
cannot refund (the generic provider) took for a rental that did not get its bike.
Each needs paying back by hand, and leaves the list once that is recorded
(rentalctl refund-made-by-hand); the RefundsOwed alarm reports them as they
happen. Refunds through Stripe are made by the service itself and are not listed.

It scans the Events table, filtered on RefundOwed and the events that settle a
refund (PaymentRefunded, RefundMadeByHand), so it reads
the whole table, printing on stderr how many events it has scanned after each page;
it only reads, and is safe to run at any time. Needs dynamodb:Scan on the Events
table.
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
	fmt.Fprintln(w, "PAYMENT\tRENTAL\tPROVIDER PAYMENT\tAMOUNT\tOWED SINCE")
	for _, o := range list.Refunds {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d.%02d %s\t%s\n", o.PaymentReference, o.RentalID, o.PaymentID, o.Amount/100, o.Amount%100, o.Currency, timestamp(o.OwedSince))
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%s owed\n", count(list.Count, "refund"))
	return nil
}
