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
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

const toldWebhookSecret = "whsec_test_told"

// lateWebhook is Stripe's payment_intent.succeeded for intent, about ref, under
// event id id, signed: the webhook that did not come in time.
func lateWebhook(t *testing.T, p *stripe.Provider, id, ref, intent string) payment.ProviderEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "provider", "stripe", "testdata", "events", "payment_intent.succeeded.json"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(raw), "rp_01JZ8K3M6Q2W4E5R7T9YAB", ref)
	body = strings.ReplaceAll(body, "pi_3TbC4nLkdIwHu7ix0yXq2aZd", intent)
	var event map[string]any
	if err := json.Unmarshal([]byte(body), &event); err != nil {
		t.Fatal(err)
	}
	event["id"] = id
	out, _ := json.Marshal(event)
	now := time.Now()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: out, Secret: toldWebhookSecret, Timestamp: now})
	ev, err := p.ParseWebhook(func(string) string { return signed.Header }, out, now)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// toldWorld is the command handler on the real Stripe adapter against
// stripe-mock, behind stripemock.Stateful.
func toldWorld(t *testing.T) (*command.Handler, *stripe.Provider, *stripemock.Stateful, eventstore.Store) {
	t.Helper()
	mock := stripemock.Start(t)
	paid := &stripemock.Stateful{Next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: toldWebhookSecret, APIURL: mock.URL,
		HTTPClient: &http.Client{Transport: paid}})
	if err != nil {
		t.Fatal(err)
	}
	store := eventstore.NewMemory()
	return command.New(store, command.WithProvider(provider), command.WithCancelRetry(quickRetry)), provider, paid, store
}

// preparedAtStripe prepares a payment of 1500 EUR at Stripe (stripe-mock) and
// returns its reference and PaymentIntent id.
func preparedAtStripe(t *testing.T, h *command.Handler, bike string) (string, string) {
	t.Helper()
	ref := payment.ReferenceFor(bike + "_AAAAAAAAAAAAAAAAAAAAAA")
	res, err := h.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "set-by-the-provider", Amount: 1500, Currency: "EUR"}, command.Meta{})
	if err != nil || !strings.HasPrefix(res.State.PaymentID, "pi_") {
		t.Fatalf("prepared at Stripe: %+v, %v", res.State, err)
	}
	return ref, res.State.PaymentID
}

// causes returns the causation ids of a payment's stream after PaymentPrepared.
func causes(t *testing.T, store eventstore.Store, ref string) []string {
	t.Helper()
	recs, err := store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs[1:] {
		out = append(out, r.CausationID)
	}
	return out
}

// TestAPaymentStripeSaysSucceededIsConfirmedAtItsDeadline: the renter paid, the
// webhook never came, and the payment's deadline asks Stripe to cancel it. Stripe
// refuses (the PaymentIntent succeeded) and says what it holds: the payment is
// confirmed on Stripe's word, once, caused by it, whatever is sent again, and the
// webhook that comes at last changes nothing.
func TestAPaymentStripeSaysSucceededIsConfirmedAtItsDeadline(t *testing.T) {
	h, provider, paid, store := toldWorld(t)
	ctx := context.Background()
	ref, intent := preparedAtStripe(t, h, "t1")
	paid.Pay(intent, ref, 1500, "eur")

	res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{CausationID: "sweep:now"})
	if !errors.Is(err, payment.ErrPaymentAlreadyConfirmed) || res.State.Status != payment.StatusConfirmed || res.State.Payable() {
		t.Fatalf("the deadline of a payment Stripe took: %+v, %v; want it confirmed, the cancellation declined", res.State, err)
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentConfirmed"}) {
		t.Fatalf("recorded %v; want PaymentConfirmed", got)
	}
	if got, want := causes(t, store, ref), command.ToldCausationID(stripe.Name, intent); !slices.Equal(got, []string{want}) {
		t.Errorf("the confirmation is caused by %v; want Stripe's word, %s", got, want)
	}
	if cancels, retrieves := paid.Counts(); cancels != 1 || retrieves != 1 {
		t.Errorf("Stripe was asked to cancel %d times and read %d times; want once each (the read the cancellation makes is the one recorded)", cancels, retrieves)
	}

	// The same deadline again, and two at once: nothing more is recorded, and a
	// confirmed payment is not sent to Stripe again.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); !errors.Is(err, payment.ErrPaymentAlreadyConfirmed) {
				t.Errorf("the deadline sent again: %v; want declined", err)
			}
		})
	}
	wg.Wait()
	if cancels, _ := paid.Counts(); cancels != 1 {
		t.Errorf("Stripe was asked to cancel %d times; want once", cancels)
	}

	// The lost webhook, at last: acknowledged, and nothing changes.
	late, err := h.ApplyProviderEvent(ctx, lateWebhook(t, provider, "evt_late_t1", ref, intent))
	if err != nil || late.Mismatch != nil || late.Payment.Status != payment.StatusConfirmed {
		t.Fatalf("the late webhook: %+v, %v; want acknowledged, the payment confirmed", late, err)
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentConfirmed"}) {
		t.Errorf("after the late webhook the payment holds %v; want PaymentConfirmed alone", got)
	}
}

