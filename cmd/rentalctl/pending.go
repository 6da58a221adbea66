package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// Listing limits of pending and sweep --dry-run.
const (
	defaultListLimit = 100
	maxListLimit     = 10_000
)

const pendingUsage = `Usage: rentalctl pending [flags]

Lists outstanding payments from the Deadlines table, oldest first: each one's
payment reference, rental, when it was prepared, its age, and its deadline (the
time it was prepared plus PAYMENT_TIMEOUT). With --overdue, only the payments past
their deadline: those the next sweep gives up on. A payment's deadline is its
row's due time, which the projector stamps by its own PAYMENT_TIMEOUT: --timeout
must be the projector's, since the time a payment was prepared is read back as
its deadline less the timeout.

With --kind, the to-do list of one kind of deadline instead, overdue first: each
row's rental, due time and age, as GET /deadlines answers. The kinds: %s.

It reads the table's index, a query per shard, and never scans.

Needs dynamodb:Query on the Deadlines table's DueByKind index.
`

// kindWords names the kinds --kind takes, as the declaration lists them
// (ctl.DeadlineKinds): "payment, refund, return or stuck".
func kindWords() string {
	k := ctl.DeadlineKinds
	if len(k) < 2 {
		return strings.Join(k, "")
	}
	return strings.Join(k[:len(k)-1], ", ") + " or " + k[len(k)-1]
}

func printRows(out io.Writer, rows []ctl.PendingRow, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PAYMENT\tRENTAL\tPREPARED AT\tAGE\tDEADLINE")
	for _, r := range rows {
		due := "in " + seconds(r.Deadline.Sub(now)).String()
		if r.Overdue {
			due = "overdue by " + seconds(now.Sub(r.Deadline)).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.PaymentReference, r.RentalID, timestamp(r.PreparedAt),
			seconds(now.Sub(r.PreparedAt)), due)
	}
	w.Flush()
}

func (f *flags) limit(p *int, what string) {
	f.fs.IntVar(p, "limit", defaultListLimit, fmt.Sprintf("list at most this many %s, the oldest (1 to %d)", what, maxListLimit))
}

func (f *flags) checkLimit(c *cli, limit int) error {
	if limit < 1 || limit > maxListLimit {
		return f.fail(c, "-limit %d: want 1 to %d", limit, maxListLimit)
	}
	return nil
}

func runPending(ctx context.Context, c *cli, args []string) error {
	var (
		deadlinesTable string
		shards         int
		timeout        time.Duration
		q              ctl.PendingQuery
		asJSON         bool
		kind           string
	)
	f := newFlags("pending", fmt.Sprintf(pendingUsage, kindWords()), c.getenv)
	f.deadlinesTable(&deadlinesTable, "to read")
	f.intEnv(&shards, "shards", envShards, ctl.DefaultShards, "the index write shards of the Deadlines table")
	f.durationEnv(&timeout, "timeout", envTimeout, ctl.DefaultTimeout, "how long a payment may stay outstanding; must match the projector's")
	f.fs.BoolVar(&q.Overdue, "overdue", false, "list only payments past their deadline")
	f.fs.StringVar(&kind, "kind", "", "list the rows of this kind of deadline ("+kindWords()+") instead")
	f.limit(&q.Limit, "payments")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	if err := f.require(c, "deadlines-table"); err != nil {
		return err
	}
	if err := f.checkLimit(c, q.Limit); err != nil {
		return err
	}
	if kind != "" && !slices.Contains(ctl.DeadlineKinds, kind) {
		return f.fail(c, "-kind %q: want one of %s", kind, strings.Join(ctl.DeadlineKinds, ", "))
	}
	stack, err := f.open(ctx, c)
	if err != nil {
		return err
	}
	if kind != "" {
		return pendingKind(ctx, c, stack, kind, q, asJSON)
	}
	list, err := stack.Pending(ctx, q)
	if err != nil {
		return failed("pending", err)
	}
	if asJSON {
		return c.printJSON(list)
	}
	printPending(c.stdout, list, timeout)
	return nil
}

// printPending prints pending's list for people: timeout is PAYMENT_TIMEOUT.
func printPending(out io.Writer, list ctl.PendingList, timeout time.Duration) {
	what := "outstanding"
	if list.OverdueOnly {
		what = "overdue"
	}
	if list.Count == 0 {
		fmt.Fprintf(out, "no %s payments (payments time out after %s)\n", what, timeout)
		return
	}
	printRows(out, list.Payments, list.Now)
	fmt.Fprintf(out, "%s, the oldest %s old (payments time out after %s)\n",
		count(list.Count, what+" payment"), seconds(list.Now.Sub(list.Payments[0].PreparedAt)), timeout)
	if list.More {
		fmt.Fprintf(out, "listed only the oldest %s; there are more (raise -limit to see them)\n", count(list.Limit, "payment"))
	}
}

// pendingKind prints the rows of one kind of deadline, the overdue first.
func pendingKind(ctx context.Context, c *cli, stack *ctl.Stack, kind string, q ctl.PendingQuery, asJSON bool) error {
	list, err := stack.Deadlines(ctx, kind, q)
	if err != nil {
		return failed("pending", err)
	}
	if asJSON {
		return c.printJSON(list)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tRENTAL\tDUE\tAGE\tOVERDUE")
	for _, d := range list.Deadlines {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\n", d.Kind, d.RentalID, d.DueAt.Format(time.RFC3339), time.Duration(d.AgeSeconds)*time.Second, d.Overdue)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s\n", count(list.Count, kind+" deadline"))
	if list.More {
		fmt.Fprintf(c.stdout, "listed only %s; there are more (raise -limit to see them)\n", count(list.Limit, "row"))
	}
	return nil
}
