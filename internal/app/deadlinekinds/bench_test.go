package deadlinekinds_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// BenchmarkSweepItemsRead counts the items one sweep reads with a fixed number of
// overdue payments among many pending ones, against a scan-and-filter baseline over
// the same table in the same run. Sizes: SWEEP_BENCH_SIZES (default "1000,10000").
//
//	go test -run '^$' -bench BenchmarkSweepItemsRead -benchtime 3x ./internal/app/deadlinekinds/
//	SWEEP_BENCH_SIZES=1000,10000,100000 go test -run '^$' -bench BenchmarkSweepItemsRead -benchtime 1x ./internal/app/deadlinekinds/
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
	for _, pending := range sizes {
		b.Run(fmt.Sprintf("pending=%d/overdue=%d", pending, overdue), func(b *testing.B) {
			w := newWorld(b, deadlinetable.DefaultShards)
			now := time.Now()
			seedStart := time.Now()
			seed(b, w, pending, overdue, now)
			seeded := time.Since(seedStart)
			s := newSweeper(b, w.table, deadlinekinds.Policy{Timeout: 15 * time.Minute}, deadlinekinds.Receivers{Canceller: &recording{}}, 0)
			var sweepRead int
			for b.Loop() {
				sum, err := sweepAt(s, now)
				if k := of(sum, deadlinekinds.Payment); err != nil || k.Found != overdue {
					b.Fatalf("sweep found %d (%v), want %d", k.Found, err, overdue)
				}
				sweepRead = of(sum, deadlinekinds.Payment).ItemsRead
			}
			b.StopTimer()
			found, scanRead := scanAndFilter(b, w, deadlinekinds.Policy{Timeout: 15 * time.Minute}.Deadline(now.Add(-15*time.Minute)))
			if found != overdue {
				b.Fatalf("scan found %d, want %d", found, overdue)
			}
			b.ReportMetric(float64(sweepRead), "items-read/sweep")
			b.ReportMetric(float64(scanRead), "items-read/scan")
			b.ReportMetric(float64(scanRead)/float64(sweepRead), "scan/sweep")
			b.ReportMetric(seeded.Seconds(), "seed-s") // not timed: b.Loop times only the sweeps
		})
	}
}

// seed projects pending payments into w's table as the projector does, eight at
// once: overdue of them prepared an hour ago, the rest a minute ago.
func seed(b *testing.B, w *world, pending, overdue int, now time.Time) {
	b.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				at := now.Add(-time.Minute)
				if i < overdue {
					at = now.Add(-time.Hour)
				}
				w.apply(prepared(b, rental.NewRentalID(fmt.Sprintf("bike%d", i), fmt.Sprintf("%022d", i)), at))
			}
		})
	}
	for i := range pending {
		work <- i
	}
	close(work)
	wg.Wait()
}

// scanAndFilter is the baseline the index replaces: scan the whole table and keep
// the outstanding rows due before dueBefore. It returns the rows found and the
// items read.
func scanAndFilter(b *testing.B, w *world, dueBefore time.Time) (found, read int) {
	pages := dynamodb.NewScanPaginator(w.client, &dynamodb.ScanInput{
		TableName:                aws.String(w.deadlines),
		FilterExpression:         aws.String("attribute_exists(#shard) AND #at < :cutoff"),
		ExpressionAttributeNames: map[string]string{"#shard": attrKindShard, "#at": attrDueAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":cutoff": &types.AttributeValueMemberN{Value: strconv.FormatInt(dueBefore.UnixMilli(), 10)},
		},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		found += int(page.Count)
		read += int(page.ScannedCount)
	}
	return found, read
}
