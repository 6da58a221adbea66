package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/tools/chartkit"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

// The benchmarks this reads, in deadlines/dynamo's bench_test.go.
const (
	costsBench  = "BenchmarkWhatADeadlineCosts"
	motoBench   = "BenchmarkApplyOnMoto"
	sizingBench = "BenchmarkSizing"
	sweepBench  = "BenchmarkSweepReads"
)

// Costs is what one deadline costs, from BenchmarkWhatADeadlineCosts: write units
// of opening and settling it, on the table and its index, and the read units and
// calls of an idle sweep per shard of its kind.
type Costs struct {
	OpenTable, OpenIndex, SettleTable, SettleIndex float64
	IdleReadUnits, IdleCalls                       float64
}

// Sizing is one run of BenchmarkSizing.
type Sizing struct {
	Table                                      string
	Shards, Rows                               int
	Queries, ItemsRead, ReadUnits, CallsPerRow float64
	TableWU, IndexWU                           float64
	Busiest, Even, PeakWU                      float64
}

// SweepPoint is one run of BenchmarkSweepReads: what a sweep read with Open rows
// open, DuePct percent of them overdue.
type SweepPoint struct {
	Table                    string
	Shards, Open, DuePct     int
	Items, Queries, ReadUnit float64
}

// Machine is where and when the benchmarks ran, and how.
type Machine struct {
	Command   string
	Date      time.Time
	CPUs      int
	MemoryGiB float64
	GoVersion string
}

// The peak the sizing is for, and DynamoDB's limit per partition (the
// benchmarks assert the same).
const (
	peakWritesPerSecond = 20_000
	partitionLimit      = 1_000
)

// CommandCalls is what a sent command is assumed to cost its receiver: one read
// and one conditional write, each a DynamoDB call.
const CommandCalls = 2

// Figures are everything the report shows, read from the results.
type Figures struct {
	Costs       Costs
	MsPerApply  float64
	MotoMinutes float64
	Sizing      []Sizing
	Sweeps      []SweepPoint
}

// Read takes the report's figures out of r.
func Read(r chartkit.Benchmarks) (Figures, error) {
	var f Figures
	var errs []error
	get := func(name, unit string) float64 {
		v, err := r.Figure(name, unit)
		errs = append(errs, err)
		return v
	}
	f.Costs = Costs{
		OpenTable: get(costsBench, "open-table-wu"), OpenIndex: get(costsBench, "open-index-wu"),
		SettleTable: get(costsBench, "settle-table-wu"), SettleIndex: get(costsBench, "settle-index-wu"),
		IdleReadUnits: get(costsBench, "idle-sweep-ru/shard"), IdleCalls: get(costsBench, "idle-sweep-calls/shard"),
	}
	f.MsPerApply, f.MotoMinutes = get(motoBench, "ms/apply"), get(motoBench, "min/200k-applies")
	for _, p := range r.Sub(sizingBench) {
		shards, err1 := atoi(p, "shards")
		rows, err2 := atoi(p, "rows")
		errs = append(errs, err1, err2)
		n := p["name"]
		f.Sizing = append(f.Sizing, Sizing{Table: p["table"], Shards: shards, Rows: rows,
			Queries: get(n, "sweep-queries"), ItemsRead: get(n, "sweep-items-read"), ReadUnits: get(n, "sweep-ru"),
			CallsPerRow: get(n, "sweep-calls/row"), TableWU: get(n, "table-wu/deadline"), IndexWU: get(n, "index-wu/deadline"),
			Busiest: get(n, "busiest-partition-%"), Even: get(n, "even-partition-%"), PeakWU: get(n, "busiest-partition-wu/s")})
	}
	for _, p := range r.Sub(sweepBench) {
		shards, err1 := atoi(p, "shards")
		open, err2 := atoi(p, "open")
		due, err3 := atoi(p, "due")
		errs = append(errs, err1, err2, err3)
		n := p["name"]
		f.Sweeps = append(f.Sweeps, SweepPoint{Table: p["table"], Shards: shards, Open: open, DuePct: due,
			Items: get(n, "items-read"), Queries: get(n, "queries"), ReadUnit: get(n, "read-units")})
	}
	if len(f.Sizing) == 0 || len(f.Sweeps) == 0 {
		errs = append(errs, fmt.Errorf("no %s or no %s results in the input", sizingBench, sweepBench))
	}
	slices.SortFunc(f.Sizing, func(a, b Sizing) int { return a.Shards - b.Shards })
	slices.SortFunc(f.Sweeps, func(a, b SweepPoint) int {
		if a.Open != b.Open {
			return a.Open - b.Open
		}
		return a.DuePct - b.DuePct
	})
	return f, errors.Join(errs...)
}

