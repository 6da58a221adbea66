package deadline_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/repair"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

// refundWorld is a world whose provider is Stripe's adapter on stripe-mock behind
// a transport that plays Stripe's answers to refunds, with the stream pollers
// parking what they cannot handle and a sweeper that redelivers it, as the
// functions do. It has a rental whose payment was given up on, and whose money
// Stripe then took: the late success is recorded, with Stripe failing (503) every
// refund until told otherwise.
type refundWorld struct {
	*world
	refunds  *stripemock.Refunds
	provider *stripe.Provider
	sweeper  *sweep.Sweep
	pump     func(what string, cond func() bool)
	ref      string
}

func newRefundWorld(t *testing.T, bike string) *refundWorld {
	t.Helper()
	mock := stripemock.Start(t)
	refunds := &stripemock.Refunds{Next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: "whsec_test_lost", APIURL: mock.URL, HTTPClient: &http.Client{Transport: refunds}})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, 2, command.WithProvider(provider))
	pollers := poisonPollers(t, w, map[string]streambatch.Handler{eventfilter.Process: w.process.Handle, eventfilter.Projector: w.projection.Apply})
	pump := func(what string, cond func() bool) {
		t.Helper()
		until := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(until) {
				t.Fatalf("timed out waiting for %s", what)
			}
			var wg sync.WaitGroup
			for _, p := range pollers {
				wg.Go(func() { p.Poll(ctx) })
			}
			wg.Wait()
		}
	}
	rw := &refundWorld{world: w, refunds: refunds, provider: provider, pump: pump}
	rentalID := w.request(bike)
	rw.ref = payment.ReferenceFor(rentalID)
	pump("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	rw.sweeper = w.sweeper(nil)
	rw.sweeper.Parked.Redeliverer = &repair.Repairer{Store: w.store, Consumers: map[string]repair.Handler{eventfilter.Process: w.process.Handle, eventfilter.Projector: w.projection.Apply}}
	if sum, err := rw.sweeper.Sweep(ctx, time.Now().Add(20*time.Minute)); err != nil || sum.Of(deadlinekinds.Payment).Acted != 1 {
		t.Fatalf("the sweep that gives up: %+v, %v", sum, err)
	}

	refunds.Play(stripemock.Unavailable, -1)
	pay, _, _ := w.commands.LoadPayment(ctx, rw.ref)
	res, err := w.commands.ApplyProviderEvent(ctx, lateSucceeded(t, provider, pay.PaymentID, rw.ref))
	if err == nil || !payment.Temporary(err) {
		t.Fatalf("the late success while Stripe fails its refund: %+v, %v; want a temporary error (the webhook is answered 5xx)", res, err)
	}
	if pay, _, _ := w.commands.LoadPayment(ctx, rw.ref); !pay.RefundDue() {
		t.Fatalf("after the late success: %+v; want its refund due", pay)
	}
	pump("the process's record of the late success parked", func() bool { return len(rw.parked()) == 1 })
	if p := rw.parked()[0]; p.Consumer != eventfilter.Process || p.StreamID != payment.StreamID(rw.ref) {
		t.Fatalf("parked %+v; want the process's record of the payment's late success", p)
	}
	return rw
}

// parked returns the records parked in the world's to-do table.
func (rw *refundWorld) parked() []parked.Record {
	rw.t.Helper()
	backlog, _, err := rw.projection.Backlog(ctx, time.Now())
	if err != nil {
		rw.t.Fatal(err)
	}
	return backlog.Parked
}

// paymentTypes returns the types of the payment's events after its preparation.
func (rw *refundWorld) paymentTypes() []string {
	rw.t.Helper()
	recs, err := rw.store.Read(ctx, payment.StreamID(rw.ref), 0)
	if err != nil {
		rw.t.Fatal(err)
	}
	var out []string
	for _, r := range recs[1:] {
		out = append(out, r.Type)
	}
	return out
}

