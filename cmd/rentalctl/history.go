package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/bikerental/bikerental/internal/ops/ctl"
)

const historyUsage = `Usage: rentalctl history [flags] RENTAL_ID

Prints a rental's status and its audit trail: every event of its bike, its payment
and its rental-payment process that belongs to it, in order, with times and what
caused each, in the operator console's words (the event it reacted to, an API
request, the sweep, a deadline, the provider's event or its answer about the
payment, or rentalctl). It is what GET /rentals/{id} answers; --json prints that
same document, with each cause's id. Status is one of requested, awaiting-payment, approved, returned,
rejected, cancelled.

Exits 1 if no bike was ever requested under RENTAL_ID, 2 if RENTAL_ID cannot be a
rental id. Needs dynamodb:Query on the Events table.
`

func runHistory(ctx context.Context, c *cli, args []string) error {
	r, err := parseRentalCommand(ctx, c, args, "history", historyUsage, "to read")
	if err != nil {
		return err
	}
	view, err := r.stack.History(ctx, r.rentalID)
	if err != nil {
		return failed("history", err)
	}
	if r.asJSON {
		return c.printJSON(view)
	}
	printHistory(c.stdout, view)
	return nil
}

func printHistory(out io.Writer, v ctl.View) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "rental\t%s\n", v.RentalID)
	fmt.Fprintf(w, "status\t%s\n", v.Status)
	fmt.Fprintf(w, "bike\t%s\n", v.BikeID)
	fmt.Fprintf(w, "renter\t%s\n", v.Renter)
	fmt.Fprintf(w, "payment\t%s\n", v.PaymentReference)
	w.Flush()
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tSTREAM\tVERSION\tEVENT\tDETAILS\tCAUSE")
	for _, e := range v.History {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", timestamp(e.At), e.Stream, e.Version, e.Type, details(e), v.CauseOf(e))
	}
	w.Flush()
	fmt.Fprintf(out, "%d events\n", len(v.History))
}

// details renders an event's data as key=value pairs, leaving out the ids the
// header already shows.
func details(e ctl.Entry) string {
	var fields []string
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		fields = append(fields, "data="+strconv.Quote(string(e.Data)))
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		switch k {
		case "rentalId", "bikeId", "reference":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fields = append(fields, k+"="+value(data[k]))
	}
	return strings.Join(fields, " ")
}

func value(v any) string {
	switch v := v.(type) {
	case string:
		// Quoted when it would be ambiguous or unprintable as it is.
		if q := strconv.Quote(v); v == "" || q[1:len(q)-1] != v || strings.ContainsAny(v, " =") {
			return q
		}
		return v
	case json.Number:
		return v.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// rentalRequest is a command about one rental: its id, the stack it is on, and
// whether --json was given.
type rentalRequest struct {
	rentalID string
	stack    *ctl.Stack
	asJSON   bool
}

// parseRentalCommand parses the command line of a command that takes RENTAL_ID and
// reads (or appends to) the Events table, whose flag describes what it does with it,
// and opens the stack.
func parseRentalCommand(ctx context.Context, c *cli, args []string, name, usage, eventsPurpose string) (rentalRequest, error) {
	var (
		r           rentalRequest
		eventsTable string
	)
	f := newFlags(name, usage, c.getenv)
	f.eventsTable(&eventsTable, eventsPurpose)
	f.jsonFlag(&r.asJSON)
	pos, err := f.parse(args, c, "RENTAL_ID")
	if err != nil {
		return r, err
	}
	r.rentalID = pos[0]
	if err := f.rentalID(c, r.rentalID); err != nil {
		return r, err
	}
	r.stack, err = f.open(ctx, c, "events-table")
	return r, err
}
