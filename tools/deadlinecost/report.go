package deadlinecost

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

// Result is one design's measurements on every path, in rentalcost.Paths' order,
// and the promises it was seen to keep.
type Result struct {
	Design   Design
	Paths    []Measurement
	Promises Promises
	// Swept is one read of every shard of every swept kind, as the sweep reads the
	// list, after the rentals of the paths and of the promises' cases (Rentals of
	// them): what is left there for it to read.
	Swept   capacity.Totals
	Rentals int
}

// Approved returns the measurement of the approved path.
func (r Result) Approved() Measurement { return r.on(rentalcost.Approved) }

func (r Result) on(p rentalcost.Path) Measurement {
	for _, m := range r.Paths {
		if m.Path == p {
			return m
		}
	}
	return Measurement{}
}

// Writes returns the design's write units on path (index writes included).
func (r Result) Writes(p rentalcost.Path) int { return r.on(p).Deadlines.AllWriteUnits() }

// Reads returns the read units the design makes on path, of its table and of the
// event store.
func (r Result) Reads(p rentalcost.Path) float64 {
	m := r.on(p)
	return m.Deadlines.ReadUnits + m.Events.ReadUnits
}

func (r Result) calls(p rentalcost.Path) int {
	m := r.on(p)
	return m.Deadlines.Calls + m.Events.Calls
}

// Results measures every design on every path and checks its promises.
func (b *Bench) Results(ctx context.Context, designs []Design) ([]Result, error) {
	var out []Result
	for _, d := range designs {
		res := Result{Design: d}
		for _, p := range rentalcost.Paths() {
			m, _, err := b.Measure(ctx, d, p)
			if err != nil {
				return nil, err
			}
			res.Paths = append(res.Paths, m)
		}
		before := b.rentals
		var err error
		if res.Promises, err = b.Check(ctx, d); err != nil {
			return nil, fmt.Errorf("deadlinecost: %s: %w", d.Name(), err)
		}
		res.Rentals = len(res.Paths) + b.rentals - before
		b.counter.Reset()
		if _, err := d.Outstanding(ctx, b.Env(d), b.NewRental()); err != nil {
			return nil, err
		}
		res.Swept = capacity.Total(b.counter.Calls())
		out = append(out, res)
	}
	return out, nil
}

// Bound is the most write units an approved rental may cost (issue 32).
const Bound = 15

// Report is the alternatives' section of make bench-units.
type Report struct {
	// Results are the designs', today's first.
	Results []Result
	// Rentals are the whole rentals measured through the service's handlers, one per
	// path, and DeadlinesTable the to-do table they wrote: their other writes are
	// the Events table's, which every design has.
	Rentals        []rentalcost.Measurement
	DeadlinesTable string
	Prices         rentalcost.Prices
	Assumptions    rentalcost.Assumptions
}

// eventsWrites returns the write units of the rental of path outside the to-do
// table.
func (r Report) eventsWrites(p rentalcost.Path) int {
	for _, m := range r.Rentals {
		if m.Path == p {
			by := capacity.GroupBy(m.PerRental(), func(_ capacity.Call, u capacity.Usage) string {
				if u.Table == r.DeadlinesTable {
					return "deadlines"
				}
				return "other"
			})
			return by["other"].AllWriteUnits()
		}
	}
	return 0
}

// Total returns what a rental of path writes under res: the Events table's units
// and the design's.
func (r Report) Total(res Result, p rentalcost.Path) int { return r.eventsWrites(p) + res.Writes(p) }

// PerMillion returns what a million approved rentals cost under res, on the
// report's prices: the approved rental as measured through the service, with
// today's to-do table's writes, reads and calls replaced by res's.
func (r Report) PerMillion(res Result) float64 {
	var approved rentalcost.Measurement
	for _, m := range r.Rentals {
		if m.Path == rentalcost.Approved {
			approved = m
		}
	}
	today := r.Results[0]
	p := rentalcost.Approved
	base := rentalcost.UsageOf(approved, rentalcost.Sweep, r.Assumptions)
	delta := rentalcost.Usage{
		WriteUnits: float64(res.Writes(p) - today.Writes(p)),
		ReadUnits:  res.Reads(p) - today.Reads(p),
		Duration:   time.Duration(res.calls(p)-today.calls(p)) * r.Assumptions.DynamoDBCall,
	}
	return base.Add(delta).Price(r.Prices, r.Assumptions, 1e6).Total()
}

// Cheapest returns the design whose approved rental writes least, among those
// that kept every promise (kept) or among all; today's on a tie.
func (r Report) Cheapest(kept bool) Result {
	best := r.Results[0]
	for _, res := range r.Results[1:] {
		if kept && !res.Promises.Kept() {
			continue
		}
		if res.Writes(rentalcost.Approved) < best.Writes(rentalcost.Approved) {
			best = res
		}
	}
	return best
}

