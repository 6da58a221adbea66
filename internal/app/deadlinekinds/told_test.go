package deadlinekinds_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// TestAnOwedCancellationTheProviderLeavesUnansweredBacksOff: the provider is down
// for an hour of sweeps, one a minute. The owed cancellation is asked about far
// fewer than 60 times (the sweep's Backoff, CancellationRetry, counted from when it
// became owed: at once, a minute later, then after waits that double), every
// sweep between finds it still owed (CancellationRowsFound stays 1, sent or
// waiting), each unanswered retry is recorded, and once the provider is back the
// next retry that falls due makes it.
func TestAnOwedCancellationTheProviderLeavesUnansweredBacksOff(t *testing.T) {
	p := &outage{down: true, canceled: map[string]bool{}}
	w := newWorld(t, 2, command.WithProvider(p), command.WithCancelRetry(eventstore.RetryPolicy{MaxAttempts: 1}))
	rentalID := w.request("backoff1")
	ref := payment.ReferenceFor(rentalID)
	w.pumpUntil("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	r := deadlinekinds.Receivers{Retrier: w.commands}
	due := w.giveUp(rentalID, r)
	s := w.sweeper(r)
	asked := p.calls()

	// The sweeps run a minute apart from when the cancellation became owed, as a
	// schedule a minute apart tiles the time: each send time falls in one
	// sweep's minute.
	const sweeps = 60
	sent := 0
	for i := range sweeps {
		sum, err := sweepAt(s, due.Add(time.Duration(i)*every+time.Millisecond))
		k := of(sum, deadlinekinds.Cancellation)
		// Sent or put off, the cancellation is still owed after every sweep, and
		// the metric the still-owed alarm watches says so.
		found := metric(sweepmetrics.Document(sum, "bikerental-test"), "CancellationRowsFound")
		if err != nil || k.Found != 1 || k.Acted != 0 || k.Failed+k.Waiting != 1 || found != 1 {
			t.Fatalf("sweep %d while the provider is down: %+v, %v; want it owed, CancellationRowsFound 1", i, sum, err)
		}
		sent += k.Failed
	}
	calls := p.calls() - asked
	t.Logf("over %d sweeps the provider was asked %d times", sweeps, calls)
	if calls > 8 || calls < 2 || calls != sent {
		t.Errorf("over %d sweeps a minute apart the provider was asked %d times (%d sent); want a handful (backing off), not one a sweep", sweeps, calls, sent)
	}
	pay, _, _ := w.commands.LoadPayment(ctx, ref)
	if pay.CancellationTries != calls {
		t.Errorf("%d unanswered retries recorded, %d made", pay.CancellationTries, calls)
	}
	if owed := w.owed(); len(owed) != 1 || !owed[0].OwedAt.Equal(due) {
		t.Errorf("owed %+v; want it owed since %s, the unanswered retries changing no row", owed, due)
	}

	p.set(false)
	next := due.Add(63 * time.Minute) // 1, 2, 4, 8, 16 and 32 minutes after it became owed
	if sum, err := sweepAt(s, next.Add(-time.Millisecond)); err != nil || of(sum, deadlinekinds.Cancellation).Waiting != 1 {
		t.Fatalf("the sweep just before the next retry: %+v, %v; want it waiting", sum, err)
	}
	if sum, err := sweepAt(s, next.Add(time.Millisecond)); err != nil || of(sum, deadlinekinds.Cancellation).Acted != 1 {
		t.Fatalf("the sweep once the retry is due and the provider back: %+v, %v", sum, err)
	}
	w.pumpUntil("the confirmation projected", func() bool { return len(w.owed()) == 0 })
	if sum, err := sweepAt(s, next.Add(every)); err != nil || of(sum, deadlinekinds.Cancellation).Found != 0 ||
		metric(sweepmetrics.Document(sum, "s"), "CancellationRowsFound") != 0 {
		t.Errorf("a sweep once the provider confirmed: %+v, %v; want nothing owed", sum, err)
	}
	if !p.isCanceled("pi_" + ref) {
		t.Error("the payment is still payable at the provider")
	}
}

// TestALostWebhookNeverCostsAPayingRenterTheBike: Stripe (stripe-mock, behind a
// transport that plays the renter's PaymentIntent as paid) never sends the
// webhook. The payment's deadline asks Stripe to cancel, Stripe refuses and says it
// succeeded, and the rental is approved on that word: the bike is the renter's, no
// client secret is shown, the deadline is not sent again, and the webhook that
// comes at last changes nothing.
func TestALostWebhookNeverCostsAPayingRenterTheBike(t *testing.T) {
	mock := stripemock.Start(t)
	paid := &stripemock.Stateful{Next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: "whsec_test_lost", APIURL: mock.URL, HTTPClient: &http.Client{Transport: paid}})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, 2, command.WithProvider(provider))
	rentalID := w.request("lost1")
	ref := payment.ReferenceFor(rentalID)
	w.pumpUntil("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	pay, _, _ := w.commands.LoadPayment(ctx, ref)
	paid.Pay(pay.PaymentID, ref, 1500, "eur")

	s := w.sweeper(deadlinekinds.Receivers{Retrier: w.commands})
	now := time.Now().Add(20 * time.Minute)
	sum, err := sweepAt(s, now)
	if err != nil || of(sum, deadlinekinds.Payment).Declined != 1 {
		t.Fatalf("the deadline of a payment Stripe took: %+v, %v; want it declined (confirmed meanwhile)", sum, err)
	}
	w.pumpUntil("the rental approved", func() bool { return w.bikeStatus("lost1") == rental.StatusRented })
	view, err := rentalview.Load(ctx, w.store, rentalID)
	if err != nil {
		t.Fatal(err)
	}
	if view.Status != rentalview.StatusApproved || view.Payment == nil || view.Payment.ClientSecret != "" {
		t.Errorf("the renter's view: %+v; want approved, nothing to pay with", view)
	}
	w.pumpUntil("the payment's deadline settled", func() bool { return !w.listed(rentalID) })
	for i := range 3 {
		sum, err := sweepAt(s, now.Add(time.Duration(i+1)*every))
		if err != nil || of(sum, deadlinekinds.Payment).Found != 0 || of(sum, deadlinekinds.Cancellation).Found != 0 {
			t.Fatalf("a sweep after the approval: %+v, %v", sum, err)
		}
	}
	if cancels, retrieves := paid.Counts(); cancels != 1 || retrieves != 1 {
		t.Errorf("Stripe was asked to cancel %d times and read %d times; want once each", cancels, retrieves)
	}
	before, _ := w.store.Read(ctx, payment.StreamID(ref), 0)
	late := lateSucceeded(t, provider, pay.PaymentID, ref)
	res, err := w.commands.ApplyProviderEvent(ctx, late)
	if err != nil || res.Payment.Status != payment.StatusConfirmed || res.Mismatch != nil {
		t.Fatalf("the late webhook: %+v, %v", res, err)
	}
	if after, _ := w.store.Read(ctx, payment.StreamID(ref), 0); len(after) != len(before) {
		t.Errorf("the late webhook changed the payment: %d events, then %d", len(before), len(after))
	}
	if !strings.HasPrefix(before[len(before)-1].CausationID, "provider-payment:stripe:") {
		t.Errorf("the confirmation is caused by %q; want Stripe's word", before[len(before)-1].CausationID)
	}
}

// lateSucceeded is Stripe's payment_intent.succeeded for intent, about ref, signed
// and verified: the webhook that did not come in time.
func lateSucceeded(t *testing.T, p *stripe.Provider, intent, ref string) payment.ProviderEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "provider", "stripe", "testdata", "events", "payment_intent.succeeded.json"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(raw), "rp_01JZ8K3M6Q2W4E5R7T9YAB", ref)
	body = strings.ReplaceAll(body, "pi_3TbC4nLkdIwHu7ix0yXq2aZd", intent)
	now := time.Now()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: "whsec_test_lost", Timestamp: now})
	ev, err := p.ParseWebhook(func(string) string { return signed.Header }, []byte(body), now)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