// Proposed returns the sizing run of the fewest shards whose busiest partition
// key stays under the limit at the peak with a margin of a quarter; ok is false
// when none does.
func (f Figures) Proposed() (Sizing, bool) {
	for _, s := range f.Sizing {
		if s.PeakWU <= 0.75*partitionLimit {
			return s, true
		}
	}
	return Sizing{}, false
}

// sweepsPerMonth is a sweep a minute over 30 days: 43,200.
var sweepsPerMonth = rentalcost.Assumed.SweepsPerMonth

// Report writes the figures as Markdown: what a deadline costs at AWS's prices,
// against one-time schedules and Step Functions executions, the sizing at the
// largest run, and the sweep's reads by rows open and due, charted in chart.
func Report(w io.Writer, f Figures, m Machine, chart string) error {
	p, a := rentalcost.USEast1, rentalcost.Assumed
	var b strings.Builder
	pr := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pr("<!-- Generated by make bench-deadlines (tools/cmd/deadlinesreport): do not edit by hand. -->\n\n")
	pr("# What a deadline costs, and the module's sizing\n\n")
	pr("Measured %s on %d cores, %.0f GiB, %s. Commands:\n\n```\n%s\n```\n\n", m.Date.UTC().Format("2006-01-02"), m.CPUs, m.MemoryGiB, m.GoVersion, strings.TrimSpace(m.Command))
	pr("Units are DynamoDB's, counted call by call (`capacity`); prices are %s on-demand list prices read %s (`tools/rentalcost`), free tiers left out. Sources:\n\n", p.Region, p.Read)
	for _, s := range p.Sources {
		pr("- %s\n", s)
	}

	c := f.Costs
	pr("\n## What a deadline costs\n\n")
	pr("On moto through the real AWS SDK (`BenchmarkWhatADeadlineCosts`), one kind at %d shards:\n\n", deadlinetable.DefaultShards)
	pr("| step | table write units | index write units | read units | DynamoDB calls |\n| --- | ---: | ---: | ---: | ---: |\n")
	pr("| open a deadline | %s | %s | | 1 |\n", num(c.OpenTable), num(c.OpenIndex))
	pr("| settle it | %s | %s | | 1 |\n", num(c.SettleTable), num(c.SettleIndex))
	pr("| an idle sweep, per shard of a kind | | | %s | %s |\n\n", num(c.IdleReadUnits), num(c.IdleCalls))
	wu := c.OpenTable + c.OpenIndex + c.SettleTable + c.SettleIndex
	pr("A million deadlines opened and settled: %s write request units, **%s** at $%g per million. ", chartkit.Thousands(wu*1e6), dollars(wu*1e6*p.WriteRequestUnit), 1e6*p.WriteRequestUnit)
	projector := 2 * (a.Overhead + a.DynamoDBCall)
	pr("The projector's Lambda adds at most %s (a million invocations for each of the two records, unbatched) and %s of duration (%s a record: %s of handler and one DynamoDB call of %s, at %d MB); batched, as streams deliver under load, its requests cost up to a hundred times less.\n\n",
		dollars(2e6*p.LambdaRequest), dollars(1e6*projector.Seconds()*float64(a.MemoryMB)/1024*p.LambdaGBSecond), projector/2, a.Overhead, a.DynamoDBCall, a.MemoryMB)

	pr("### A sweep a minute, for a month\n\n")
	pr("%s sweeps (one a minute, 30 days), each one query per shard of each kind (measured, per shard: read units %s, queries %s, whatever the table holds when nothing is due). The Lambda's duration is assumed: %s of handler and the queries %d at a time (`deadlines.DefaultConcurrency`), %s each, at %d MB. The Lambda's requests and duration are the sweep's, shared by every kind it covers.\n\n",
		chartkit.Thousands(sweepsPerMonth), num(c.IdleReadUnits), num(c.IdleCalls), a.Overhead, deadlines.DefaultConcurrency, a.DynamoDBCall, a.MemoryMB)
	pr("| shards | read units / month / kind | reads $ / month / kind | Lambda requests $ / month | Lambda duration $ / month (one kind) | total $ / month (one kind) |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range []int{1, 4, 16, 32, 64} {
		ru := sweepsPerMonth * float64(s) * c.IdleReadUnits
		queries := math.Ceil(float64(s) * c.IdleCalls / float64(deadlines.DefaultConcurrency))
		dur := a.Overhead + time.Duration(queries)*a.DynamoDBCall
		requests := sweepsPerMonth * p.LambdaRequest
		duration := sweepsPerMonth * dur.Seconds() * float64(a.MemoryMB) / 1024 * p.LambdaGBSecond
		reads := ru * p.ReadRequestUnit
		pr("| %d | %s | %s | %s | %s (%s each) | %s |\n", s, chartkit.Thousands(ru), dollars(reads), dollars(requests), dollars(duration), dur, dollars(reads+requests+duration))
	}

	pr("\n### Beside one schedule or one execution per deadline\n\n")
	sfnFired, sfnStopped := 2.0, 1.0
	pr("| per million deadlines | settled before due | falling due | fixed per month |\n| --- | ---: | ---: | ---: |\n")
	perRow := 0.0
	if s, ok := f.largestSweep(); ok && s.Items > 0 {
		perRow = s.ReadUnit / s.Items
	}
	pr("| this module: a row, and a sweep a minute | %s (writes) | %s (writes, and %s read units a row found) | the sweep, above |\n",
		dollars(wu*1e6*p.WriteRequestUnit), dollars(wu*1e6*p.WriteRequestUnit+1e6*perRow*p.ReadRequestUnit), strconv.FormatFloat(perRow, 'f', 4, 64))
	pr("| EventBridge Scheduler, one one-time schedule each | %s | %s (+ %s for the Lambda it invokes) | none |\n", dollars(0), dollars(1e6*p.SchedulerInvocation), dollars(1e6*p.LambdaRequest))
	pr("| Step Functions Standard, one Wait→Task execution each | %s | %s | none |\n\n", dollars(1e6*sfnStopped*p.StateTransition), dollars(1e6*sfnFired*p.StateTransition))
	pr("EventBridge Scheduler charges %s per million invocations (schedules firing) and nothing for the requests that create or delete a schedule, so a deadline settled first (its schedule deleted) costs nothing there. ", dollars(1e6*p.SchedulerInvocation))
	pr("Step Functions \"counts a state transition each time a step of your workflow is executed\" (its pricing page), at %s per 1,000: a minimal machine of a Wait state and a Task state executes %.0f steps for a deadline that falls due (the Wait, then the Task that sends the command) and %.0f for one stopped while it waits (StopExecution, when it settles). The command each sends, and its receiver's work, are the same in every design and left out.\n",
		dollars(1000*p.StateTransition), sfnFired, sfnStopped)

	if err := f.sizing(&b); err != nil {
		return err
	}
	f.sweeps(&b, chart)
	_, err := io.WriteString(w, b.String())
	return err
}

