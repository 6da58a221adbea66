package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
)

// The benchmarks of what a deadline costs and of the module's sizing. Their
// figures are counts (request units, items, calls), reported with b.ReportMetric
// and turned into prices and a chart by tools/cmd/deadlinesreport (make
// bench-deadlines). Sizes: DEADLINES_BENCH_ROWS, the rows open in the sizing
// benchmarks, comma-separated (default 1000; make bench-deadlines runs
// 1000,10000,100000): BenchmarkSizing runs at the largest, BenchmarkSweepReads at
// each.

// order is the kind the benchmarks measure: an order not confirmed within 15
// minutes of being placed is cancelled.
func order(send deadlines.Command) deadlines.Kind {
	return deadlines.Kind{Name: "unconfirmed-order", After: 15 * time.Minute, Work: deadlines.Send{Command: send},
		Changes: deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed", "OrderCancelled"}}}
}

var acted = deadlines.CommandFunc(func(context.Context, deadlines.Row, string) (deadlines.Outcome, error) {
	return deadlines.Acted, nil
})

// orderID is the id of the i-th order: 16 hexadecimal digits, drawn from a fixed
// seed, so that the rows spread over the shards as real ids would, the same in
// every run.
func orderID(rng *rand.Rand) string { return fmt.Sprintf("order-%016x", rng.Uint64()) }

// BenchmarkWhatADeadlineCosts measures, on moto through the real SDK with
// DynamoDB's units counted by capacity.Counter, what one deadline costs: the
// write units of opening it and of settling it, on the table and on its index,
// and the read units and queries of an idle sweep (one that finds nothing), per
// shard of the kind. Each iteration opens and settles one more order and sweeps
// once; every iteration must cost the same, or the benchmark fails.
func BenchmarkWhatADeadlineCosts(b *testing.B) {
	ctx := context.Background()
	kinds := deadlines.MustKinds(order(acted))
	const shards = dynamo.DefaultShards
	client, name := newTable(b)
	counter := capacity.NewCounter(client)
	counted := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Middleware("bench"))
	})
	tb, err := dynamo.New(counted, name, kinds, dynamo.WithShards(shards))
	if err != nil {
		b.Fatal(err)
	}
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: tb, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	measure := func(step func() error) capacity.Totals {
		counter.Reset()
		if err := step(); err != nil {
			b.Fatal(err)
		}
		calls := counter.Calls()
		if a := capacity.Approximations(calls); len(a) > 0 {
			b.Fatalf("approximate units: %q", a)
		}
		t := capacity.Total(calls)
		t.BytesRead, t.BytesWritten = 0, 0 // an item's size varies with its due time's digits; its units do not
		return t
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var first *[3]capacity.Totals
	i := 0
	for b.Loop() {
		id := orderID(rng)
		placed := t0.Add(time.Duration(i) * time.Second)
		i++
		opening := measure(func() error { return tb.Apply(ctx, rec("OrderPlaced", id, 1, placed)) })
		idle := measure(func() error {
			sums, err := sweeper.Sweep(ctx, placed.Add(time.Minute), "bench") // before it falls due
			if err == nil && sums[0].Found != 0 {
				err = fmt.Errorf("an idle sweep found %d", sums[0].Found)
			}
			return err
		})
		settle := measure(func() error { return tb.Apply(ctx, rec("OrderConfirmed", id, 2, placed.Add(time.Minute))) })
		got := [3]capacity.Totals{opening, idle, settle}
		if first == nil {
			first = &got
		} else if got != *first {
			b.Fatalf("iteration %d cost %+v, the first %+v: a deadline's units should not vary", i, got, *first)
		}
	}
	opening, idle, settle := first[0], first[1], first[2]
	b.ReportMetric(float64(opening.WriteUnits), "open-table-wu")
	b.ReportMetric(float64(opening.IndexWriteUnits), "open-index-wu")
	b.ReportMetric(float64(settle.WriteUnits), "settle-table-wu")
	b.ReportMetric(float64(settle.IndexWriteUnits), "settle-index-wu")
	b.ReportMetric(idle.ReadUnits/shards, "idle-sweep-ru/shard")
	b.ReportMetric(float64(idle.Calls)/shards, "idle-sweep-calls/shard")
}

