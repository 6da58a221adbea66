package deadline_test

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// BenchmarkSweepItemsRead counts the items one sweep reads with a fixed number of
// overdue payments among many pending ones, against a scan-and-filter baseline over
// the same table in the same run. Sizes: SWEEP_BENCH_SIZES (default "1000,10000").
//
//	make bench-sweep                                  # 1,000 and 10,000 pending
//	SWEEP_BENCH_SIZES=1000,10000,100000 make bench-sweep
func BenchmarkSweepItemsRead(b *testing.B) {
	sizes := []int{1000, 10000}
	if v := os.Getenv("SWEEP_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range splitComma(v) {
			n, err := strconv.Atoi(f)
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
			s := over(w.projection, &recording{}, deadline.Policy{Timeout: 15 * time.Minute}, nil, sweep.Sweep{Logger: slog.New(slog.DiscardHandler)})
			var sweepRead int
			for b.Loop() {
				sum, err := s.Sweep(ctx, now)
				if err != nil || sum.Of(deadlinekinds.Payment).Found != overdue {
					b.Fatalf("sweep found %d (%v), want %d", sum.Of(deadlinekinds.Payment).Found, err, overdue)
				}
				sweepRead = sum.Of(deadlinekinds.Payment).ItemsRead
			}
			b.StopTimer()
			found, scanRead := scanAndFilter(b, w, now.Add(-15*time.Minute))
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

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// seed writes pending rows exactly as the projection writes them, 25 to a batch:
// overdue of them prepared an hour ago, the rest a minute ago.
func seed(b *testing.B, w *world, pending, overdue int, now time.Time) {
	b.Helper()
	var batch []types.WriteRequest
	flush := func() {
		for len(batch) > 0 {
			out, err := w.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{w.pending: batch}})
			if err != nil {
				b.Fatal(err)
			}
			batch = out.UnprocessedItems[w.pending]
		}
	}
	for i := range pending {
		at := now.Add(-time.Minute)
		if i < overdue {
			at = now.Add(-time.Hour)
		}
		rentalID := rental.NewRentalID(fmt.Sprintf("bike%d", i), fmt.Sprintf("%022d", i))
		ref := payment.ReferenceFor(rentalID)
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			schema.DeadlineKey:       &types.AttributeValueMemberS{Value: ref},
			schema.DeadlineSubject:   &types.AttributeValueMemberS{Value: rentalID},
			schema.DeadlineDueAt:     &types.AttributeValueMemberN{Value: strconv.FormatInt(at.UnixMilli(), 10)},
			schema.DeadlineKindShard: &types.AttributeValueMemberS{Value: w.projection.ShardOf(ref)},
			schema.DeadlineVersion:   &types.AttributeValueMemberN{Value: "1"},
		}}})
		if len(batch) == 25 {
			flush()
		}
	}
	flush()
}

// scanAndFilter is the baseline the index replaces: scan the whole table and keep the
// outstanding rows older than the cutoff. It returns the rows found and the items read.
func scanAndFilter(b *testing.B, w *world, cutoff time.Time) (found, read int) {
	pages := dynamodb.NewScanPaginator(w.client, &dynamodb.ScanInput{
		TableName:                aws.String(w.pending),
		FilterExpression:         aws.String("attribute_exists(#shard) AND #at < :cutoff"),
		ExpressionAttributeNames: map[string]string{"#shard": schema.DeadlineKindShard, "#at": schema.DeadlineDueAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":cutoff": &types.AttributeValueMemberN{Value: strconv.FormatInt(cutoff.UnixMilli(), 10)},
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
