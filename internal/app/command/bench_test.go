package command_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// BenchmarkBike measures one bike command, load, decide and append, against the
// in-memory store, so that what is left is the command path's own cost:
//
//	go test -run '^$' -bench . -benchmem ./internal/app/command/
//
// register/new-stream appends the first event of a new stream each time. The
// request-repeated cases send a RequestBike that already took effect to a bike
// with that many events behind it: the command reads, decodes and folds the whole
// stream and appends nothing, which is what a retried request costs.
func BenchmarkBike(b *testing.B) {
	b.Run("register/new-stream", func(b *testing.B) {
		h := command.New(eventstore.NewMemory())
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: "b" + strconv.Itoa(i)}, command.Meta{CausationID: "request:1"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, rentals := range []int{5, 50} {
		h := command.New(eventstore.NewMemory())
		last := bikeWithRentals(b, h, "b1", rentals)
		events := 1 + 2*rentals
		b.Run(fmt.Sprintf("request-repeated/history=%d", events), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := h.Bike(ctx, last, command.Meta{CausationID: "request:2"})
				if err != nil || len(res.Appended) != 0 {
					b.Fatalf("repeated request appended %d events (%v), want none", len(res.Appended), err)
				}
			}
		})
	}
}

// bikeWithRentals registers bikeID and runs rentals requests on it, each rejected,
// and returns the last request.
func bikeWithRentals(b *testing.B, h *command.Handler, bikeID string, rentals int) rental.RequestBike {
	b.Helper()
	if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: bikeID}, command.Meta{}); err != nil {
		b.Fatal(err)
	}
	var req rental.RequestBike
	for i := range rentals {
		req = rental.RequestBike{BikeID: bikeID, Renter: "alice", RentalID: rental.NewRentalID(bikeID, fmt.Sprintf("%022d", i))}
		if _, err := h.Bike(ctx, req, command.Meta{}); err != nil {
			b.Fatal(err)
		}
		reject := rental.RejectRequest{BikeID: bikeID, Renter: req.Renter, RentalID: req.RentalID}
		if _, err := h.Bike(ctx, reject, command.Meta{}); err != nil {
			b.Fatal(err)
		}
	}
	return req
}

// BenchmarkPayment measures one payment command against the in-memory store:
// preparing a new payment, the process's command for every rental, and confirming
// one again, the provider's retried webhook.
func BenchmarkPayment(b *testing.B) {
	b.Run("prepare/new-stream", func(b *testing.B) {
		h := command.New(eventstore.NewMemory(), command.WithProvider(generic.Provider{}))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			ref := payment.ReferenceFor(rental.NewRentalID("b"+strconv.Itoa(i), "AAAAAAAAAAAAAAAAAAAAAA"))
			c := payment.PreparePayment{Reference: ref, PaymentID: "pay_" + ref, Amount: 1500, Currency: "EUR"}
			if _, err := h.Payment(ctx, c, command.Meta{CausationID: "event:1"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("confirm-repeated", func(b *testing.B) {
		h := command.New(eventstore.NewMemory(), command.WithProvider(generic.Provider{}))
		ref := payment.ReferenceFor(rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA"))
		if _, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Payment(ctx, payment.ConfirmPayment{Reference: ref}, command.Meta{}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := h.Payment(ctx, payment.ConfirmPayment{Reference: ref}, command.Meta{CausationID: "request:3"})
			if err != nil || len(res.Appended) != 0 || res.State.Status != payment.StatusConfirmed {
				b.Fatalf("repeated confirm: %+v, %v", res, err)
			}
		}
	})
}
