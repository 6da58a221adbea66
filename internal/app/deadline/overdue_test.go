package deadline_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
)

// countingClient counts the items DynamoDB reads for the projection's queries.
type countingClient struct {
	*dynamodb.Client
	read atomic.Int64
}

func (c *countingClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, optFns...)
	if err == nil {
		c.read.Add(int64(out.ScannedCount))
	}
	return out, err
}

func TestOverdueListsOnlyRowsBeforeTheCutoffOldestFirst(t *testing.T) {
	w := newWorld(t, 4)
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var ids []string
	// Prepared newest first, so that the order of writes tells nothing.
	for i := 19; i >= 0; i-- {
		rentalID := rental.NewRentalID(fmt.Sprint("ob", i), "AAAAAAAAAAAAAAAAAAAAAA")
		ids = append([]string{rentalID}, ids...)
		w.apply(paymenttest.Record(t, payment.PaymentPrepared{Reference: payment.ReferenceFor(rentalID), PaymentID: "p", Amount: 1, Currency: "EUR"}, 1, base.Add(time.Duration(i)*time.Second)))
	}
	settledID := ids[3]
	w.apply(paymenttest.Record(t, payment.PaymentCancelled{Reference: payment.ReferenceFor(settledID), PaymentID: "p"}, 2, base.Add(time.Minute)))

	counting := &countingClient{Client: w.client}
	p, err := deadlinetable.New(counting, w.pending, 4, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	// Rows 0 to 9 were prepared before the cutoff; row 10 at it, which is not before.
	cutoff := base.Add(10 * time.Second)
	want := []string{ids[0], ids[1], ids[2], ids[4], ids[5], ids[6], ids[7], ids[8], ids[9]}

	cases := []struct {
		name     string
		cutoff   time.Time
		limit    int
		want     []string
		maxReads int64
	}{
		{name: "all overdue", cutoff: cutoff, limit: 100, want: want, maxReads: int64(len(want))},
		{name: "the oldest few", cutoff: cutoff, limit: 4, want: want[:4], maxReads: 4 * 4},
		{name: "exactly as many as overdue", cutoff: cutoff, limit: len(want), want: want, maxReads: int64(len(want))},
		{name: "nothing overdue", cutoff: base, limit: 10, want: nil, maxReads: 0},
		{name: "everything outstanding", cutoff: base.Add(time.Hour), limit: 1000, want: append(ids[:3:3], ids[4:]...), maxReads: 19},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counting.read.Store(0)
			rows, err := p.Overdue(ctx, c.cutoff, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, r := range rows {
				got = append(got, r.RentalID)
				if r.Reference != payment.ReferenceFor(r.RentalID) || !r.PreparedAt.Before(c.cutoff) {
					t.Errorf("row %+v: wrong reference, or not prepared before the cutoff %s", r, c.cutoff)
				}
				if i > 0 && r.PreparedAt.Before(rows[i-1].PreparedAt) {
					t.Errorf("rows are not oldest first: %v", rows)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("Overdue = %q, want %q", got, c.want)
			}
			// Through the index with the cutoff in the key condition: never more than
			// the overdue rows, and never more than the limit per shard.
			if n := counting.read.Load(); n > c.maxReads {
				t.Errorf("read %d items, want at most %d", n, c.maxReads)
			}
		})
	}
}

func TestOverdueRefusesBadArgumentsAndReportsFailedQueries(t *testing.T) {
	w := newWorld(t, 2)
	if _, err := w.projection.Overdue(ctx, time.Now(), 0); err == nil {
		t.Error("a limit of 0 was accepted")
	}
	if _, err := w.projection.Overdue(ctx, time.Time{}, 10); err == nil {
		t.Error("a zero cutoff was accepted (it would list every outstanding payment)")
	}
	missing, err := deadlinetable.New(w.client, "no-such-table", 3, deadlinetable.DefaultMarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := missing.Overdue(ctx, time.Now(), 10)
	if err == nil || rows != nil {
		t.Fatalf("Overdue on a missing table = %v, %v; want an error", rows, err)
	}
	for _, shard := range []string{"shard payment#0", "shard payment#1", "shard payment#2"} {
		if !strings.Contains(err.Error(), shard) {
			t.Errorf("error %q does not name %s", err, shard)
		}
	}
}
