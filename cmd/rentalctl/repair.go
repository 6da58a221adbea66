package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/bikerental/bikerental/internal/ops/ctl"
)

const repairUsage = `Usage: rentalctl repair [flags] RENTAL_ID
       rentalctl repair [flags] --stuck
       rentalctl repair [flags] --stream STREAM_ID

Brings a rental's process and the Deadlines table to where the rental's
events say they should be: it reads the rental's records from its bike's, its
payment's and its process's streams and delivers them again, in the order they were recorded, to
the handlers the stream consumers run (the rental-payment process, the
projector), each the records its filter lets through. For records that left the
stream (DynamoDB Streams keeps them 24 hours) or ended in a dead-letter queue,
whose message names only a shard and a sequence range. Every handler is
idempotent, so a repair is safe to run twice and while the service runs; it
writes no event by hand. A reaction that still fails (a provider that is down)
stops the repair with its error: run it again later.

With --stuck, it repairs every rental the auditor reports stuck (a process never
started or never completed, a bike not told how its rental ended, an outstanding
payment missing from Deadlines); that runs an audit first, a scan of both
tables, with the checks that need a quiet service: a rental still in flight may be
repaired too, which does what its consumers were about to do. --dry-run lists the
deliveries and changes nothing.

With --stream, it delivers again the records of one provider event's receipt
stream (providerevent-...), which no rental's repair reads: what the auditor asks
for money another provider payment took whose refund is owed at the event's
receipt (MismatchRefundOwed) but recorded on no payment, so that no list shows it
(money-kept); the process then records it owed on the payment, where rentalctl
refunds lists it.

Each rental's case is printed with it (docs/decisions/0007-stuck-rentals.md). The
sweep repairs most cases on its own; a rental whose payment was never prepared
(not-started) it leaves to an operator, because repairing it prepares the payment
now, long after the renter asked: decide, then run this command.

Needs what the process and the projector need (dynamodb:Query and PutItem on the
Events table, UpdateItem on Deadlines, the payment provider's secret), and
for --stuck what rentalctl audit needs.
`

func runRepair(ctx context.Context, c *cli, args []string) error {
	var (
		eventsTable, deadlinesTable, stream string
		stuck, dryRun, asJSON               bool
	)
	f := newFlags("repair", repairUsage, c.getenv)
	f.eventsTable(&eventsTable, "to read and append to")
	f.deadlinesTable(&deadlinesTable, "to project into")
	f.fs.BoolVar(&stuck, "stuck", false, "repair every rental the auditor reports stuck")
	f.fs.StringVar(&stream, "stream", "", "deliver a provider event's receipt stream's records again, instead of a rental's")
	f.fs.BoolVar(&dryRun, "dry-run", false, "list what would be delivered; change nothing")
	f.jsonFlag(&asJSON)
	var ids []string
	if stuckFlag(args) || streamFlag(args) {
		if _, err := f.parse(args, c); err != nil {
			return err
		}
	} else {
		pos, err := f.parse(args, c, "RENTAL_ID")
		if err != nil {
			return err
		}
		if err := f.rentalID(c, pos[0]); err != nil {
			return err
		}
		ids = pos
	}
	if streamFlag(args) && (stuck || !strings.HasPrefix(stream, ctl.ReceiptStreamPrefix)) {
		return f.fail(c, "-stream: want a provider event's receipt stream (%s...), without --stuck", ctl.ReceiptStreamPrefix)
	}
	stack, err := f.open(ctx, c, "events-table", "deadlines-table")
	if err != nil {
		return err
	}
	repairs, err := stack.Repairs(ctx)
	if err != nil {
		return failed("repair", err)
	}
	if stream != "" {
		res, err := repairs.RepairStream(ctx, stream, dryRun)
		if err != nil {
			return failed("repair", err)
		}
		if asJSON {
			return c.printJSON(res)
		}
		printDeliveries(c.stdout, stream, res.Deliveries, dryRun)
		return nil
	}
	if stuck {
		found, err := repairs.Stuck(ctx)
		if err != nil {
			return err
		}
		ids = append(ids, found...)
	}
	out, repairErr := repairs.Repair(ctx, ids, dryRun, func(id string, res ctl.RepairResult) {
		if !asJSON {
			printRepair(c.stdout, id, res, dryRun)
		}
	})
	if asJSON {
		if err := c.printJSON(out); err != nil {
			return err
		}
	} else if stuck {
		fmt.Fprintf(c.stdout, "%s\n", count(len(ids), "stuck rental"))
	}
	return repairErr
}

// printRepair prints a rental's repair for people: its case, its status before and
// after, and the records delivered (or, with a dry run, that would be).
func printRepair(out io.Writer, id string, res ctl.RepairResult, dryRun bool) {
	fmt.Fprintf(out, "%s (%s): %s -> %s, %s\n", id, res.Case, res.Before, res.After, deliveries(res.Deliveries, dryRun))
}

// printDeliveries prints a stream's repair for people: the records delivered (or,
// with a dry run, that would be).
func printDeliveries(out io.Writer, stream string, ds []ctl.Delivery, dryRun bool) {
	fmt.Fprintf(out, "%s: %s\n", stream, deliveries(ds, dryRun))
}

// deliveries says which records a repair delivered, or would.
func deliveries(ds []ctl.Delivery, dryRun bool) string {
	var what []string
	for _, d := range ds {
		what = append(what, fmt.Sprintf("%s<-%s v%d", d.Consumer, d.Type, d.Version))
	}
	verb := "repaired"
	if dryRun {
		verb = "would deliver"
	}
	return fmt.Sprintf("%s %d records: %s", verb, len(ds), strings.Join(what, ", "))
}

// streamFlag reports whether the command line asks for --stream, which takes no
// rental id (as stuckFlag).
func streamFlag(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "-stream" || a == "--stream" || strings.HasPrefix(a, "-stream=") || strings.HasPrefix(a, "--stream="):
			return true
		}
	}
	return false
}

// stuckFlag reports whether the command line asks for --stuck, which takes no
// rental id: flags may come before or after the rental id, so it is looked for
// before parsing, which needs to know how many positional arguments to expect.
func stuckFlag(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-stuck", "--stuck", "-stuck=true", "--stuck=true":
			return true
		}
	}
	return false
}