// sizing writes the section on sizing at the largest run.
func (f Figures) sizing(b *strings.Builder) error {
	pr := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	a := rentalcost.Assumed
	prop, ok := f.Proposed()
	if !ok {
		return fmt.Errorf("no shard count keeps the busiest index partition under %d write units a second at the peak, with a margin", partitionLimit)
	}
	pr("\n## Sizing at %s deadlines\n\n", chartkit.Thousands(float64(prop.Rows)))
	pr("Moto took %.2f ms for each of the Table's conditional writes (`BenchmarkApplyOnMoto`, 2,000 openings): 100,000 openings and as many settlements would take about %.0f minutes there, one at a time, before any sweep (and moto reads its whole table for every query). So the sizing runs on the benchmarks' in-process table (`inProcess` in `deadlines/dynamo/inprocess_test.go`): the Table's own expressions over a map and a sorted index, with DynamoDB's accounting, held to moto call by call on a small run by `TestTheInProcessTableIsMotos` (the same items, the same units, the same index writes by partition).\n\n",
		f.MsPerApply, f.MotoMinutes)
	pr("`BenchmarkSizing` delivers %s openings to `awslambda.Projector` over a `dynamo.Table` in stream batches of 100, runs the sweep's Lambda handler (`awslambda.Sweep`, a 15-minute invocation) over all of them overdue, then delivers as many settlements. The index's writes are counted by partition key (kind#shard) as the in-process table makes them. At a peak of 10,000 deadlines opened and 10,000 settled a second, each a one-unit write to its partition key, the busiest key takes its share of %s units a second, against DynamoDB's %s per partition:\n\n",
		chartkit.Thousands(float64(prop.Rows)), chartkit.Thousands(peakWritesPerSecond), chartkit.Thousands(partitionLimit))
	pr("| shards | busiest key's share | an even share | busiest key at the peak (units/s) | under %s? | sweep queries | items read | read units | DynamoDB calls a row |\n| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n", chartkit.Thousands(partitionLimit))
	for _, s := range f.Sizing {
		under := "no"
		if s.PeakWU <= partitionLimit {
			under = "yes"
		}
		pr("| %d | %.3f%% | %.3f%% | %s | %s | %s | %s | %s | %s |\n", s.Shards, s.Busiest, s.Even, chartkit.Thousands(s.PeakWU), under,
			chartkit.Thousands(s.Queries), chartkit.Thousands(s.ItemsRead), num(s.ReadUnits), strconv.FormatFloat(s.CallsPerRow, 'g', 3, 64))
	}
	pr("\n**%d shards** is the smallest power of two run that keeps the busiest key under the limit with a margin of a quarter: %s units a second at the peak, %.0f%% of %s (and `BenchmarkSizing` fails if, from its proposed count up, a key would take more than %s). At 16 a sixteenth of the writes is already %s a second, however evenly they spread.\n\n",
		prop.Shards, chartkit.Thousands(prop.PeakWU), 100*prop.PeakWU/partitionLimit, chartkit.Thousands(partitionLimit), chartkit.Thousands(partitionLimit), chartkit.Thousands(peakWritesPerSecond/16))
	pr("Each deadline wrote %s table units and %s index units over its life. The sweep of %s overdue rows read exactly the rows it returned (the benchmark asserts items read = rows found: the key condition bounds each query to the overdue rows, so no page reads past them), in one query per shard and one more per 1 MB page of index entries",
		num(prop.TableWU), num(prop.IndexWU), chartkit.Thousands(float64(prop.Rows)))
	for _, s := range f.Sizing {
		if int(s.Queries) > s.Shards {
			pr(" (at %d shards, %s queries: each shard's rows filled more than a page)", s.Shards, chartkit.Thousands(s.Queries))
			break
		}
	}
	pr(".\n\n")

	margin := awslambda.DefaultSweepMargin
	budget := 15*time.Minute - margin
	perRow := time.Duration((prop.CallsPerRow + CommandCalls) * float64(a.DynamoDBCall))
	need := math.Ceil(float64(prop.Rows) * perRow.Seconds() / budget.Seconds())
	reach := float64(deadlines.DefaultConcurrency) * budget.Seconds() / perRow.Seconds()
	pr("### The sweep's concurrency\n\n")
	pr("Assumed: a DynamoDB call takes %s (`rentalcost.Assumed`; DynamoDB promises single-digit milliseconds), and a command costs its receiver %d calls (one read and one conditional write). Measured: the sweep's own calls are %s a row at %d shards. So a row takes %s of one of the sweep's slots, and %s rows in one invocation of 15 minutes less the module's margin (`awslambda.DefaultSweepMargin`, %s), %s, need a `SweeperConfig.Concurrency` of at least **%.0f**; the default, %d, sends about %s rows in that time.\n",
		a.DynamoDBCall, CommandCalls, strconv.FormatFloat(prop.CallsPerRow, 'g', 3, 64), prop.Shards, perRow.Round(time.Microsecond), chartkit.Thousands(float64(prop.Rows)), margin, budget, need, deadlines.DefaultConcurrency, chartkit.Thousands(math.Floor(reach)))
	return nil
}