// TestAStripeRefundThatFailsForAWhileIsMadeByTheSweep: Stripe fails the refund of
// a late success (503, then 429, then no answer at all) for longer than the
// webhook's answer and the stream record's retries in place. The process's record
// is parked, and each sweep that finds it due delivers it again, which asks Stripe
// again under the same idempotency key; once Stripe answers, the refund is made:
// one RefundRequested, no RefundOwed, nothing left parked, and one refund at
// Stripe.
func TestAStripeRefundThatFailsForAWhileIsMadeByTheSweep(t *testing.T) {
	rw := newRefundWorld(t, "refundlater1")
	played, _ := rw.refunds.Counts()
	now := time.Now()
	for i, a := range []stripemock.RefundAnswer{stripemock.Unavailable, stripemock.RateLimited, stripemock.TimedOut} {
		rw.refunds.Play(a, -1)
		sum, err := rw.sweeper.Sweep(ctx, now.Add(time.Duration(i)*parked.BackoffMax))
		if err != nil || sum.Parked.Found != 1 || sum.Parked.Redelivered != 0 || sum.Parked.Left != 1 {
			t.Fatalf("sweep %d while Stripe fails the refund: %+v, %v; want the record tried and left parked", i, sum, err)
		}
	}
	afterFailures, _ := rw.refunds.Counts()
	if asked := afterFailures - played; asked < 3 {
		t.Errorf("the sweeps asked Stripe for the refund %d times while it failed; want at least once a sweep (3)", asked)
	}
	if got := rw.paymentTypes(); slices.Contains(got, "RefundOwed") || slices.Contains(got, "RefundRequested") {
		t.Fatalf("recorded %v while Stripe failed; want the refund still due, nothing owed", got)
	}

	rw.refunds.Play(stripemock.RefundAnswer{}, 0)
	sum, err := rw.sweeper.Sweep(ctx, now.Add(3*parked.BackoffMax))
	if err != nil || sum.Parked.Found != 1 || sum.Parked.Redelivered != 1 || sum.Parked.Left != 0 {
		t.Fatalf("the sweep once Stripe answers: %+v, %v; want the record redelivered", sum, err)
	}
	if got, want := rw.paymentTypes(), []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}; !slices.Equal(got, want) {
		t.Errorf("recorded %v; want %v", got, want)
	}
	if p := rw.parked(); len(p) != 0 {
		t.Errorf("parked %+v after the refund; want none", p)
	}
	if _, made := rw.refunds.Counts(); made != 1 {
		t.Errorf("%d refunds reached stripe-mock; want 1", made)
	}
	for _, k := range rw.refunds.Keys() {
		if k != "refund-"+rw.ref {
			t.Errorf("a refund was asked for under the key %q; want refund-%s every time, so that Stripe makes one", k, rw.ref)
		}
	}
	for range 2 {
		if sum, err := rw.sweeper.Sweep(ctx, now.Add(4*parked.BackoffMax)); err != nil || sum.Parked.Found != 0 || sum.Parked.Redelivered != 0 {
			t.Fatalf("a sweep after the refund: %+v, %v; want nothing parked", sum, err)
		}
	}
	if played, made := rw.refunds.Counts(); played != afterFailures || made != 1 {
		t.Errorf("after the refund Stripe was asked %d more times; want none", played-afterFailures+made-1)
	}
}

// TestAStripeRefundRefusedForGoodAfterAnOutageIsOwed: while Stripe fails, the
// process's record is parked; when Stripe then refuses the refund for good (the
// payment was charged back meanwhile), the sweep's redelivery records the refund
// owed, with Stripe's reason, for operators to make by hand, and the record is no
// longer parked (it is not retried for ever).
func TestAStripeRefundRefusedForGoodAfterAnOutageIsOwed(t *testing.T) {
	rw := newRefundWorld(t, "refundlater2")
	rw.refunds.Play(stripemock.Refusal(http.StatusBadRequest, "invalid_request_error", "charge_disputed", "Charge ch_1 has been charged back; cannot issue a refund."), -1)
	now := time.Now()
	sum, err := rw.sweeper.Sweep(ctx, now)
	if err != nil || sum.Parked.Found != 1 || sum.Parked.Redelivered != 1 {
		t.Fatalf("the sweep once Stripe refuses for good: %+v, %v; want the record redelivered", sum, err)
	}
	if got, want := rw.paymentTypes(), []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundOwed"}; !slices.Equal(got, want) {
		t.Fatalf("recorded %v; want %v", got, want)
	}
	pay, _, _ := rw.commands.LoadPayment(ctx, rw.ref)
	if pay.Refund != payment.RefundStatusOwed {
		t.Errorf("refund %q; want owed", pay.Refund)
	}
	recs, _ := rw.store.Read(ctx, payment.StreamID(rw.ref), 0)
	if last := recs[len(recs)-1]; !strings.Contains(string(last.Data), "charge_disputed") {
		t.Errorf("RefundOwed %s; want Stripe's reason in it", last.Data)
	}
	if p := rw.parked(); len(p) != 0 {
		t.Errorf("parked %+v; want none", p)
	}
	rw.pump("the refund owed reported with its reason", func() bool {
		log := rw.processLog.String()
		return strings.Contains(log, `"msg":"refund owed"`) && strings.Contains(log, "charge_disputed")
	})
	played, _ := rw.refunds.Counts()
	if sum, err := rw.sweeper.Sweep(ctx, now.Add(parked.BackoffMax)); err != nil || sum.Parked.Found != 0 {
		t.Fatalf("a later sweep: %+v, %v", sum, err)
	}
	if now, _ := rw.refunds.Counts(); now != played {
		t.Errorf("Stripe was asked %d more times after the refund was owed; want none", now-played)
	}
}
