package deadlinetable_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestAnOwedCancellationMovesWithTheShards: resharding moves an owed
// cancellation's row to its partition under the new count, where the sweep's
// query finds it, with the time it became owed.
func TestAnOwedCancellationMovesWithTheShards(t *testing.T) {
	ctx := context.Background()
	p := oneTable(t, 16, 1)
	before, after := p[0], p[1]
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var refs []string
	for _, bike := range []string{"a", "b", "c", "d", "e", "f"} {
		ref := payment.ReferenceFor(rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA"))
		data, _ := json.Marshal(payment.CancellationOwedAtProvider{Reference: ref, PaymentID: "pi_1", Attempts: 3})
		rec := eventstore.Record{StreamID: payment.StreamID(ref), Version: 3, Event: eventstore.Event{ID: ref, Type: "CancellationOwedAtProvider", Data: data, RecordedAt: at}}
		if err := before.Apply(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if err := after.Reshard(ctx, rec); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	owed, _, err := after.OwedCancellations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) != len(refs) {
		t.Fatalf("under 1 shard: %+v, want all %d owed cancellations", owed, len(refs))
	}
	for _, o := range owed {
		if !o.OwedAt.Equal(at) {
			t.Errorf("%s owed at %v, want %v", o.Reference, o.OwedAt, at)
		}
	}
	if open, _, err := after.OpenBefore(ctx, time.Now()); err != nil || len(open) != 0 {
		t.Errorf("owed cancellations read as open processes: %+v, %v", open, err)
	}
}
