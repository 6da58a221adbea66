package sweepscale_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/tools/sweepscale"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// cancelled answers every cancellation as made and records nothing, so that every
// sweep of the benchmark finds the same rows overdue.
type cancelled struct{}

func (cancelled) CancelRentalPayment(context.Context, string, command.Meta) (process.Outcome, error) {
	return process.OutcomeCancelled, nil
}

// BenchmarkSweepItemsRead counts the items one sweep reads with a fixed number of
// overdue payments among many outstanding ones, on the Deadlines table on the
// local emulator, against a scan-and-filter baseline over the same table in the
// same run. Sizes: SWEEP_BENCH_SIZES (default "1000,10000").
//
//	make bench-sweep                                  # 1,000 and 10,000 pending
//	SWEEP_BENCH_SIZES=1000,10000,100000 make bench-sweep
func BenchmarkSweepItemsRead(b *testing.B) {
	sizes := []int{1000, 10000}
	if v := os.Getenv("SWEEP_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("SWEEP_BENCH_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	const overdue = 10
	policy := deadlinekinds.Policy{Timeout: 15 * time.Minute}
	kinds := deadlinekinds.MustDeclare(policy, deadlinekinds.Receivers{Canceller: cancelled{}})
	for _, pending := range sizes {
		b.Run(fmt.Sprintf("pending=%d/overdue=%d", pending, overdue), func(b *testing.B) {
			ctx := context.Background()
			client := emulatortest.DynamoDB(b)
			name := emulatortest.CreateTable(b, client, deadlinetable.Definition, "deadlines")
			table, err := deadlinetable.New(client, name, kinds)
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			seedStart := time.Now()
			paymentKind, _ := kinds.ByName(deadlinekinds.Payment)
			if err := sweepscale.Seed(ctx, client, table, name, paymentKind, pending, overdue, now); err != nil {
				b.Fatal(err)
			}
			seeded := time.Since(seedStart)
			sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: table, Kinds: kinds, Every: time.Minute,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			var sweepRead int
			for b.Loop() {
				sums, err := sweeper.Sweep(ctx, now, "bench")
				pay := summaryOf(sums, deadlinekinds.Payment)
				if err != nil || pay.Found != overdue {
					b.Fatalf("sweep found %d (%v), want %d", pay.Found, err, overdue)
				}
				sweepRead = pay.ItemsRead
			}
			b.StopTimer()
			found, scanRead, err := sweepscale.Scan(ctx, client, name, now)
			if err != nil || found != overdue {
				b.Fatalf("scan found %d (%v), want %d", found, err, overdue)
			}
			b.ReportMetric(float64(sweepRead), "items-read/sweep")
			b.ReportMetric(float64(scanRead), "items-read/scan")
			b.ReportMetric(float64(scanRead)/float64(sweepRead), "scan/sweep")
			b.ReportMetric(seeded.Seconds(), "seed-s") // not timed: b.Loop times only the sweeps
		})
	}
}

func summaryOf(sums []deadlines.KindSummary, kind string) deadlines.KindSummary {
	for _, s := range sums {
		if s.Kind == kind {
			return s
		}
	}
	return deadlines.KindSummary{Kind: kind}
}
