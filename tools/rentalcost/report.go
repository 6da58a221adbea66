package rentalcost

import (
	"fmt"
	"io"
	"strings"

	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/app/bikestream"
)

// ModeRuns are the paths measured with one RECORDING_MODE.
type ModeRuns struct {
	Mode string
	Runs []Measurement
}

// Report is everything the markdown report shows.
type Report struct {
	// Modes holds the paths measured, first with the default recording mode.
	Modes []ModeRuns
	// History is an approved rental measured on a bike that had HistoryPrior
	// approved rentals before it; nil to leave that table out.
	History      *Measurement
	HistoryPrior int
	Prices       Prices
	Assumptions  Assumptions
	// DeadlinesTable names the Deadlines table the runs used.
	DeadlinesTable string
}

// Markdown writes the report's tables, ready to paste into BENCHMARKS.md.
func (r Report) Markdown(w io.Writer) error {
	if len(r.Modes) == 0 || len(r.Modes[0].Runs) == 0 {
		return fmt.Errorf("rentalcost: nothing measured")
	}
	p := &printer{w: w}
	main := r.Modes[0]
	p.f("### Request units per rental (RECORDING_MODE=%s)\n\n", main.Mode)
	p.f("One rental at a time, each on a fresh bike and by a renter making their first request, through the real handlers on moto; counted until both stream consumers had handled every event the rental appended. Write units include the to-do table index's; the sweep's own search is amortized (below), its cancellation is counted.\n\n")
	p.row("path", "calls", "items read", "items written", "write units (table + index)", "read units", "floor (write units)", "actual / floor")
	p.rule(8)
	for _, m := range main.Runs {
		t := capacity.Total(m.PerRental())
		p.row(string(m.Path), itoa(t.Calls), itoa(t.ItemsRead), itoa(t.ItemsWritten),
			fmt.Sprintf("%d + %d = %d", t.WriteUnits, t.IndexWriteUnits, t.AllWriteUnits()), units(t.ReadUnits),
			itoa(m.Floor.Units()), fmt.Sprintf("%.2f", float64(t.AllWriteUnits())/float64(m.Floor.Units())))
	}
	if approx := approximations(r.Modes); len(approx) > 0 {
		p.f("\nApproximate counts: %s\n", strings.Join(approx, "; "))
	}

	p.f("\n#### By function (calls: write units / read units)\n\n")
	fns := []string{FunctionCommand, FunctionProcess, FunctionProjector, FunctionSweep}
	p.row(append([]string{"path"}, fns...)...)
	p.rule(len(fns) + 1)
	for _, m := range main.Runs {
		by := capacity.GroupBy(m.PerRental(), func(c capacity.Call, _ capacity.Usage) string { return c.Function })
		cells := []string{string(m.Path)}
		for _, f := range fns {
			t := by[f]
			if t.Calls == 0 {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, fmt.Sprintf("%d: %d W / %s R", t.Calls, t.AllWriteUnits(), units(t.ReadUnits)))
		}
		p.row(cells...)
	}

	p.f("\n#### By table (write units / read units)\n\n")
	p.row("path", "Events", "Deadlines (index writes included)")
	p.rule(3)
	for _, m := range main.Runs {
		pending := capacity.GroupBy(m.PerRental(), func(_ capacity.Call, u capacity.Usage) string {
			if u.Table == r.DeadlinesTable {
				return "pending"
			}
			if u.Table != "" {
				return "events"
			}
			return ""
		})
		ev, pd := pending["events"], pending["pending"]
		p.row(string(m.Path), fmt.Sprintf("%d / %s", ev.AllWriteUnits(), units(ev.ReadUnits)),
			fmt.Sprintf("%d (%d) / %s", pd.AllWriteUnits(), pd.IndexWriteUnits, units(pd.ReadUnits)))
	}

	p.f("\n#### The floor\n\n")
	p.f("Each event the rental appends to any stream, the renter's RentalRequested included (a provider's webhook that settles the payment writes no receipt of its own: the settling event carries it), written once on its own (ceil(size / 1 KB) each, from the stored events), plus the to-do table row created on PaymentPrepared and changed once on settlement, with its keys-only index entry put and removed.\n\n")
	p.row("path", "events", "event writes", "row writes", "index writes", "floor", "actual", "above the floor", "of which the transaction's premium")
	p.rule(9)
	for _, m := range main.Runs {
		t := capacity.Total(m.PerRental())
		p.row(string(m.Path), itoa(len(m.Events)), itoa(m.Floor.EventUnits), itoa(m.Floor.ProjectionUnits), itoa(m.Floor.IndexUnits),
			itoa(m.Floor.Units()), itoa(t.AllWriteUnits()), itoa(t.AllWriteUnits()-m.Floor.Units()), itoa(m.TransactionPremium()))
	}
	ratios, within := indexRatios(main.Runs)
	p.f("\nThe index writes are in the floor because the sweep can only find a payment through its index entry; counted as above the floor instead, the ratio would be %s, %s. ", ratios, map[bool]string{true: "still within 1.5", false: "not all within 1.5"}[within])
	p.f("Every append is one conditional PutItem but one: the request appends the bike's BikeRequested and the renter's RentalRequested together, each at the version it was decided on, in one TransactWriteItems, which DynamoDB bills twice per item. The provider's webhook appends what its event changes (PaymentConfirmed, PaymentRejected), which carries the event's receipt, in one PutItem at the payment's version, so that a redelivered event finds the receipt in the payment's stream and changes nothing. That premium is what lies above the floor. No write is refused by its condition, and no event or row is written twice.\n")
	p.f("\nReads are not part of the floor. Each command and each reaction reads the stream it appends to, strongly consistently (load, decide, append): one read unit each while a stream stays under 4 KB; the request also reads the renter's stream, its newest event only (one Query, newest first, Limit 1). Some read nothing and still cost the minimum of one unit: the request's read of the renter's stream, empty on a renter's first request; on BikeRequested the process reads its own stream, empty, to know it has not started; PreparePayment reads the payment's, empty, once, and decides both whether to create the payment at the provider and what to append from it; and the webhook reads its event's receipt stream, empty unless the event settles nothing (a redelivery of a settlement finds its receipt in the payment's stream, which it reads anyway). A cancellation, likewise, reads the payment's stream once, before asking the provider. A renter's later request also reads the bike stream of the renter's previous rental, to know that it has settled (one more strongly consistent Query, the whole of that bike's stream, unless it is the bike being requested); it is not in these figures. Clients polling GET /rentals/{id} (three stream reads a call) are not counted.\n")

	for _, mode := range r.Modes[1:] {
		p.f("\n#### RECORDING_MODE=%s\n\n", mode.Mode)
		p.row("path", "calls", "write units", "read units", "actual / floor", "read units more than "+main.Mode)
		p.rule(6)
		for i, m := range mode.Runs {
			t := capacity.Total(m.PerRental())
			more := "-"
			if i < len(main.Runs) && main.Runs[i].Path == m.Path {
				more = units(t.ReadUnits - capacity.Total(main.Runs[i].PerRental()).ReadUnits)
			}
			p.row(string(m.Path), itoa(t.Calls), itoa(t.AllWriteUnits()), units(t.ReadUnits),
				fmt.Sprintf("%.2f", float64(t.AllWriteUnits())/float64(m.Floor.Units())), more)
		}
	}

	timedOut, hasTimedOut := find(main.Runs, TimedOut)
	if hasTimedOut {
		run := SweepRun(timedOut, r.Assumptions)
		month := run.Price(r.Prices, r.Assumptions, r.Assumptions.SweepsPerMonth)
		search := capacity.Total(filter(timedOut.Calls, Amortized))
		p.f("\n#### The sweep's search, per run (amortized over every rental)\n\n")
		p.row("queries", "items read", "read units", "runs a month (rate(1 minute))", "cost a month")
		p.rule(5)
		p.row(itoa(search.Calls), itoa(search.ItemsRead), units(search.ReadUnits), fmt.Sprintf("%.0f", r.Assumptions.SweepsPerMonth), money(month.Total()))
		p.f("\nOne query page per shard (DEADLINES_SHARDS=4) of each kind the sweep sweeps (the payments due, the processes stuck, the returns due, the cancellations owed to the provider and the parked records' redeliveries: docs/decisions/0026-a-deadlines-table.md), each at least half a read unit on the eventually consistent index, whether it finds anything or not; plus one Scheduler invocation and one Lambda invocation per run.\n")
	}

	if approved, ok := find(main.Runs, Approved); ok && r.History != nil {
		p.f("\n#### A bike's history: what an approved rental reads does not grow with it\n\n")
		p.row("approved rentals before, on the same bike", "bike stream at the request", "read units per rental (approved path)", "calls")
		p.rule(4)
		for _, m := range []Measurement{approved, *r.History} {
			prior := 0
			if m.RentalID != approved.RentalID {
				prior = r.HistoryPrior
			}
			t := capacity.Total(m.PerRental())
			p.row(itoa(prior), fmt.Sprintf("%d bytes", m.BikeStreamBytes), units(t.ReadUnits), itoa(t.Calls))
		}
		p.f("\nBike commands read the stream's newest %d records and, for an older rental, that rental's records by key (docs/decisions/0008-bounded-bike-reads.md). The request on a bike with more than %d events reads one item more: the stream of the process its rental id would have, to know the id was never used. Longer histories: the table below, from internal/app/bikestream.\n", bikestream.TailSize, bikestream.TailSize)
	}

	p.f("\n### Cost per million rentals (%s, prices read %s)\n\n", r.Prices.Region, r.Prices.Read)
	p.f("Design of this project. Includes: DynamoDB request units (index writes included), Lambda requests (one per API request; one per stream record a consumer's filter lets through, the most Lambda makes: busier streams batch several records into one invocation) and duration (%d MB; %s per DynamoDB request, %s overhead per invocation, assumed), API Gateway HTTP API requests. Excludes: DynamoDB Streams reads (free for Lambda triggers), storage, data transfer, CloudWatch Logs and metrics, free tiers, the SQS dead-letter queues (empty when all is well).\n\n",
		r.Assumptions.MemoryMB, r.Assumptions.DynamoDBCall, r.Assumptions.Overhead)
	p.row("path", "DynamoDB writes", "DynamoDB reads", "Lambda requests", "Lambda duration", "API Gateway", "total")
	p.rule(7)
	for _, m := range main.Runs {
		c := UsageOf(m, Sweep, r.Assumptions).Price(r.Prices, r.Assumptions, 1e6)
		p.row(string(m.Path), money(c.DynamoDBWrites), money(c.DynamoDBReads), money(c.LambdaRequests), money(c.LambdaDuration), money(c.APIGateway), money(c.Total()))
	}
	if hasTimedOut {
		month := SweepRun(timedOut, r.Assumptions).Price(r.Prices, r.Assumptions, r.Assumptions.SweepsPerMonth)
		p.f("\nPlus the sweep's schedule: %s a month whatever the number of rentals.\n", money(month.Total()))
	}

	load := AtHundredPerSecond
	p.f("\n#### At %.0f rentals a second, batched\n\n", load.RentalsPerSecond)
	p.f("The same rentals when the stream consumers' invocations are batched, as Lambda does at load: it polls each stream shard %.0f times a second (its base rate for DynamoDB streams; the mappings set no batching window) and invokes a consumer once per poll that finds a record for it, with all of them. Assumed: %.0f stream shards (one per table partition; %.0f rentals a second write about 2,100 units a second, and a partition takes 1,000), so each consumer is invoked at most %.0f times a second, %.2f times per rental; every invocation ends within a poll interval; the per-invocation overhead shrinks with the invocations, the DynamoDB calls do not.\n\n",
		load.PollsPerSecond, load.Shards, load.RentalsPerSecond, load.Shards*load.PollsPerSecond, load.Shards*load.PollsPerSecond/load.RentalsPerSecond)
	p.row("path", "Lambda invocations per rental (one per record)", "batched", "Lambda requests", "Lambda duration", "total", "one per record")
	p.rule(7)
	for _, m := range main.Runs {
		one := UsageOf(m, Sweep, r.Assumptions)
		batched := Batched(one, m, r.Assumptions, load)
		c, c1 := batched.Price(r.Prices, r.Assumptions, 1e6), one.Price(r.Prices, r.Assumptions, 1e6)
		p.row(string(m.Path), fmt.Sprintf("%.2f", one.Invocations), fmt.Sprintf("%.2f", batched.Invocations),
			money(c.LambdaRequests), money(c.LambdaDuration), money(c.Total()), money(c1.Total()))
	}
	r.provisioned(p, main.Runs, load)

	p.f("\n#### Side by side: the same rentals, per million\n\n")
	designs := Designs()
	p.row(append([]string{"path"}, designsNames(designs)...)...)
	p.rule(len(designs) + 1)
	for _, m := range main.Runs {
		cells := []string{string(m.Path)}
		for _, d := range designs {
			u := UsageOf(m, d, r.Assumptions)
			c := u.Price(r.Prices, r.Assumptions, 1e6)
			cells = append(cells, fmt.Sprintf("%s (%s)", money(c.Total()), deadlineLine(d, c)))
		}
		p.row(cells...)
	}
	p.f("\nEach figure is the whole rental (the Events table's work, the API and the functions are the same in every design) with, in brackets, what the design's deadline costs of it. ")
	p.f("**%s**: Deadlines writes (row and index, create and settle), the projector's invocations and requests, and the sweep's schedule as a fixed monthly cost on top. ", Sweep)
	p.f("**%s**: counting one state transition per state entered, the least such a machine is billed: one for a settled payment (the Wait state; StopExecution ends it), two when it times out (Wait, then a Task invoking a function that sends CancelRentalPayment: one more Lambda invocation); StartExecution and StopExecution by the process (%s each, assumed); no projector, no Deadlines table, no sweep, no list of pending payments. ", StepFunctions, r.Assumptions.OtherCall)
	p.f("**%s**: CreateSchedule on PaymentPrepared and DeleteSchedule on settlement by the projector (no per-request price; %s each, assumed), one scheduled invocation and one Lambda invocation when a payment times out; no Deadlines table, no sweep.\n", OneTimeSchedule, r.Assumptions.OtherCall)

	p.f("\n#### Precise deadline mode: what it adds, per million payments\n\n")
	p.f("On top of the projection and the sweep: the projector calls CreateSchedule once per payment and DeleteSchedule once on settlement; a payment that times out has its schedule fire once, invoking the sweep function, which reads the payment's row (one strongly consistent GetItem, about %d bytes) before the cancellation that happens in any design.\n\n", preciseRowBytes)
	p.row("timeouts", "Lambda duration (Scheduler calls)", "Scheduler invocations", "Lambda requests", "DynamoDB reads", "extra per million payments")
	p.rule(6)
	for _, rate := range []float64{0, 0.05} {
		c := PreciseExtra(rate, preciseRowBytes, r.Assumptions).Price(r.Prices, r.Assumptions, 1e6)
		p.row(fmt.Sprintf("%.0f%%", rate*100), money(c.LambdaDuration), money(c.Scheduler), money(c.LambdaRequests), money(c.DynamoDBReads), money(c.Total()))
	}
	if approved, ok := find(main.Runs, Approved); ok {
		whole := UsageOf(approved, Sweep, r.Assumptions).Price(r.Prices, r.Assumptions, 1e6).Total()
		at5 := PreciseExtra(0.05, preciseRowBytes, r.Assumptions).Price(r.Prices, r.Assumptions, 1e6).Total()
		p.f("\nAt 5%% timeouts that is %.1f%% of what a million approved rentals cost (%s).\n", 100*at5/whole, money(whole))
	}
	p.f("\nScheduler's first 14 million invocations a month are free; without that, as above. The CreateSchedule and DeleteSchedule requests themselves carry no charge on the pricing page; their limit is Scheduler's request-rate quota, not cost.\n")

	p.f("\n#### Prices (%s, read %s)\n\n", r.Prices.Region, r.Prices.Read)
	p.row("item", "price")
	p.rule(2)
	for _, row := range [][2]string{
		{"DynamoDB on-demand write request unit", fmt.Sprintf("$%.3f per million", r.Prices.WriteRequestUnit*1e6)},
		{"DynamoDB on-demand read request unit", fmt.Sprintf("$%.3f per million", r.Prices.ReadRequestUnit*1e6)},
		{"DynamoDB Streams reads by Lambda triggers", "free"},
		{"Lambda requests", fmt.Sprintf("$%.2f per million", r.Prices.LambdaRequest*1e6)},
		{"Lambda duration, arm64", fmt.Sprintf("$%.10f per GB-second", r.Prices.LambdaGBSecond)},
		{"API Gateway HTTP API", fmt.Sprintf("$%.2f per million requests", r.Prices.HTTPAPIRequest*1e6)},
		{"EventBridge Scheduler", fmt.Sprintf("$%.2f per million invocations (14 million free a month)", r.Prices.SchedulerInvocation*1e6)},
		{"Step Functions Standard", fmt.Sprintf("$%.3f per 1,000 state transitions (4,000 free a month)", r.Prices.StateTransition*1e3)},
	} {
		p.row(row[0], row[1])
	}
	p.f("\nSources:\n")
	for _, s := range r.Prices.Sources {
		p.f("- %s\n", s)
	}
	return p.err
}

