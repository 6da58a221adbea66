package main

import (
	"context"
	"fmt"
	"text/tabwriter"
)

const parkedUsage = `Usage: rentalctl parked [flags]

Lists the stream records the process or the projector could not handle when they
came (a settlement a moment before its process recorded its start, a provider that
did not answer), parked so that the records after them were not held up: soonest
due first. Every sweep delivers the due ones to their consumer again, and puts off
those that still fail, waiting longer each time (up to 5 minutes); the
ParkedRecords alarm reports one still failing half an hour after it was recorded,
and the sweep's log says why. Each row names the consumer, the record's stream
and version, and when it is due (when it was parked). They are the rows of the
redelivery kind, which the records of the consumer's parking stream of the
record's stream open and settle: it reads the Deadlines table's index, a query
per shard, and never scans; it only reads, and is safe to run at any time.

Needs dynamodb:Query on the Deadlines table's DueByKind index.
`

func runParked(ctx context.Context, c *cli, args []string) error {
	stack, asJSON, err := openListing(ctx, c, "parked", parkedUsage, pendingIndex, args)
	if err != nil {
		return err
	}
	list, err := stack.Parked(ctx)
	if err != nil {
		return failed("parked", err)
	}
	if asJSON {
		return c.printJSON(list)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CONSUMER\tSTREAM\tVERSION\tDUE")
	for _, r := range list.Parked {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Consumer, r.StreamID, r.Version, timestamp(r.Due))
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%s\n", count(list.Count, "parked stream record"))
	return nil
}
