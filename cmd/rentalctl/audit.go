package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/ops/ctl"
)

const auditUsage = `Usage: rentalctl audit [flags]

Reads the Events and Deadlines tables and checks the service's invariants:
stream versions without gaps, one process per rental that starts and completes once,
one settlement per payment, no bike booked by two rentals at once, a Deadlines
table whose rows of every kind are exactly what the events leave outstanding (the
payments due, the stuck processes, the returns due, the refunds and cancellations
owed, the parked stream records), and bikes told how their rental's process ended.
It only reads: it is safe to run at any time, against a live service.

Prints one line per violation and a summary line (or, with --json, the report as
JSON) on stdout; the summary counts the refunds owed that nobody has recorded made
yet, each on its own (rentalctl refunds lists them), and a progress line every 500 streams on stderr. Exits 0 when
nothing was found, 1 when violations were found or the audit failed, 2 for a bad
command line.

Without --quiet, checks that only hold once every event has been handled are
skipped, and drift of the Deadlines table is only reported for payments older
than the grace period. Pass --quiet when nothing is in flight: no requests, the
stream consumers caught up, the dead-letter queues empty.

It scans the Events table, and reads the Deadlines table through its index, a
query per shard of each kind's rows, under --shards, which must be the table's
(DEADLINES_SHARDS, as the projector has it): it never scans the Deadlines table.
The operator needs dynamodb:Scan and dynamodb:Query on the Events table and
dynamodb:Query on the Deadlines table's DueByKind index.
`

// runAudit is `rentalctl audit`: it returns nil when the audit found nothing, an
// error matching errViolations when it found violations (after printing them), and
// any other error when it could not finish.
func runAudit(ctx context.Context, c *cli, args []string) error {
	var (
		eventsTable, deadlinesTable string
		quiet, asJSON               bool
		grace                       time.Duration
		concurrency, segments       int
		shards                      int
	)
	f := newFlags("audit", auditUsage, c.getenv)
	f.eventsTable(&eventsTable, "to read")
	f.deadlinesTable(&deadlinesTable, "to read")
	f.intEnv(&shards, "shards", envShards, ctl.DefaultShards, "the index write shards of the Deadlines table; must match the projector's")
	f.fs.BoolVar(&quiet, "quiet", false, "the service is quiet: also run the checks that need every event handled")
	f.jsonFlag(&asJSON)
	f.fs.DurationVar(&grace, "grace", audit.DefaultGrace, "without --quiet, how far the projector may lag behind the payments")
	f.fs.IntVar(&concurrency, "concurrency", audit.DefaultConcurrency, "how many streams to read at once")
	f.fs.IntVar(&segments, "segments", audit.DefaultScanSegments, "how many parallel segments the Events table's scan uses")
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	if err := f.require(c, "events-table", "deadlines-table"); err != nil {
		return err
	}
	switch {
	case grace <= 0:
		return f.fail(c, "-grace %s: want a positive duration", grace)
	case concurrency < 1:
		return f.fail(c, "-concurrency %d: want at least 1", concurrency)
	case segments < 1:
		return f.fail(c, "-segments %d: want at least 1", segments)
	}
	stack, err := f.open(ctx, c)
	if err != nil {
		return err
	}
	start := time.Now()
	report, err := stack.Audit(ctx, audit.Options{
		Quiet:       quiet,
		Grace:       grace,
		Concurrency: concurrency,
		Progress: func(done int) {
			if done%progressEvery == 0 {
				fmt.Fprintf(c.stderr, "%d streams read (%s)\n", done, seconds(time.Since(start)))
			}
		},
	}, segments)
	if err != nil {
		return failed("audit", err)
	}
	if asJSON {
		if err := c.printJSON(report); err != nil {
			return err
		}
	} else {
		printAudit(c.stdout, report, eventsTable, deadlinesTable, time.Since(start))
	}
	if !report.OK() {
		return fmt.Errorf("audit: %d %w", len(report.Violations), errViolations)
	}
	return nil
}

// printAudit prints an audit's report for people: a line per violation and a
// summary line.
func printAudit(out io.Writer, report audit.Report, eventsTable, deadlinesTable string, took time.Duration) {
	for _, v := range report.Violations {
		fmt.Fprintln(out, v)
	}
	found := "no violations"
	if n := len(report.Violations); n > 0 {
		found = fmt.Sprintf("%d violations", n)
	}
	checks := "quiet checks included"
	if !report.Quiet {
		checks = "quiet checks skipped, --quiet runs them"
	}
	fmt.Fprintf(out, "audited %s and %s: %d streams, %d records, %d rentals, %d payments, %d deadline rows (%d parked records), %s in %s: %s (%s)\n",
		eventsTable, deadlinesTable, report.Streams, report.Records, report.Rentals, report.Payments, report.DeadlineRows, report.Parked,
		count(report.RefundsOwed, "refund")+" owed", took.Round(time.Millisecond), found, checks)
}
