package main

import (
	"context"
	"fmt"
	"text/tabwriter"
)

const cancellationsUsage = `Usage: rentalctl cancellations [flags]

Lists the cancellations owed to the payment provider, oldest first: payments the
service gave up on (their bikes are released) while the provider did not answer
the cancellation, so that the payment may still be payable there. Every sweep asks
the provider again until it confirms the cancellation, or reports that the payment
succeeded meanwhile (which is then refunded); the CancellationsOwed alarm reports
them. Each row names the payment, its rental and since when the cancellation is
owed. It reads the Deadlines table's index, a query per shard, and never
scans; it only reads, and is safe to run at any time.

Needs dynamodb:Query on the Deadlines table's DueByKind index.
`

func runCancellations(ctx context.Context, c *cli, args []string) error {
	stack, asJSON, err := openListing(ctx, c, "cancellations", cancellationsUsage, pendingIndex, args)
	if err != nil {
		return err
	}
	list, err := stack.Cancellations(ctx)
	if err != nil {
		return failed("cancellations", err)
	}
	if asJSON {
		return c.printJSON(list)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PAYMENT\tRENTAL\tOWED SINCE\tAGE")
	for _, r := range list.Cancellations {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Reference, r.RentalID, timestamp(r.OwedAt), seconds(list.Now.Sub(r.OwedAt)))
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%s owed to the provider\n", count(list.Count, "cancellation"))
	return nil
}