// TestTwoDeadlinesAtOnceConfirmOnce: two sweeps give up on the same paid payment
// at once; both are told it succeeded, and one confirmation is recorded.
func TestTwoDeadlinesAtOnceConfirmOnce(t *testing.T) {
	h, _, paid, store := toldWorld(t)
	ctx := context.Background()
	ref, intent := preparedAtStripe(t, h, "t2")
	paid.Pay(intent, ref, 1500, "eur")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); !errors.Is(err, payment.ErrPaymentAlreadyConfirmed) {
				t.Errorf("a deadline: %v; want declined", err)
			}
		})
	}
	wg.Wait()
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentConfirmed"}) {
		t.Errorf("recorded %v; want one PaymentConfirmed", got)
	}
}

// TestASuccessForAnotherAmountIsGivenUpAndRefunded: Stripe says the PaymentIntent
// succeeded, for 1 cent where 1500 were recorded. It is recorded as a mismatch
// operators see; the rental gives it up (the bike goes back) and the money goes
// back on the PaymentIntent; nothing is confirmed.
func TestASuccessForAnotherAmountIsGivenUpAndRefunded(t *testing.T) {
	h, _, paid, store := toldWorld(t)
	ctx := context.Background()
	ref, intent := preparedAtStripe(t, h, "t3")
	paid.Pay(intent, ref, 1, "eur")

	res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || res.State.Status != payment.StatusCancelled || !res.State.LateSuccess || res.State.Refund != payment.RefundStatusRequested {
		t.Fatalf("the deadline of a payment Stripe took for another amount: %+v, %v; want cancelled, refunded", res.State, err)
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}) {
		t.Errorf("recorded %v", got)
	}
	found, err := command.FindReceipts(ctx, store, stripe.Name, command.ToldEventPrefix+intent, ref)
	if err != nil || len(found) != 1 || found[0].Type != "ProviderEventMismatched" {
		t.Fatalf("Stripe's word is kept as %+v, %v; want one ProviderEventMismatched", found, err)
	}
	refunds := paid.Refunds()
	if len(refunds) != 1 || !strings.Contains(refunds[0], "payment_intent="+intent) {
		t.Errorf("refunds asked of Stripe: %q; want one, of %s", refunds, intent)
	}
	// Again: the receipt answers, nothing more is recorded or refunded.
	if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if got := types(t, store, ref); len(got) != 3 {
		t.Errorf("after the deadline again: %v", got)
	}
}

