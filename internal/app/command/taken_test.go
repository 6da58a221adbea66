package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// takenWorld is the command handler on the real Stripe adapter against
// stripe-mock, behind stripemock.Stateful (PaymentIntents paid whose webhook did not
// come) and stripemock.Refunds in front of it (Stripe's answers to refunds).
func takenWorld(t *testing.T, store eventstore.Store) (*command.Handler, *stripe.Provider, *stripemock.Stateful, *stripemock.Refunds) {
	t.Helper()
	mock := stripemock.Start(t)
	paid := &stripemock.Stateful{Next: http.DefaultTransport}
	refunds := &stripemock.Refunds{Next: paid}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: toldWebhookSecret, APIURL: mock.URL,
		HTTPClient: &http.Client{Transport: refunds}})
	if err != nil {
		t.Fatal(err)
	}
	return command.New(store, command.WithProvider(provider), command.WithCancelRetry(quickRetry)), provider, paid, refunds
}

// TestWhatStripeTookIsWhatIsOwed: at its deadline Stripe says the PaymentIntent
// succeeded for another amount or currency than the 1500 EUR recorded (someone
// with the API key changed it), and then refuses its refund for good (a dispute).
// What is owed is what Stripe took, in its currency: the late success, the
// RefundOwed and the refund made by hand say it, and the amount recorded is
// refused by hand, saying what is owed. On both stores.
func TestWhatStripeTookIsWhatIsOwed(t *testing.T) {
	for i, c := range []struct {
		name     string
		amount   int64
		currency string
		want     payment.Money
	}{
		{"a hundred times more", 150000, "eur", payment.Money{Amount: 150000, Currency: "EUR"}},
		{"another currency", 1500, "usd", payment.Money{Amount: 1500, Currency: "USD"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			storesOf(t, func(t *testing.T, store eventstore.Store) {
				h, _, paid, refunds := takenWorld(t, store)
				ctx := context.Background()
				ref, intent := preparedAtStripe(t, h, "taken"+string(rune('a'+i)))
				paid.Pay(intent, ref, c.amount, c.currency)
				refunds.Play(stripemock.Refusal(400, "invalid_request_error", "charge_disputed", "Charge ch_1 has been charged back; cannot issue a refund."), -1)

				res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{CausationID: "sweep:now"})
				if err != nil || res.State.Status != payment.StatusCancelled || res.State.Refund != payment.RefundStatusOwed || res.State.Charge() != c.want {
					t.Fatalf("the deadline of a payment Stripe took %d %s and will not refund: %+v, %v; want it owed, %v", c.amount, c.currency, res.State, err, c.want)
				}
				late := lastOf[payment.PaymentSucceededAfterCancellation](t, store, ref)
				owed := lastOwed(t, store, ref)
				if late.Amount != c.want.Amount || late.Currency != c.want.Currency || owed.Amount != c.want.Amount || owed.Currency != c.want.Currency ||
					!strings.Contains(owed.Reason, "charge_disputed") {
					t.Fatalf("the late success %+v and RefundOwed %+v; want both for %v, Stripe's reason", late, owed, c.want)
				}
				rentalID, _ := payment.RentalIDFor(ref)
				madeByHandForWhatWasTaken(t, h, store, rentalID, c.want)
			})
		})
	}
}

