package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/ops/audit"
)

// smallPages forces every Scan and Query through it to return at most limit items a
// page, and remembers what was asked.
type smallPages struct {
	*dynamodb.Client
	limit int32

	mu      sync.Mutex
	scans   []dynamodb.ScanInput
	queries []dynamodb.QueryInput
}

func (p *smallPages) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	limited := *in
	limited.Limit = aws.Int32(p.limit)
	p.mu.Lock()
	p.scans = append(p.scans, limited)
	p.mu.Unlock()
	return p.Client.Scan(ctx, &limited, optFns...)
}

func (p *smallPages) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	limited := *in
	limited.Limit = aws.Int32(p.limit)
	p.mu.Lock()
	p.queries = append(p.queries, limited)
	p.mu.Unlock()
	return p.Client.Query(ctx, &limited, optFns...)
}

// TestTheAuditReadsEveryPageOfEveryScanAndQuery reads both tables one item a page:
// the Events table's listing (a Scan in segments) and its streams (Queries), and
// the Deadlines table through its index alone, a Query per shard of each kind's
// partitions, never a Scan of it.
func TestTheAuditReadsEveryPageOfEveryScanAndQuery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.rentals["confirmed"]
	w.putEvent(processOf(id), 3, completed(id, "approved")) // something to find on a late page

	direct := w.audit(true)
	paged := &smallPages{Client: w.Client, limit: 1}
	source := audit.NewDynamo(paged, w.EventsTable, audit.WithScanSegments(3))
	index, err := deadlinetable.New(paged, w.DeadlinesTable, w.Kinds, deadlinetable.WithShards(2))
	if err != nil {
		t.Fatal(err)
	}
	report, err := audit.Run(ctx, source, index, audit.Options{Quiet: true, Concurrency: 2, Kinds: w.Kinds})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(report) != fmt.Sprint(direct) {
		t.Errorf("one item a page:\n %+v\nin one page:\n %+v", report, direct)
	}
	if report.Records != 53 || len(report.Violations) != 1 {
		t.Errorf("report %+v, want 53 records and the one violation", report)
	}

	// Every stream is read to its end one item at a time, so a stream of n records
	// takes n pages, plus at most one empty page; and so is every shard of every
	// kind's partitions of the Deadlines table's index.
	var streamQueries, streamContinued, indexQueries, indexContinued int
	for _, q := range paged.queries {
		switch aws.ToString(q.TableName) {
		case w.EventsTable:
			streamQueries++
			if !aws.ToBool(q.ConsistentRead) {
				t.Errorf("a query of a stream was not strongly consistent: %+v", q)
			}
			if q.ExclusiveStartKey != nil {
				streamContinued++
			}
		case w.DeadlinesTable:
			indexQueries++
			if aws.ToString(q.IndexName) == "" {
				t.Errorf("a query of the Deadlines table read the table, not its index: %+v", q)
			}
			if q.ExclusiveStartKey != nil {
				indexContinued++
			}
		}
	}
	if streamQueries < report.Records || streamContinued == 0 {
		t.Errorf("%d queries for %d records, %d continued: the reads of the streams did not follow pagination", streamQueries, report.Records, streamContinued)
	}
	// (the two returns due share a shard: one page ends before the second.)
	if kinds, shards := w.Kinds.Len(), 2; indexQueries < max(kinds*shards, report.DeadlineRows) || indexContinued == 0 {
		t.Errorf("%d queries of the index for %d rows, %d continued: want at least one a row and one for each of the %d shards of the %d kinds, following pagination",
			indexQueries, report.DeadlineRows, indexContinued, shards, kinds)
	}

	var eventScans, continued int
	segments := map[int32]bool{}
	for _, s := range paged.scans {
		if s.ExclusiveStartKey != nil {
			continued++
		}
		segments[aws.ToInt32(s.Segment)] = true
		if aws.ToInt32(s.TotalSegments) != 3 {
			t.Errorf("scan in %d segments, want 3", aws.ToInt32(s.TotalSegments))
		}
		switch aws.ToString(s.TableName) {
		case w.EventsTable:
			eventScans++
			if got := aws.ToString(s.ProjectionExpression); got != "#s, #v" || s.FilterExpression != nil {
				t.Errorf("the stream listing reads %q with filter %v, want only the keys and no filter", got, aws.ToString(s.FilterExpression))
			}
		default:
			t.Errorf("a scan of %s: the Events table is the only one an audit scans", aws.ToString(s.TableName))
		}
	}
	// Every item of the Events table is listed, one a page, across the segments.
	if eventScans < report.Records || continued == 0 {
		t.Errorf("%d scans of Events for %d items, %d continued: the scans did not follow pagination",
			eventScans, report.Records, continued)
	}
	if len(segments) != 3 {
		t.Errorf("segments scanned %v, want 0, 1 and 2", segments)
	}
}