// BenchmarkApplyOnMoto times the Table's conditional UpdateItem on moto: one
// opening Applied per iteration (make bench-deadlines runs 2,000), and what
// 100,000 openings and 100,000 settlements would take at that pace, one at a time
// (moto serves one request at a time). That is what the sizing benchmarks below
// would wait for on moto, so they run on the in-process table instead
// (inProcess), which TestTheInProcessTableIsMotos holds to moto.
func BenchmarkApplyOnMoto(b *testing.B) {
	tb := open(b, deadlines.MustKinds(order(acted)), dynamo.WithShards(32))
	rng := rand.New(rand.NewPCG(3, 4))
	i := 0
	for b.Loop() {
		if err := tb.Apply(context.Background(), rec("OrderPlaced", orderID(rng), 1, t0.Add(time.Duration(i)*time.Millisecond))); err != nil {
			b.Fatal(err)
		}
		i++
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(time.Millisecond), "ms/apply")
	b.ReportMetric((200_000 * per).Minutes(), "min/200k-applies")
}

// The sizing's peak and DynamoDB's limit: a peak of 10,000 deadlines opened and
// 10,000 settled a second, each a one-unit write of the index to its partition
// key, against "1,000 write units per second" per partition, a global secondary
// index's partitions included.
const (
	peakIndexWritesPerSecond = 20_000
	partitionWriteLimit      = 1_000
	// proposedShards is the smallest power of two whose busiest index partition
	// takes no more than the limit at the peak, with a margin: at 16 shards a
	// sixteenth of the writes (1,250 units a second) is over it whatever the
	// spread; at 32 an even spread is 625.
	proposedShards = 32
)

// BenchmarkSizing drives the module's projector (awslambda.Projector over a
// dynamo.Table on the in-process table, in stream batches of 100) through rows
// openings, then its sweep (awslambda.Sweep over a deadlines.Sweeper, with a
// 15-minute invocation) over all of them overdue, then as many settlements, at 4
// (the default), 16, 32 and 64 shards. It reports what the sweep read (queries, items, read units,
// calls per row) and how the index writes spread over its partition keys,
// counted from the writes themselves. It fails if the sweep reads anything but
// the rows it returns (items read = rows found; queries between one a shard and
// the 1 MB pages the entries fill), or, from proposedShards up, if the busiest
// partition key would take more than partitionWriteLimit at the peak.
func BenchmarkSizing(b *testing.B) {
	rows := slices.Max(benchRows(b))
	for _, shards := range []int{dynamo.DefaultShards, 16, proposedShards, 64} {
		b.Run(fmt.Sprintf("inprocess/shards=%d/rows=%d", shards, rows), func(b *testing.B) {
			for b.Loop() {
				sizing(b, shards, rows)
			}
		})
	}
}