// sweeps writes the table of the sweep's reads and links the chart.
func (f Figures) sweeps(b *strings.Builder, chart string) {
	pr := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pr("\n## What a sweep reads, by rows open and rows due\n\n")
	pr("`BenchmarkSweepReads`, at %d shards on the in-process table: one sweep of one kind.\n\n", f.Sweeps[0].Shards)
	if chart != "" {
		pr("![Items read and queries of one sweep by rows open and rows due](%s)\n\n", chart)
	}
	pr("| rows open | rows due | items read | queries | read units |\n| ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range f.Sweeps {
		pr("| %s | %s (%d%%) | %s | %s | %s |\n", chartkit.Thousands(float64(s.Open)), chartkit.Thousands(float64(s.Open*s.DuePct/100)), s.DuePct, chartkit.Thousands(s.Items), chartkit.Thousands(s.Queries), num(s.ReadUnit))
	}
}

// largestSweep returns the run of the most rows open with all of them due.
func (f Figures) largestSweep() (SweepPoint, bool) {
	var best SweepPoint
	for _, s := range f.Sweeps {
		if s.DuePct == 100 && s.Open > best.Open {
			best = s
		}
	}
	return best, best.Open > 0
}

// num formats a count or a unit: whole numbers with thousands separators, others
// to two decimal places.
func num(v float64) string {
	if v == math.Trunc(v) {
		return chartkit.Thousands(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// dollars formats an amount in US dollars: cents from ten cents up, three
// significant digits below.
func dollars(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 0.1:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'g', 3, 64)
}
