package audit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/ops/audit"
)

// smallPages forces every Scan and Query through it to return at most limit items a
// page, and remembers what was asked.
type smallPages struct {
	audit.DynamoAPI
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
	return p.DynamoAPI.Scan(ctx, &limited, optFns...)
}

func (p *smallPages) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	limited := *in
	limited.Limit = aws.Int32(p.limit)
	p.mu.Lock()
	p.queries = append(p.queries, limited)
	p.mu.Unlock()
	return p.DynamoAPI.Query(ctx, &limited, optFns...)
}

func TestTheAuditReadsEveryPageOfEveryScanAndQuery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.rentals["confirmed"]
	w.putEvent(processOf(id), 3, completed(id, "approved")) // something to find on a late page

	direct := w.audit(true)
	paged := &smallPages{DynamoAPI: w.Client, limit: 1}
	source := audit.NewDynamo(paged, w.EventsTable, w.DeadlinesTable, audit.WithScanSegments(3))
	report, err := audit.Run(ctx, source, source, audit.Options{Quiet: true, Concurrency: 2})
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
	// takes n pages, plus at most one empty page.
	if len(paged.queries) < report.Records {
		t.Errorf("%d queries for %d records: the reads did not follow pagination", len(paged.queries), report.Records)
	}
	continuedQueries := 0
	for _, q := range paged.queries {
		if !aws.ToBool(q.ConsistentRead) {
			t.Errorf("a query was not strongly consistent: %+v", q)
		}
		if q.ExclusiveStartKey != nil {
			continuedQueries++
		}
	}
	if continuedQueries == 0 {
		t.Error("no query continued from where the previous page ended")
	}

	var eventScans, pendingScans, continued int
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
		case w.DeadlinesTable:
			pendingScans++
			if !aws.ToBool(s.ConsistentRead) {
				t.Error("the Deadlines table was not scanned strongly consistently")
			}
		}
	}
	// Every item of the Events table is listed, one a page, across the segments.
	if eventScans < report.Records || pendingScans < report.PendingRows || continued == 0 {
		t.Errorf("%d scans of Events for %d items, %d of the Deadlines table for %d rows, %d continued: the scans did not follow pagination",
			eventScans, report.Records, pendingScans, report.PendingRows, continued)
	}
	if len(segments) != 3 {
		t.Errorf("segments scanned %v, want 0, 1 and 2", segments)
	}
}