func sizing(b *testing.B, shards, rows int) {
	ctx := context.Background()
	var sent atomic.Int64
	kinds := deadlines.MustKinds(order(deadlines.CommandFunc(func(context.Context, deadlines.Row, string) (deadlines.Outcome, error) {
		sent.Add(1)
		return deadlines.Acted, nil
	})))
	local := newInProcess("deadlines")
	tb, err := dynamo.New(local, "deadlines", kinds, dynamo.WithShards(shards))
	if err != nil {
		b.Fatal(err)
	}
	quiet := awslambda.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	decode, err := awslambda.Items{Stream: "stream", Position: "position", Type: "type", At: "at"}.Decoder() // what benchInsert writes
	if err != nil {
		b.Fatal(err)
	}
	project := awslambda.Projector(tb, decode, quiet)
	rng := rand.New(rand.NewPCG(5, 6))
	ids := make([]string, rows)
	for i := range ids {
		ids[i] = orderID(rng)
	}
	deliver := func(typ string, position int64, at func(i int) time.Time) capacity.Totals {
		local.Reset()
		for start := 0; start < rows; start += 100 {
			var batch events.DynamoDBEvent
			for i := start; i < min(start+100, rows); i++ {
				batch.Records = append(batch.Records, benchInsert(deadlines.Record{Stream: ids[i], Position: position, Type: typ, At: at(i)}, i))
			}
			resp, err := project(ctx, batch)
			if err != nil || len(resp.BatchItemFailures) > 0 {
				b.Fatalf("%s: %d records to deliver again, %v", typ, len(resp.BatchItemFailures), err)
			}
		}
		return capacity.Total(local.Calls())
	}
	placedAt := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	opened := deliver("OrderPlaced", 1, placedAt)

	// The sweep, as its Lambda runs it: every row is overdue.
	now := placedAt(rows).Add(order(nil).After + time.Second).Truncate(time.Second)
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: tb, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	sweep := awslambda.Sweep(sweeper, quiet, awslambda.Clock(func() time.Time { return now }))
	local.Reset()
	invocation, cancel := context.WithTimeout(ctx, 15*time.Minute)
	sum, err := sweep(invocation, json.RawMessage(`{"scheduledTime":"`+now.Format(time.RFC3339)+`"}`))
	cancel()
	calls := local.Calls()
	read := capacity.Total(calls)
	k, _ := sum.Kind(order(nil).Name)
	if err != nil || sum.Incomplete || k.Found != rows || k.Acted != rows || int(sent.Load()) != rows {
		b.Fatalf("the sweep found %d and acted on %d of %d (%d sent), incomplete %v: %v", k.Found, k.Acted, rows, sent.Load(), sum.Incomplete, err)
	}
	// The key condition bounds the read to the overdue rows, and a page ends only
	// at 1 MB of index entries: the sweep reads exactly the rows it returns, in
	// one query per shard and one more per 1 MB page boundary.
	if read.ItemsRead != rows || k.ItemsRead != rows {
		b.Fatalf("the sweep read %d items (it counted %d) for %d rows", read.ItemsRead, k.ItemsRead, rows)
	}
	least, most := shards, shards
	for _, p := range pageBounds(local, shards) {
		least, most = least+p[0]-1, most+p[1]-1
	}
	if read.Calls < least || read.Calls > most {
		b.Fatalf("the sweep made %d queries, want %d to %d: one a shard, and one more each 1 MB", read.Calls, least, most)
	}

	settled := deliver("OrderConfirmed", 2, func(i int) time.Time { return now })
	if want := 2 * rows; opened.AllWriteUnits()+settled.AllWriteUnits() != 2*want || opened.Calls+settled.Calls != want {
		b.Fatalf("projecting %d openings and settlements made %d calls and wrote %+v and %+v", rows, opened.Calls+settled.Calls, opened, settled)
	}

	// The index's writes, by partition key.
	writes := local.IndexWrites()
	total, busiest := 0, 0
	for _, n := range writes {
		total += n
		busiest = max(busiest, n)
	}
	if len(writes) != shards || total != opened.IndexWriteUnits+settled.IndexWriteUnits {
		b.Fatalf("%d index partition keys written with %d units; want %d keys, and the %d units counted", len(writes), total, shards, opened.IndexWriteUnits+settled.IndexWriteUnits)
	}
	share := float64(busiest) / float64(total)
	peak := share * peakIndexWritesPerSecond
	if shards >= proposedShards && peak > partitionWriteLimit {
		b.Fatalf("%d shards: the busiest partition key takes %.2f%% of the index writes, %.0f units a second at the peak, over %d",
			shards, 100*share, peak, partitionWriteLimit)
	}
	b.ReportMetric(float64(read.Calls), "sweep-queries")
	b.ReportMetric(float64(read.ItemsRead), "sweep-items-read")
	b.ReportMetric(read.ReadUnits, "sweep-ru")
	b.ReportMetric(float64(read.Calls)/float64(rows), "sweep-calls/row")
	b.ReportMetric(float64(opened.WriteUnits+settled.WriteUnits)/float64(rows), "table-wu/deadline")
	b.ReportMetric(float64(opened.IndexWriteUnits+settled.IndexWriteUnits)/float64(rows), "index-wu/deadline")
	b.ReportMetric(100*share, "busiest-partition-%")
	b.ReportMetric(100/float64(shards), "even-partition-%")
	b.ReportMetric(peak, "busiest-partition-wu/s")
}

