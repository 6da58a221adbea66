package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/pendingtable"
	"github.com/bikerental/bikerental/internal/app/deadline"
)

const parkedUsage = `Usage: rentalctl parked [flags]

Lists the stream records the process or the projector could not handle when they
came (a settlement a moment before its process recorded its start, a provider that
did not answer), parked so that the records after them were not held up: soonest
due first. Every sweep delivers the due ones to their consumer again, and puts off
those that still fail, waiting longer each time (up to 5 minutes); the
ParkedRecords alarm reports one still failing half an hour after it was recorded,
and the sweep's log says why. Each row names the consumer, the record's stream
and version, and when it is due. It reads the PendingPayments table's index, a
query per shard, and never scans; it only reads, and is safe to run at any time.

Needs dynamodb:Query on the PendingPayments table's ByPreparedAt index.
`

// parkedList is what parked --json prints.
type parkedList struct {
	Now    time.Time         `json:"now"`
	Parked []deadline.Parked `json:"parked"`
	Count  int               `json:"count"`
}

func runParked(ctx context.Context, c *cli, args []string) error {
	var (
		pendingTable string
		shards       int
		asJSON       bool
	)
	f := newFlags("parked", parkedUsage, c.getenv)
	f.pendingTable(&pendingTable, "to read")
	f.intEnv(&shards, "shards", envShards, pendingtable.DefaultShards, "the index write shards of the PendingPayments table")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	projection, err := f.pendingReader(ctx, c, "parked")
	if err != nil {
		return err
	}
	// The rows stamped below 0 of the open processes' partitions: the owed
	// cancellations and the parked records, no open process.
	backlog, _, err := projection.Backlog(ctx, time.UnixMilli(0))
	if err != nil {
		return fmt.Errorf("parked: %s: %w", pendingTable, err)
	}
	rows := backlog.Parked
	list := parkedList{Now: time.Now().UTC(), Parked: rows, Count: len(rows)}
	if list.Parked == nil {
		list.Parked = []deadline.Parked{}
	}
	if asJSON {
		return c.printJSON(list)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CONSUMER\tSTREAM\tVERSION\tDUE")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Consumer, r.StreamID, r.Version, timestamp(r.Due))
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%s\n", count(len(rows), "parked stream record"))
	return nil
}
