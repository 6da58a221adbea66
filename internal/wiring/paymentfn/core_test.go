package paymentfn_test

import (
	"context"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// TestCommandsPickTheGenericProvider: the handler wiring builds prepares payments
// with the generic provider when it is given none, and with the one it is given.
func TestCommandsPickTheGenericProvider(t *testing.T) {
	ctx := context.Background()
	ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
	prepare := payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}
	res, err := paymentfn.Commands(eventstore.NewMemory()).Payment(ctx, prepare, command.Meta{})
	if err != nil {
		t.Fatalf("prepare with the default provider: %v", err)
	}
	if want, _ := (generic.Provider{}).CreatePayment(ctx, ref, 1500, "EUR"); res.State.PaymentID != want.PaymentID {
		t.Errorf("payment id %q, want the generic provider's %q", res.State.PaymentID, want.PaymentID)
	}
	var asked bool
	picked := command.WithProvider(providerFunc{asked: func() { asked = true }})
	if _, err := paymentfn.Commands(eventstore.NewMemory(), picked).Payment(ctx, prepare, command.Meta{}); err != nil || !asked {
		t.Errorf("prepare with the provider given: err = %v, provider asked: %v", err, asked)
	}
}

// providerFunc is the generic provider that calls asked on every payment it creates.
type providerFunc struct {
	generic.Provider
	asked func()
}

func (f providerFunc) CreatePayment(ctx context.Context, reference string, amount int64, currency string) (payment.Created, error) {
	f.asked()
	return f.Provider.CreatePayment(ctx, reference, amount, currency)
}
