package command_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// named is intents under a provider's name, as the adapters name themselves.
type named struct {
	*intents
	name string
}

func (n named) Name() string { return n.name }

// TestAnUnexpectedPaymentIsRefundedThroughTheBound: the refund of money taken on
// another provider payment goes through the handler's bounded provider, on that
// payment.
func TestAnUnexpectedPaymentIsRefundedThroughTheBound(t *testing.T) {
	p := newIntents()
	h := command.New(eventstore.NewMemory(), command.WithProvider(p), command.WithProviderTimeout(time.Second))
	ref, _ := prepared(t, h, "bound1")
	res, err := h.ApplyProviderEvent(context.Background(), payment.ProviderEvent{Provider: "stripe", EventID: "evt_b1", Kind: payment.ProviderSucceeded,
		Reference: ref, PaymentID: "pi_other", Amount: 1500, Currency: "EUR", Digest: "d1"})

	if err != nil || res.Mismatch == nil || !slices.Contains(p.called(), "refund-unexpected pi_other") {
		t.Fatalf("mismatch %+v, %v; provider calls %v: want the other payment refunded", res.Mismatch, err, p.called())
	}
}

// TestAnotherProvidersEventChangesNothing: with Stripe configured, an authentic
// event of the generic provider (signed with its secret) names a payment but is not
// the word of the provider that holds it: it confirms nothing, is recorded as a
// mismatch, and refunds nothing anywhere.
func TestAnotherProvidersEventChangesNothing(t *testing.T) {
	p := named{newIntents(), stripe.Name}
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(p), command.WithProviderTimeout(time.Second))
	ref, ours := prepared(t, h, "other1")
	res, err := h.ApplyProviderEvent(context.Background(), payment.ProviderEvent{Provider: generic.Name, EventID: "evt_g1", Kind: payment.ProviderSucceeded,
		Reference: ref, PaymentID: "pay_forged", Digest: "g1"})

	if err != nil || res.Payment.Status != payment.StatusPrepared || res.Mismatch == nil || !slices.Contains(res.Mismatch.Fields, "provider") || res.Mismatch.RefundDue {
		t.Fatalf("after a generic event on a Stripe payment (%s): %+v mismatch %+v, %v", ours, res.Payment, res.Mismatch, err)
	}
	if calls := p.called(); len(calls) != 0 {
		t.Errorf("the provider was called: %v", calls)
	}
	if got := streamTypes(t, store, payment.StreamID(ref)); !slices.Equal(got, []string{"PaymentPrepared"}) {
		t.Errorf("payment stream %v, want it untouched", got)
	}
}

// hanging never answers a cancellation: only the bound ends it.
type hanging struct{ *holder }

func (hanging) CancelPayment(ctx context.Context, _ string) (payment.CancelOutcome, payment.Told, error) {
	<-ctx.Done()
	return payment.ProviderCannotSay, payment.Told{}, context.Cause(ctx)
}

// TestACancellationFitsItsBudgetWithAProviderThatHangs: a retry is started only if
// its whole bounded call fits before the invocation's end, less the margin for
// recording. With one call's bound (3s) fitting the budget (6s) once but not twice,
// the cancellation is recorded as owed after the first, instead of a second call
// running into the deadline with nothing recorded.
func TestACancellationFitsItsBudgetWithAProviderThatHangs(t *testing.T) {
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(hanging{newHolder(false)}), command.WithProviderTimeout(3*time.Second),
		command.WithCancelRetry(eventstore.RetryPolicy{MaxAttempts: 3, BaseDelay: 50 * time.Millisecond, MaxDelay: 100 * time.Millisecond}))
	ref := preparedFor(t, h, "hang1")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || res.State.Status != payment.StatusCancelled || !res.State.CancellationDue() {
		t.Fatalf("cancel = %+v, %v; want cancelled, the cancellation owed, within the budget (stream %v)", res.State, err, types(t, store, ref))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the command used its whole budget")
	}
}
