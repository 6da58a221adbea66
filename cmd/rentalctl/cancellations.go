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
them. Each row names the payment, its rental, since when the cancellation is
owed, and when the sweep asks the provider next: at the next sweep, or later once
the provider left retries unanswered (1 minute, doubling, up to an hour, from when
it became owed, counted in sweeps of SWEEP_RATE). They are the rows of the
cancellation kind: it reads the Deadlines table's index, a query per shard; it
never scans, only reads, and is safe to run at any time.

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
	fmt.Fprintln(w, "PAYMENT\tRENTAL\tOWED SINCE\tAGE\tNEXT TRY")
	for _, r := range list.Cancellations {
		next := "next sweep"
		if r.Due.After(list.Now) {
			next = timestamp(r.Due) // put off: the provider left a retry unanswered
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Reference, r.RentalID, timestamp(r.OwedAt), seconds(list.Now.Sub(r.OwedAt)), next)
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%s owed to the provider\n", count(list.Count, "cancellation"))
	return nil
}
