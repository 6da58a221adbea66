package deadline_test

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
	"github.com/bikerental/bikerental/internal/app/owed"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
)

// TestAnOwedCancellationTheProviderLeavesUnansweredBacksOff: the provider is down
// for an hour of sweeps, one a minute. The owed cancellation is asked about far
// fewer than 60 times (each unanswered retry, recorded, puts the next one off in
// the to-do table), every sweep between counts it still owed (OwedCancellationsLeft
// stays 1, due or put off), and once the provider is back the next retry that
// falls due makes it.
func TestAnOwedCancellationTheProviderLeavesUnansweredBacksOff(t *testing.T) {
	p := &outage{down: true, canceled: map[string]bool{}}
	w := newWorld(t, 2, command.WithProvider(p), command.WithCancelRetry(eventstore.RetryPolicy{MaxAttempts: 1}))
	rentalID := w.request("backoff1")
	ref := payment.ReferenceFor(rentalID)
	w.pumpUntil("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	s := w.sweeper(nil)
	s.Owed.Retrier = w.commands
	start := time.Now().Add(20 * time.Minute)
	if sum, err := s.Sweep(ctx, start); err != nil || sum.Of(deadlinekinds.Payment).Acted != 1 {
		t.Fatalf("the sweep that gives up: %+v, %v", sum, err)
	}
	owedRow := func() owed.Cancellation {
		rows, _, err := w.projection.OwedCancellations(ctx)
		if err != nil || len(rows) != 1 {
			t.Fatalf("owed rows %+v, %v", rows, err)
		}
		return rows[0]
	}
	w.pumpUntil("the cancellation owed", func() bool {
		rows, _, _ := w.projection.OwedCancellations(ctx)
		return len(rows) == 1
	})
	p.mu.Lock()
	asked := p.asked
	p.mu.Unlock()

	// The sweep's clock runs from now, a minute a sweep, so that the rows' due
	// times (from the events' own times) and the sweeps' agree. The sweep retries
	// the owed cancellation only once it is due again, and counts it owed at
	// every sweep between.
	const sweeps = 60
	now := time.Now()
	for i := range sweeps {
		at := now.Add(time.Duration(i) * time.Minute)
		before := owedRow().Due
		due := 0
		if !before.After(at) {
			due = 1
		}
		sum, err := s.Sweep(ctx, at)
		// Due or put off, the cancellation is still owed after every sweep, and
		// the metric the still-owed alarm watches says so.
		left := sweepmetrics.Document(sum, "bikerental-test")
		if err != nil || sum.Owed.Owed != 1 || sum.Owed.Due != due || sum.Owed.Left != 1 || sum.Owed.Made != 0 || metric(left, "OwedCancellationsLeft") != 1 {
			t.Fatalf("sweep %d while the provider is down (due: %d): %+v, %v; want it owed and left, OwedCancellationsLeft 1", i, due, sum, err)
		}
		if !before.After(at) { // it was tried: wait until the projection puts it off
			w.pumpUntil("the unanswered retry put off", func() bool { return owedRow().Due.After(before) })
		}
	}
	p.mu.Lock()
	calls := p.asked - asked
	p.mu.Unlock()
	t.Logf("over %d sweeps the provider was asked %d times", sweeps, calls)
	if calls > 8 || calls < 2 {
		t.Errorf("over %d sweeps a minute apart the provider was asked %d times; want a handful (backing off), not one a sweep", sweeps, calls)
	}
	pay, _, _ := w.commands.LoadPayment(ctx, ref)
	if pay.CancellationTries != calls {
		t.Errorf("%d unanswered retries recorded, %d made", pay.CancellationTries, calls)
	}

	p.set(false)
	due := owedRow().Due
	if sum, err := s.Sweep(ctx, due.Add(time.Second)); err != nil || sum.Owed.Made != 1 || sum.Owed.Left != 0 {
		t.Fatalf("the sweep once the retry is due and the provider back: %+v, %v", sum, err)
	}
	w.pumpUntil("the confirmation projected", func() bool {
		rows, _, _ := w.projection.OwedCancellations(ctx)
		return len(rows) == 0
	})
	if sum, err := s.Sweep(ctx, due.Add(2*time.Second)); err != nil || sum.Owed.Owed != 0 || metric(sweepmetrics.Document(sum, "s"), "OwedCancellationsLeft") != 0 {
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

	s := w.sweeper(nil)
	now := time.Now().Add(20 * time.Minute)
	sum, err := s.Sweep(ctx, now)
	if err != nil || sum.Of(deadlinekinds.Payment).Declined != 1 {
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
	for range 3 {
		if sum, err := s.Sweep(ctx, now.Add(time.Minute)); err != nil || sum.Of(deadlinekinds.Payment).Found != 0 {
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

// metric returns the value of the metric named name in d, or -1 if d has none.
func metric(d emf.Document, name string) float64 {
	for _, m := range d.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	return -1
}