// preciseRowBytes is the size of an outstanding to-do table row, about: what the
// precise mode's GetItem reads.
const preciseRowBytes = 200

func deadlineLine(d Design, c Cost) string {
	switch d {
	case StepFunctions:
		return "transitions " + money(c.StepFunctions)
	case OneTimeSchedule:
		return "schedules " + money(c.Scheduler)
	}
	return "sweep"
}

// indexRatios returns each path's write units over a floor without index writes,
// and whether every one is within 1.5.
func indexRatios(runs []Measurement) (string, bool) {
	var parts []string
	within := true
	for _, m := range runs {
		t := capacity.Total(m.PerRental())
		ratio := float64(t.AllWriteUnits()) / float64(m.Floor.Units()-m.Floor.IndexUnits)
		within = within && ratio <= 1.5
		parts = append(parts, fmt.Sprintf("%.2f (%s)", ratio, m.Path))
	}
	return strings.Join(parts, ", "), within
}

func designsNames(ds []Design) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return out
}

func find(runs []Measurement, p Path) (Measurement, bool) {
	for _, m := range runs {
		if m.Path == p {
			return m, true
		}
	}
	return Measurement{}, false
}

func filter(calls []capacity.Call, keep func(capacity.Call) bool) []capacity.Call {
	var out []capacity.Call
	for _, c := range calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func approximations(modes []ModeRuns) []string {
	var out []string
	for _, mode := range modes {
		for _, m := range mode.Runs {
			out = append(out, capacity.Approximations(m.Calls)...)
		}
	}
	return out
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) row(cells ...string) { p.f("| %s |\n", strings.Join(cells, " | ")) }

func (p *printer) rule(n int) { p.row(strings.Split(strings.Repeat("---,", n-1)+"---", ",")...) }

func itoa(n int) string { return fmt.Sprint(n) }

func units(u float64) string {
	if u == float64(int(u)) {
		return fmt.Sprint(int(u))
	}
	return fmt.Sprintf("%.1f", u)
}

func money(d float64) string {
	switch {
	case d == 0:
		return "$0"
	case d < 0.1:
		return fmt.Sprintf("$%.4f", d)
	}
	return fmt.Sprintf("$%.2f", d)
}
