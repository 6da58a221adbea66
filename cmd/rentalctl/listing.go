package main

import (
	"context"

	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// What a read-only listing reads: the Deadlines table's index, or a scan of
// the Events table.
type listingSource int

const (
	pendingIndex listingSource = iota
	eventsScan
)

// openListing parses the flags of a read-only listing (its table, its shards for
// the index, --json) and opens the stack it reads; asJSON reports --json.
func openListing(ctx context.Context, c *cli, name, usage string, source listingSource, args []string) (stack *ctl.Stack, asJSON bool, err error) {
	var (
		table  string
		shards int
	)
	f := newFlags(name, usage, c.getenv)
	required := "deadlines-table"
	switch source {
	case pendingIndex:
		f.deadlinesTable(&table, "to read")
		f.intEnv(&shards, "shards", envShards, ctl.DefaultShards, "the index write shards of the Deadlines table")
	case eventsScan:
		f.eventsTable(&table, "to scan")
		required = "events-table"
	}
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return nil, false, err
	}
	stack, err = f.open(ctx, c, required)
	return stack, asJSON, err
}
