package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// smallPages makes every Scan page hold at most two items, so that a handful of
// events spans many pages, some of them empty after filtering.
type smallPages struct {
	*dynamodb.Client
	scans atomic.Int64
}

func (c *smallPages) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.scans.Add(1)
	in.Limit = aws.Int32(2)
	return c.Client.Scan(ctx, in, o...)
}

// fillStreams appends versions events to each stream, in batches of one and two so
// that both append paths write the table.
func fillStreams(t *testing.T, store eventstore.Store, versions map[string]int) {
	t.Helper()
	for id, n := range versions {
		for v := 0; v < n; {
			batch := min(2, n-v)
			events := make([]eventstore.Event, batch)
			for i := range events {
				events[i] = eventstore.Event{ID: fmt.Sprintf("%s-%d", id, v+i+1), Type: "Happened", Data: []byte(`{}`)}
			}
			if _, err := store.Append(context.Background(), id, int64(v), events...); err != nil {
				t.Fatal(err)
			}
			v += batch
		}
	}
}

func TestStreamIDsReportsEachMatchingStreamOnce(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	pager := &smallPages{Client: client}
	store := dynamo.New(pager, table)
	fillStreams(t, store, map[string]int{
		"payment-rp_a": 1, "payment-rp_b": 3, "payment-rp_c": 5, "payment-rp_d": 2,
		"bike-b1": 4, "rental-payment-x": 2, "paymentless": 1, "xpayment-rp_e": 3,
	})

	cases := []struct {
		name     string
		prefix   string
		segments int
		want     []string
	}{
		{"one segment", "payment-", 1, []string{"payment-rp_a", "payment-rp_b", "payment-rp_c", "payment-rp_d"}},
		{"default segments", "payment-", 0, []string{"payment-rp_a", "payment-rp_b", "payment-rp_c", "payment-rp_d"}},
		{"more segments than streams", "payment-", 16, []string{"payment-rp_a", "payment-rp_b", "payment-rp_c", "payment-rp_d"}},
		{"another prefix", "bike-", 3, []string{"bike-b1"}},
		{"no match", "nothing-", 2, nil},
		{"every stream", "", 4, []string{
			"bike-b1", "payment-rp_a", "payment-rp_b", "payment-rp_c", "payment-rp_d",
			"paymentless", "rental-payment-x", "xpayment-rp_e",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			var inside atomic.Int32
			before := pager.scans.Load()
			err := store.StreamIDs(context.Background(), c.prefix, c.segments, func(id string) error {
				if inside.Add(1) != 1 {
					t.Error("fn called concurrently")
				}
				defer inside.Add(-1)
				got = append(got, id)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want each of %q exactly once", got, c.want)
			}
			// 21 items in pages of two: the scan had to follow pagination.
			if scans := pager.scans.Load() - before; scans < 11 {
				t.Errorf("%d Scan calls: pagination was not followed", scans)
			}
		})
	}
}

func TestStreamIDsStopsAtTheFirstErrorOfFn(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	store := dynamo.New(client, table)
	fillStreams(t, store, map[string]int{"payment-rp_a": 1, "payment-rp_b": 2, "payment-rp_c": 1, "payment-rp_d": 1})

	stop := errors.New("stop")
	calls := 0
	err := store.StreamIDs(context.Background(), "payment-", 2, func(string) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want fn's error", err)
	}
	if calls != 1 {
		t.Errorf("fn called %d times after it failed, want 1 call in all", calls)
	}
}

func TestStreamIDsHonoursCancellation(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	store := dynamo.New(client, table)
	fillStreams(t, store, map[string]int{"payment-rp_a": 1})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := store.StreamIDs(ctx, "payment-", 2, func(string) error {
		t.Error("fn called after cancellation")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestStreamIDsNeedsAClientThatScans(t *testing.T) {
	client, table := emulatortest.EventsTable(t)
	store := dynamo.New(&counting{API: client}, table) // has only the API methods
	err := store.StreamIDs(context.Background(), "payment-", 1, func(string) error { return nil })
	if !errors.Is(err, dynamo.ErrScanUnsupported) {
		t.Fatalf("err = %v, want ErrScanUnsupported", err)
	}
}
