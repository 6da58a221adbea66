package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
)

// readTable returns a Table of one shard, through calls, holding invoices due at
// t0 plus 0 to 4 milliseconds, and one settled.
func readTable(t *testing.T) (*dynamo.Table, *counting) {
	t.Helper()
	client, name := newTable(t)
	calls := &counting{API: client}
	tb, err := dynamo.New(calls, name, kinds, dynamo.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	week := 7 * 24 * time.Hour
	for i := range 5 {
		apply(t, tb, rec("InvoiceSent", fmt.Sprintf("inv-%d", i), 1, t0.Add(-week+time.Duration(i)*time.Millisecond)))
	}
	apply(t, tb, rec("InvoiceSent", "inv-paid", 1, t0.Add(-week)), rec("InvoicePaid", "inv-paid", 2, t0))
	return tb, calls
}

// TestRowsAreTheSpansOneQueryEach: for bounds on and between the milliseconds the
// rows are due in, Rows gives exactly the rows the span has, soonest due first,
// with one Query, reading no item it does not give; a span that holds no
// millisecond asks nothing.
func TestRowsAreTheSpansOneQueryEach(t *testing.T) {
	tb, calls := readTable(t)
	ms := func(f float64) time.Time { return t0.Add(time.Duration(f * float64(time.Millisecond))) }
	var bounds []time.Time
	for _, f := range []float64{-1, 0, 0.5, 1, 2.25, 3, 3.999, 4, 5} {
		bounds = append(bounds, ms(f))
	}
	bounds = append(bounds, time.Time{})
	for _, from := range bounds {
		for _, before := range bounds {
			span := deadlines.Span{Kind: invoice, From: from, Before: before}
			var want []string
			for i := range 5 {
				if span.Has(ms(float64(i))) {
					want = append(want, fmt.Sprintf("inv-%d", i))
				}
			}
			queries := calls.queries
			var got []string
			read, err := tb.Rows(context.Background(), span, func(rows []deadlines.Row) bool {
				for _, r := range rows {
					got = append(got, r.Subject)
				}
				return true
			})
			asked := calls.queries - queries
			empty := !from.IsZero() && !before.IsZero() && !from.Before(before)
			if err != nil || !slices.Equal(got, want) || read != len(want) || asked > 1 || (len(want) > 0 && asked != 1) || (empty && asked != 0) {
				t.Errorf("from %v before %v: %v, read %d in %d queries, %v; want %v, read %d in one query (none for an empty span)",
					from.Sub(t0), before.Sub(t0), got, read, asked, err, want, len(want))
			}
		}
	}
}

// TestRowsComeAPageAtATime of span.Page items, and stop when fn says, having read
// no more than they gave.
func TestRowsComeAPageAtATime(t *testing.T) {
	tb, calls := readTable(t)
	var pages [][]string
	read, err := tb.Rows(context.Background(), deadlines.Span{Kind: invoice, Page: 2}, func(rows []deadlines.Row) bool {
		var page []string
		for _, r := range rows {
			page = append(page, fmt.Sprintf("%s@%s", r.Subject, r.Due.Sub(t0)))
		}
		pages = append(pages, page)
		return true
	})
	want := [][]string{{"inv-0@0s", "inv-1@1ms"}, {"inv-2@2ms", "inv-3@3ms"}, {"inv-4@4ms"}}
	if err != nil || read != 5 || !slices.EqualFunc(pages, want, slices.Equal) {
		t.Errorf("pages %v, read %d, %v; want %v, read 5", pages, read, err, want)
	}
	queries := calls.queries
	pages = nil
	read, err = tb.Rows(context.Background(), deadlines.Span{Kind: invoice, Page: 2}, func(rows []deadlines.Row) bool { pages = append(pages, nil); return false })
	if err != nil || read != 2 || len(pages) != 1 || calls.queries-queries != 1 {
		t.Errorf("stopped after the first page: %d pages, read %d in %d queries, %v; want 1, 2 in 1", len(pages), read, calls.queries-queries, err)
	}
}

func TestRowsRefuseAKindOrShardNotTheTables(t *testing.T) {
	tb, calls := readTable(t)
	stranger := deadlines.Kind{Name: "stranger", After: time.Hour, Work: deadlines.Send{}, Changes: deadlines.Events{Opens: []string{"Met"}}}
	for _, span := range []deadlines.Span{{Kind: stranger}, {Kind: invoice, Shard: 1}, {Kind: invoice, Shard: -1}} {
		if _, err := tb.Rows(context.Background(), span, func([]deadlines.Row) bool { return true }); err == nil {
			t.Errorf("Rows(%s, shard %d): no error", span.Kind.Name, span.Shard)
		}
	}
	if calls.queries != 0 {
		t.Errorf("%d queries, want none", calls.queries)
	}
}

// TestRowIsAConsistentReadOfTheKindsOutstandingRow: none for a settled row, one
// never opened, or another kind's row at the key.
func TestRowIsAConsistentReadOfTheKindsOutstandingRow(t *testing.T) {
	client, name := newTable(t)
	reads := &consistent{API: client}
	tb, err := dynamo.New(reads, name, kinds)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, tb, rec("InvoiceSent", "a", 1, t0), rec("InvoiceSent", "b", 1, t0), rec("InvoicePaid", "b", 2, t0),
		rec("InvoiceSent", "c", 1, t0), dueRec("SentToCollection", "c", 2, t0, t0.Add(time.Hour)))
	for _, c := range []struct {
		kind    deadlines.Kind
		subject string
		want    deadlines.Row
		ok      bool
	}{
		{invoice, "a", deadlines.Row{Kind: "invoice", Subject: "a", Due: t0.Add(7 * 24 * time.Hour)}, true},
		{invoice, "b", deadlines.Row{}, false},
		{invoice, "never", deadlines.Row{}, false},
		{invoice, "c", deadlines.Row{}, false},
		{collection, "c", deadlines.Row{Kind: "collection", Subject: "c", Due: t0.Add(time.Hour)}, true},
		{collection, "a", deadlines.Row{}, false},
	} {
		got, ok, err := tb.Row(context.Background(), c.kind, c.subject)
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("Row(%s, %s) = %+v, %v, %v; want %+v, %v", c.kind.Name, c.subject, got, ok, err, c.want, c.ok)
		}
	}
	if reads.inconsistent != 0 || reads.reads != 6 {
		t.Errorf("%d reads, %d not strongly consistent; want 6, all consistent", reads.reads, reads.inconsistent)
	}
}

// consistent is an API that counts the GetItems it passes on, and those that are
// not strongly consistent.
type consistent struct {
	dynamo.API
	reads, inconsistent int
}

func (c *consistent) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.reads++
	if in.ConsistentRead == nil || !*in.ConsistentRead {
		c.inconsistent++
	}
	return c.API.GetItem(ctx, in, o...)
}