// TestStripesWebhookForAnotherAmountOnOurPaymentIntentGivesItUp: Stripe's own
// payment_intent.succeeded, signed and read by the adapter, for our PaymentIntent
// but 150000 where 1500 EUR were recorded, arrives while the payment is prepared:
// the mismatch is recorded, the payment is given up (the bike goes back), and
// Stripe refunds the PaymentIntent in full, recorded for what it took. Stripe's
// later charge.refunded, for the charge of 150000, is its word about that money:
// the refund is recorded made. The deadline afterwards asks Stripe nothing.
func TestStripesWebhookForAnotherAmountOnOurPaymentIntentGivesItUp(t *testing.T) {
	store := eventstore.NewMemory()
	h, provider, paid, _ := takenWorld(t, store)
	ctx := context.Background()
	ref, intent := preparedAtStripe(t, h, "hook")
	paid.Pay(intent, ref, 150000, "eur") // what a cancellation or a retrieve would find
	succeeded := stripeEvent(t, provider, toldWebhookSecret, "payment_intent.succeeded.json", func(e, object map[string]any) {
		e["id"] = "evt_more_hook"
		object["id"], object["amount"], object["amount_received"] = intent, 150000, 150000
		object["metadata"] = map[string]any{"reference": ref}
	})
	for delivery := range 2 {
		res, err := h.ApplyProviderEvent(ctx, succeeded)
		if err != nil || res.Mismatch == nil || !slices.Equal(res.Mismatch.Fields, []string{"amount"}) || res.Payment.Status != payment.StatusCancelled ||
			res.Payment.Refund != payment.RefundStatusRequested || res.Payment.Charge() != (payment.Money{Amount: 150000, Currency: "EUR"}) {
			t.Fatalf("delivery %d: %+v, %v; want a mismatch, the payment given up and 150000 EUR refunded", delivery, res, err)
		}
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}) {
		t.Fatalf("recorded %v", got)
	}
	if asked := lastOf[payment.RefundRequested](t, store, ref); asked.Amount != 150000 || asked.Currency != "EUR" {
		t.Errorf("RefundRequested %+v; want 150000 EUR", asked)
	}
	if got := paid.Refunds(); len(got) != 1 || !strings.Contains(got[0], "payment_intent="+intent) || strings.Contains(got[0], "amount=") {
		t.Errorf("refunds asked of Stripe: %q; want one, of %s in full", got, intent)
	}
	refunded := stripeEvent(t, provider, toldWebhookSecret, "charge.refunded.json", func(e, object map[string]any) {
		e["id"] = "evt_more_hook_refunded"
		object["payment_intent"], object["amount"], object["amount_refunded"] = intent, 150000, 150000
		object["metadata"] = map[string]any{"reference": ref}
	})
	if res, err := h.ApplyProviderEvent(ctx, refunded); err != nil || res.Mismatch != nil || res.Payment.Refund != payment.RefundStatusDone {
		t.Fatalf("Stripe's charge.refunded of the 150000 taken: %+v, %v; want it applied, the refund made", res, err)
	}
	if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if cancels, retrieves := paid.Counts(); cancels != 0 || retrieves != 0 {
		t.Errorf("the deadline after the payment was given up asked Stripe %d cancels and %d retrieves; want none", cancels, retrieves)
	}
}

// stripeEvent is the event of a fixture of the Stripe adapter's, changed by
// change, signed with secret and read by p.
func stripeEvent(t *testing.T, p *stripe.Provider, secret, fixture string, change func(e, object map[string]any)) payment.ProviderEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "provider", "stripe", "testdata", "events", fixture))
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	change(e, e["data"].(map[string]any)["object"].(map[string]any))
	body, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now})
	ev, err := p.ParseWebhook(func(string) string { return signed.Header }, body, now)
	if err != nil {
		t.Fatalf("%s: %v", fixture, err)
	}
	return ev
}

// madeByHandForWhatWasTaken holds a refund owed of rentalID's payment, prepared
// for 1500, to what was taken: by hand, the 1500 is refused, saying what is owed,
// where that is another amount, and the amount taken settles it, recorded for
// what was taken.
func madeByHandForWhatWasTaken(t *testing.T, h *command.Handler, store eventstore.Store, rentalID string, taken payment.Money) {
	t.Helper()
	ctx := context.Background()
	if taken.Amount != 1500 {
		_, err := h.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{})
		if !errors.Is(err, payment.ErrRefundAmountNotOwed) || !strings.Contains(err.Error(), taken.String()+" is owed") {
			t.Fatalf("by hand for the amount prepared: %v; want refused, saying %v is owed", err, taken)
		}
	}
	made, err := h.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{Amount: taken.Amount, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{})
	if err != nil || made.Refund != payment.RefundStatusMadeByHand {
		t.Fatalf("by hand for what was taken: %+v, %v", made, err)
	}
	if m := lastOf[payment.RefundMadeByHand](t, store, payment.ReferenceFor(rentalID)); m.Amount != taken.Amount || m.Currency != taken.Currency {
		t.Errorf("RefundMadeByHand %+v; want %v", m, taken)
	}
}
