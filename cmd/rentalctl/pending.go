package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/pendingtable"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Listing limits of pending and sweep --dry-run.
const (
	defaultListLimit = 100
	maxListLimit     = 10_000
)

const pendingUsage = `Usage: rentalctl pending [flags]

Lists outstanding payments from the PendingPayments table, oldest first: each one's
payment reference, rental, when it was prepared, its age, and its deadline (the
time it was prepared plus PAYMENT_TIMEOUT). With --overdue, only the payments past
their deadline: those the next sweep gives up on. With --kind (payment, return or
stuck), the to-do list of that kind of deadline instead, overdue first: each row's
rental, due time and age, as GET /deadlines answers. It reads the table's index, a
query per shard, and never scans.

Needs dynamodb:Query on the PendingPayments table's ByPreparedAt index.
`

// pendingRow is one payment in the JSON of pending and sweep --dry-run; its first
// four fields are those of GET /payments/pending.
type pendingRow struct {
	PaymentReference string    `json:"paymentReference"`
	RentalID         string    `json:"rentalId"`
	PreparedAt       time.Time `json:"preparedAt"`
	AgeSeconds       int64     `json:"ageSeconds"`
	Deadline         time.Time `json:"deadline"`
	Overdue          bool      `json:"overdue"`
	OverdueSeconds   int64     `json:"overdueSeconds,omitempty"`
}

// pendingList is what pending --json prints.
type pendingList struct {
	Now         time.Time    `json:"now"`
	TimeoutMs   int64        `json:"timeoutMs"`
	OverdueOnly bool         `json:"overdueOnly"`
	Payments    []pendingRow `json:"payments"`
	Count       int          `json:"count"`
	Limit       int          `json:"limit"`
	// More reports that more payments than Limit matched.
	More bool `json:"more"`
}

func rowsOf(rows []deadline.Pending, now time.Time, policy deadline.Policy) []pendingRow {
	out := make([]pendingRow, len(rows))
	for i, r := range rows {
		due := policy.Deadline(r.PreparedAt)
		out[i] = pendingRow{PaymentReference: r.Reference, RentalID: r.RentalID, PreparedAt: r.PreparedAt,
			AgeSeconds: int64(seconds(now.Sub(r.PreparedAt)) / time.Second), Deadline: due.UTC()}
		// Overdue as the sweep has it.
		if policy.Overdue(r.PreparedAt, now) {
			out[i].Overdue = true
			out[i].OverdueSeconds = int64(seconds(now.Sub(due)) / time.Second)
		}
	}
	return out
}

func printRows(out io.Writer, rows []pendingRow, now time.Time) {
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

// limited trims rows read with a limit of limit+1 to limit, and reports whether
// there were more.
func limited[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
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
		pendingTable    string
		shards, limit   int
		timeout         time.Duration
		overdue, asJSON bool
		kind            string
	)
	f := newFlags("pending", pendingUsage, c.getenv)
	f.pendingTable(&pendingTable, "to read")
	f.intEnv(&shards, "shards", envShards, pendingtable.DefaultShards, "the index write shards of the PendingPayments table")
	f.durationEnv(&timeout, "timeout", envTimeout, deadline.DefaultTimeout, "how long a payment may stay outstanding")
	f.fs.BoolVar(&overdue, "overdue", false, "list only payments past their deadline")
	f.fs.StringVar(&kind, "kind", "", "list the rows of this kind of deadline (payment, return or stuck) instead")
	f.limit(&limit, "payments")
	f.jsonFlag(&asJSON)
	if _, err := f.parse(args, c); err != nil {
		return err
	}
	if err := f.require(c, "pending-table"); err != nil {
		return err
	}
	if err := f.checkLimit(c, limit); err != nil {
		return err
	}
	if kind != "" && !slices.Contains(httpapi.DeadlineKinds, kind) {
		return f.fail(c, "-kind %q: want one of %s", kind, strings.Join(httpapi.DeadlineKinds, ", "))
	}
	cfg, err := awsConfig(ctx, c.getenv)
	if err != nil {
		return err
	}
	projection, err := wiring.PendingReader(cfg, f.lookup)
	if err != nil {
		return configError("pending", err)
	}
	if kind != "" {
		return pendingKind(ctx, c, f, projection, kind, overdue, limit, asJSON)
	}
	policy, err := wiring.DeadlinePolicy(f.lookup)
	if err != nil {
		return configError("pending", err)
	}
	now := time.Now()
	var rows []deadline.Pending
	if overdue {
		rows, err = projection.Overdue(ctx, policy.Cutoff(now), limit+1)
	} else {
		rows, err = projection.List(ctx, limit+1)
	}
	if err != nil {
		return fmt.Errorf("pending: %s: %w", pendingTable, err)
	}
	rows, more := limited(rows, limit)
	list := pendingList{Now: now.UTC(), TimeoutMs: timeout.Milliseconds(), OverdueOnly: overdue,
		Payments: rowsOf(rows, now, policy), Count: len(rows), Limit: limit, More: more}
	if asJSON {
		return c.printJSON(list)
	}

	what := "outstanding"
	if overdue {
		what = "overdue"
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.stdout, "no %s payments (payments time out after %s)\n", what, timeout)
		return nil
	}
	printRows(c.stdout, list.Payments, now)
	fmt.Fprintf(c.stdout, "%s, the oldest %s old (payments time out after %s)\n",
		count(len(rows), what+" payment"), seconds(now.Sub(rows[0].PreparedAt)), timeout)
	if more {
		fmt.Fprintf(c.stdout, "listed only the oldest %s; there are more (raise -limit to see them)\n", count(limit, "payment"))
	}
	return nil
}

// kindList is what pending --kind --json prints: GET /deadlines's rows.
type kindList struct {
	Now         time.Time          `json:"now"`
	Kind        string             `json:"kind"`
	OverdueOnly bool               `json:"overdueOnly"`
	Deadlines   []httpapi.Deadline `json:"deadlines"`
	Count       int                `json:"count"`
	Limit       int                `json:"limit"`
	More        bool               `json:"more"`
}

// pendingKind lists the rows of one kind of deadline, the overdue first.
func pendingKind(ctx context.Context, c *cli, f *flags, projection *pendingtable.Projection, kind string, overdue bool, limit int, asJSON bool) error {
	kinds, err := wiring.DeadlineKinds(f.lookup, deadlinekinds.Receivers{})
	if err != nil {
		return configError("pending", err)
	}
	now := time.Now()
	q := deadline.Query{Kind: kind, Now: now, Limit: limit + 1}
	if overdue {
		q.Overdue = &overdue
	}
	rows, err := projection.WithKinds(kinds).Deadlines(ctx, q)
	if err != nil {
		return fmt.Errorf("pending: %w", err)
	}
	rows, more := limited(rows, limit)
	list := kindList{Now: now.UTC(), Kind: kind, OverdueOnly: overdue, Deadlines: make([]httpapi.Deadline, len(rows)), Count: len(rows), Limit: limit, More: more}
	for i, r := range rows {
		list.Deadlines[i] = httpapi.Deadline{Kind: r.Kind, RentalID: r.Subject, DueAt: r.Due.UTC(), AgeSeconds: int64(now.Sub(r.Since) / time.Second), Overdue: r.Due.Before(now)}
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
	fmt.Fprintf(c.stdout, "%s\n", count(len(rows), kind+" deadline"))
	if more {
		fmt.Fprintf(c.stdout, "listed only %s; there are more (raise -limit to see them)\n", count(limit, "row"))
	}
	return nil
}