// Markdown writes the alternatives' table, the line the bound asks for and where
// each unit of the cheapest designs goes.
func (r Report) Markdown(w io.Writer) error {
	if len(r.Results) == 0 || len(r.Rentals) == 0 {
		return fmt.Errorf("deadlinecost: nothing measured")
	}
	var b strings.Builder
	r.table(&b)
	r.line(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r Report) table(b *strings.Builder) {
	fmt.Fprintf(b, "\n### The to-do list's alternatives: what each would write per rental\n\n")
	fmt.Fprintf(b, "Each design is driven by the records the service appends for one rental, each projected once appended, on moto through the AWS SDK, counted by the same counter (tools/deadlinecost; docs/decisions/0029-what-a-deadline-costs-to-keep.md). A cell is the design's write units (index writes in brackets) and, after +, the read units it makes instead of writes (strongly consistent reads of the event store or of its own markers). The last columns add the Events table's writes as the service makes them (%d on the approved path, %d on the others), then one read of every shard of every swept kind (as the sweep queries them, eventually consistent) after the design's rentals, which finds what the design leaves there for the sweep, and which promises the design was seen to break, each from a case played on the emulator.\n\n",
		r.eventsWrites(rentalcost.Approved), r.eventsWrites(rentalcost.Rejected))
	header := []string{"design"}
	for _, p := range rentalcost.Paths() {
		header = append(header, string(p))
	}
	row(b, append(header, "approved rental, all tables", "per million approved", "every swept kind read once: queries, items (read units)", "promises")...)
	row(b, strings.Split(strings.Repeat("---,", len(header)+3)+"---", ",")...)
	for _, res := range r.Results {
		cells := []string{res.Design.Name()}
		for _, p := range rentalcost.Paths() {
			m := res.on(p)
			cell := fmt.Sprintf("%d (%d)", m.Deadlines.AllWriteUnits(), m.Deadlines.IndexWriteUnits)
			if reads := res.Reads(p); reads > 0 {
				cell += " + " + units(reads) + " R"
			}
			cells = append(cells, cell)
		}
		promises := "all kept"
		if !res.Promises.Kept() {
			promises = "broken: " + strings.Join(res.Promises.Broken(), "; ")
		}
		swept := fmt.Sprintf("%d, %d (%s) after %d rentals", res.Swept.Calls, res.Swept.ItemsRead, units(res.Swept.ReadUnits), res.Rentals)
		row(b, append(cells, fmt.Sprint(r.Total(res, rentalcost.Approved)), money(r.PerMillion(res)), swept, promises)...)
	}
}

func (r Report) line(b *strings.Builder) {
	kept, cheapest := r.Cheapest(true), r.Cheapest(false)
	p := rentalcost.Approved
	if r.Total(kept, p) <= Bound {
		fmt.Fprintf(b, "\n**An approved rental writes %d units (at most %d) with %s, every promise kept.**\n", r.Total(kept, p), Bound, kept.Design.Name())
	} else {
		fmt.Fprintf(b, "\n**No design measured brings an approved rental to %d write units or fewer with every promise kept.** ", Bound)
		fmt.Fprintf(b, "The cheapest that keeps them all is %s: %d units (Events %d + Deadlines %d), %s per million approved rentals. ",
			kept.Design.Name(), r.Total(kept, p), r.eventsWrites(p), kept.Writes(p), money(r.PerMillion(kept)))
		if cheapest.Design.Name() != kept.Design.Name() {
			fmt.Fprintf(b, "The cheapest measured is %s: %d units (Events %d + Deadlines %d, and %s read units), %s per million; it breaks: %s.",
				cheapest.Design.Name(), r.Total(cheapest, p), r.eventsWrites(p), cheapest.Writes(p), units(cheapest.Reads(p)), money(r.PerMillion(cheapest)), strings.Join(cheapest.Promises.Broken(), "; "))
		}
		fmt.Fprintln(b)
	}
	for _, res := range []Result{kept, cheapest} {
		breakdown(b, res)
		if cheapest.Design.Name() == kept.Design.Name() {
			break
		}
	}
}

// breakdown writes where each unit of res's approved rental goes.
func breakdown(b *strings.Builder, res Result) {
	fmt.Fprintf(b, "\n#### Where the units go: %s, approved rental\n\n", res.Design.Name())
	row(b, "record", "what it does", "call", "table write units", "index write units", "read units")
	row(b, "---", "---", "---", "---", "---", "---")
	for _, s := range res.Approved().Steps {
		for _, c := range s.Calls {
			t := capacity.Total([]capacity.Call{c})
			row(b, s.Record, s.What, c.Operation+" on "+tableOf(c, res.Approved().EventsTable), fmt.Sprint(t.WriteUnits), fmt.Sprint(t.IndexWriteUnits), units(t.ReadUnits))
		}
	}
}

// tableOf names the table a call used: the event store or the to-do table.
func tableOf(c capacity.Call, events string) string {
	for _, u := range c.Tables {
		if u.Table == events {
			return "the event store"
		}
	}
	return "the to-do table"
}

func row(b *strings.Builder, cells ...string) { fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | ")) }

func units(u float64) string {
	if u == float64(int(u)) {
		return fmt.Sprint(int(u))
	}
	return fmt.Sprintf("%.1f", u)
}

func money(d float64) string { return fmt.Sprintf("$%.2f", d) }
