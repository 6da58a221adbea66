package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// secretProvider is a provider whose client needs a client secret to pay, as
// Stripe's does, and that cancels what it is asked to.
type secretProvider struct{ generic.Provider }

func (secretProvider) CreatePayment(_ context.Context, reference string, _ int64, _ string) (payment.Created, error) {
	return payment.Created{PaymentID: "pi_" + reference, ClientSecret: "pi_" + reference + "_secret_" + reference}, nil
}

func (secretProvider) CancelPayment(context.Context, string) (payment.CancelOutcome, payment.Told, error) {
	return payment.CancelledAtProvider, payment.Told{}, nil
}

// TestAnEndedPaymentOffersNothingToPayWith: the renter's view of a rental carries
// the payment's client secret while the payment can be paid, to its renter only,
// and no longer once the payment is confirmed, rejected or cancelled.
func TestAnEndedPaymentOffersNothingToPayWith(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil, command.WithProvider(secretProvider{}))
		ctx := context.Background()
		hasSecret := func(rentalID, renter string) bool {
			t.Helper()
			r := h.expect(http.MethodGet, "/rentals/"+rentalID, "", as(renter), http.StatusOK)
			p, _ := r.body["payment"].(map[string]any)
			if p == nil {
				t.Fatalf("the view of %s has no payment: %s", rentalID, r.raw)
			}
			_, ok := p["clientSecret"]
			if ok != strings.Contains(r.raw, "_secret_") {
				t.Fatalf("the secret is somewhere else in the view: %s", r.raw)
			}
			return ok
		}

		open := h.rentBike("cs-open", "renter-open")
		h.prepare(open)
		if !hasSecret(open, "renter-open") {
			t.Errorf("the renter of a prepared payment is not given what pays it")
		}
		if op := h.expect(http.MethodGet, "/rentals/"+open, "", nil, http.StatusOK); strings.Contains(op.raw, "_secret_") {
			t.Errorf("an operator was shown the client secret: %s", op.raw)
		}
		h.expect(http.MethodGet, "/rentals/"+open, "", as("someone-else"), http.StatusNotFound)

		for name, end := range map[string]func(ref string) payment.Command{
			"confirmed": func(ref string) payment.Command { return payment.ConfirmPayment{Reference: ref} },
			"rejected": func(ref string) payment.Command {
				return payment.RejectPayment{Reference: ref, Reason: "card declined"}
			},
			"cancelled": func(ref string) payment.Command { return payment.CancelPayment{Reference: ref} },
		} {
			renter := "renter-" + name
			rentalID := h.rentBike("cs-"+name, renter)
			ref := h.prepare(rentalID)
			if _, err := h.commands.Payment(ctx, end(ref), command.Meta{}); err != nil {
				t.Fatal(err)
			}
			if hasSecret(rentalID, renter) {
				t.Errorf("a %s payment still offers its client secret to its renter", name)
			}
		}
	})
}