// TestASuccessAfterTheRentalGaveUpIsRefunded: the cancellation was owed (Stripe did
// not answer), the bike went back, and when the sweep makes it Stripe says the
// renter had paid: a late success, refunded, caused by Stripe's word.
func TestASuccessAfterTheRentalGaveUpIsRefunded(t *testing.T) {
	mock := stripemock.Start(t)
	outage := &unavailable{next: http.DefaultTransport, failures: -1}
	paid := &stripemock.Stateful{Next: outage}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: toldWebhookSecret, APIURL: mock.URL, HTTPClient: &http.Client{Transport: paid}})
	if err != nil {
		t.Fatal(err)
	}
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(provider), command.WithCancelRetry(quickRetry))
	ctx := context.Background()
	ref, intent := preparedAtStripe(t, h, "t4")
	if res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil || !res.State.CancellationDue() {
		t.Fatalf("cancelled while Stripe is down: %+v, %v", res.State, err)
	}
	outage.set(0)
	paid.Pay(intent, ref, 1500, "eur")
	owed, err := h.RetryCancellation(ctx, ref, command.Meta{CausationID: "sweep:now"})
	if owed || err != nil {
		t.Fatalf("the owed cancellation, Stripe saying it succeeded: owed %v, %v", owed, err)
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "CancellationOwedAtProvider", "PaymentSucceededAfterCancellation", "RefundRequested"}) {
		t.Errorf("recorded %v", got)
	}
	if got := causes(t, store, ref); got[2] != command.ToldCausationID(stripe.Name, intent) {
		t.Errorf("the late success is caused by %q; want Stripe's word", got[2])
	}
}

// TestTheGenericProviderCannotBeAsked: the generic provider only calls back: it
// says nothing of a payment it is asked to cancel, and a payment's deadline cancels
// it as before.
func TestTheGenericProviderCannotBeAsked(t *testing.T) {
	var p command.PaymentProvider = generic.Provider{}
	if outcome, told, err := p.CancelPayment(context.Background(), "pay_x"); outcome != payment.CancelNotSupported || told != (payment.Told{}) || err != nil {
		t.Fatalf("the generic provider's cancellation: %q, %+v, %v; want %q and nothing said", outcome, told, err, payment.CancelNotSupported)
	}
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(p))
	ref := preparedFor(t, h, "t5")
	res, err := h.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || res.State.Status != payment.StatusCancelled || res.State.CancellationDue() {
		t.Fatalf("the deadline with the generic provider: %+v, %v; want cancelled, nothing owed", res.State, err)
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled"}) {
		t.Errorf("recorded %v", got)
	}
}

// TestAWebhookCannotTakeTheIdOfWhatTheProviderSaidWhenAsked: a webhook event whose
// id has the form of the service's own record of the provider's word (told:…) is
// refused as malformed and records nothing, whatever its adapter let through, so
// that it cannot take that record's receipt first: the deadline then records
// Stripe's word as ever.
func TestAWebhookCannotTakeTheIdOfWhatTheProviderSaidWhenAsked(t *testing.T) {
	h, _, paid, store := toldWorld(t)
	ctx := context.Background()
	ref, intent := preparedAtStripe(t, h, "t5")
	paid.Pay(intent, ref, 1500, "eur")

	forged := payment.ProviderEvent{Provider: stripe.Name, EventID: command.ToldEventPrefix + intent, Kind: payment.ProviderFailed,
		Reference: ref, PaymentID: intent, Amount: 1500, Currency: "EUR", Reason: "card_declined"}
	forged.Digest = payment.EffectDigest(forged, payment.ProviderObject{Type: "payment_intent", ObjectID: intent, Status: "requires_payment_method"})
	if _, err := h.ApplyProviderEvent(ctx, forged); !errors.Is(err, payment.ErrWebhookMalformed) {
		t.Fatalf("a webhook event named %s: %v; want %v", forged.EventID, err, payment.ErrWebhookMalformed)
	}
	if got := types(t, store, ref); len(got) != 0 {
		t.Fatalf("the refused event recorded %v", got)
	}
	res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{CausationID: "sweep:now"})
	if !errors.Is(err, payment.ErrPaymentAlreadyConfirmed) || res.State.Status != payment.StatusConfirmed {
		t.Fatalf("the deadline after the forged event: %+v, %v; want the payment confirmed on Stripe's word", res.State, err)
	}
}