// pageBounds returns, for each index partition of local, the fewest and the most
// 1 MB query pages its entries fill: their bytes over 1 MB, and over 1 MB less
// the largest entry (a page ends before the entry that would take it past 1 MB).
func pageBounds(local *inProcess, shards int) [][2]int {
	local.mu.Lock()
	defer local.mu.Unlock()
	var out [][2]int
	for pk := range local.partitions {
		bytes, largest := 0, 0
		for _, k := range local.entries(pk) {
			n := capacity.ItemSize(local.index.Entry(local.items[k], []string{local.tableKey}))
			bytes, largest = bytes+n, max(largest, n)
		}
		out = append(out, [2]int{max(1, ceilDiv(bytes, maxPage)), max(1, ceilDiv(bytes, maxPage-largest))})
	}
	for len(out) < shards { // a partition no row went to: one empty query
		out = append(out, [2]int{1, 1})
	}
	return out
}

func ceilDiv(n, d int) int { return (n + d - 1) / d }

// BenchmarkSweepReads measures what one sweep reads with rows open in the table
// and 0%, 1%, 10% or 100% of them overdue, at proposedShards, on the in-process
// table: the items read, the queries and the read units, for the chart of
// tools/cmd/deadlinesreport. The rows are applied with Table.Apply directly: the
// projector's path is BenchmarkSizing's, and only the rows matter here. It fails
// unless the sweep reads exactly the overdue rows.
func BenchmarkSweepReads(b *testing.B) {
	for _, rows := range benchRows(b) {
		for _, pct := range []int{0, 1, 10, 100} {
			b.Run(fmt.Sprintf("inprocess/shards=%d/open=%d/due=%dpct", proposedShards, rows, pct), func(b *testing.B) {
				ctx := context.Background()
				kinds := deadlines.MustKinds(order(acted))
				local := newInProcess("deadlines")
				tb, err := dynamo.New(local, "deadlines", kinds, dynamo.WithShards(proposedShards))
				if err != nil {
					b.Fatal(err)
				}
				now := t0.Add(time.Hour)
				due := rows * pct / 100
				rng := rand.New(rand.NewPCG(7, 8))
				for i := range rows {
					at := now // due a quarter of an hour after now
					if i < due {
						at = t0.Add(time.Duration(i) * time.Millisecond) // overdue by now
					}
					if err := tb.Apply(ctx, rec("OrderPlaced", orderID(rng), 1, at)); err != nil {
						b.Fatal(err)
					}
				}
				sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: tb, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				var read capacity.Totals
				for b.Loop() {
					local.Reset()
					sums, err := sweeper.Sweep(ctx, now, "bench")
					read = capacity.Total(local.Calls())
					if err != nil || sums[0].Found != due || read.ItemsRead != due {
						b.Fatalf("the sweep found %d and read %d items, want %d: %v", sums[0].Found, read.ItemsRead, due, err)
					}
				}
				b.ReportMetric(float64(read.ItemsRead), "items-read")
				b.ReportMetric(float64(read.Calls), "queries")
				b.ReportMetric(read.ReadUnits, "read-units")
			})
		}
	}
}

// benchRows reads DEADLINES_BENCH_ROWS.
func benchRows(b *testing.B) []int {
	v := os.Getenv("DEADLINES_BENCH_ROWS")
	if v == "" {
		return []int{1000}
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			b.Fatalf("DEADLINES_BENCH_ROWS=%q: want counts of 100 or more, comma-separated", v)
		}
		out = append(out, n)
	}
	return out
}

// benchInsert is r as the INSERT of its event's item a stream delivers, with the
// sequence number seq.
func benchInsert(r deadlines.Record, seq int) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID: strconv.Itoa(seq), EventName: string(events.DynamoDBOperationTypeInsert), EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: strconv.Itoa(seq),
			NewImage: map[string]events.DynamoDBAttributeValue{
				"stream":   events.NewStringAttribute(r.Stream),
				"position": events.NewNumberAttribute(strconv.FormatInt(r.Position, 10)),
				"type":     events.NewStringAttribute(r.Type),
				"at":       events.NewStringAttribute(r.At.Format(time.RFC3339Nano)),
			},
		},
	}
}
