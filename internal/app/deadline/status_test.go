package deadline_test

import (
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// TestCancelledMeansTheBikeIsFree gives up on a payment and reads the rental after
// every step the stream consumers take: the moment it reads cancelled, another
// renter's request for the bike succeeds, and the history holds the whole story.
func TestCancelledMeansTheBikeIsFree(t *testing.T) {
	w := newWorld(t, 2)
	rentalID := w.request("truth")
	w.pumpUntil("the payment to be prepared", func() bool { return w.listed(rentalID) })
	if outcome, err := w.process.CancelRentalPayment(ctx, rentalID, command.Meta{}); err != nil || outcome != process.OutcomeCancelled {
		t.Fatalf("cancel: %s, %v", outcome, err)
	}
	var seen []rentalview.Status
	w.pumpUntil("the rental to read cancelled", func() bool {
		v, err := rentalview.Load(ctx, w.store, rentalID)
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != v.Status {
			seen = append(seen, v.Status)
		}
		if v.Status != rentalview.StatusCancelled {
			return false
		}
		var types []string
		for _, e := range v.History {
			types = append(types, e.Type)
		}
		for _, want := range []string{"PaymentCancelled", "RequestRejected", rentalpayment.TypeCompleted} {
			if !slices.Contains(types, want) {
				t.Errorf("cancelled, but the history lacks %s: %v", want, types)
			}
		}
		next := rental.RequestBike{BikeID: "truth", Renter: "someone-else", RentalID: rental.NewRentalID("truth", "BBBBBBBBBBBBBBBBBBBBBB")}
		if _, err := w.commands.Bike(ctx, next, command.Meta{}); err != nil {
			t.Errorf("cancelled, but the bike cannot be requested: %v", err)
		}
		return true
	})
	if !slices.Contains(seen, rentalview.StatusCancelling) {
		t.Errorf("statuses seen %v: never cancelling between the cancellation and its end", seen)
	}
}
