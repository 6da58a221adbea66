package deadlinekinds_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// refundWorld is a world whose provider is Stripe's adapter on stripe-mock behind
// a transport that plays Stripe's answers to refunds, with the stream pollers
// parking what they cannot handle and a sweeper that redelivers it, as the
// functions do. It has a rental whose payment was given up on, and whose money
// Stripe then took: the late success is recorded, with Stripe failing (503) every
// refund until told otherwise, and the process's record of it is parked since
// parkedAt.
type refundWorld struct {
	*world
	refunds  *stripemock.Refunds
	provider *stripe.Provider
	sweeper  *deadlines.Sweeper
	pumpAll  func(what string, cond func() bool)
	ref      string
	parkedAt time.Time
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
	pollers := w.parkingPollers(w.process.Handle)
	rw := &refundWorld{world: w, refunds: refunds, provider: provider,
		pumpAll: func(what string, cond func() bool) { t.Helper(); pump(t, pollers, 30*time.Second, what, cond) }}
	rentalID := w.request(bike)
	rw.ref = payment.ReferenceFor(rentalID)
	rw.pumpAll("the payment prepared and projected", func() bool { return w.listed(rentalID) })
	rw.sweeper = w.sweeper(deadlinekinds.Receivers{Retrier: w.commands, Redeliverer: w.redeliverer(w.repairer(w.process.Handle))})
	if sum, err := sweepAt(rw.sweeper, time.Now().Add(20*time.Minute)); err != nil || of(sum, deadlinekinds.Payment).Acted != 1 {
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
	rw.pumpAll("the process's record of the late success parked", func() bool { return len(w.parked()) == 1 })
	p := w.parked()[0]
	if p.Consumer != eventfilter.Process || p.StreamID != payment.StreamID(rw.ref) {
		t.Fatalf("parked %+v; want the process's record of the payment's late success", p)
	}
	rw.parkedAt = p.Due
	return rw
}

// sweepMinute sweeps at the i-th minute since the record was parked, as sweeps a
// minute apart do.
func (rw *refundWorld) sweepMinute(i int) deadlines.KindSummary {
	rw.t.Helper()
	sum, err := sweepAt(rw.sweeper, rw.parkedAt.Add(time.Duration(i)*every+time.Millisecond))
	if err != nil {
		rw.t.Fatal(err)
	}
	return of(sum, deadlinekinds.Redelivery)
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
// is parked, and each sweep at one of its send times delivers it again, which asks
// Stripe again under the same idempotency key; once Stripe answers, the refund is
// made: one RefundRequested, no RefundOwed, nothing left parked, and one refund at
// Stripe.
func TestAStripeRefundThatFailsForAWhileIsMadeByTheSweep(t *testing.T) {
	rw := newRefundWorld(t, "refundlater1")
	played, _ := rw.refunds.Counts()
	// Its send times: when it was parked, a minute later, three minutes later.
	for _, c := range []struct {
		minute int
		answer stripemock.RefundAnswer
	}{{0, stripemock.Unavailable}, {1, stripemock.RateLimited}, {3, stripemock.TimedOut}} {
		rw.refunds.Play(c.answer, -1)
		if k := rw.sweepMinute(c.minute); k.Found != 1 || k.Failed != 1 || k.Acted != 0 {
			t.Fatalf("the sweep %d minutes on while Stripe fails the refund: %+v; want the record tried and left parked", c.minute, k)
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
	if k := rw.sweepMinute(7); k.Found != 1 || k.Acted != 1 || k.Failed != 0 {
		t.Fatalf("the sweep once Stripe answers: %+v; want the record redelivered", k)
	}
	if got, want := rw.paymentTypes(), []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}; !slices.Equal(got, want) {
		t.Errorf("recorded %v; want %v", got, want)
	}
	rw.pumpAll("nothing parked after the refund", func() bool { return len(rw.parked()) == 0 })
	if _, made := rw.refunds.Counts(); made != 1 {
		t.Errorf("%d refunds reached stripe-mock; want 1", made)
	}
	for _, k := range rw.refunds.Keys() {
		if k != "refund-"+rw.ref {
			t.Errorf("a refund was asked for under the key %q; want refund-%s every time, so that Stripe makes one", k, rw.ref)
		}
	}
	for _, i := range []int{12, 17} {
		if k := rw.sweepMinute(i); k.Found != 0 || k.Acted != 0 {
			t.Fatalf("a sweep after the refund: %+v; want nothing parked", k)
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
	if k := rw.sweepMinute(0); k.Found != 1 || k.Acted != 1 {
		t.Fatalf("the sweep once Stripe refuses for good: %+v; want the record redelivered", k)
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
	rw.pumpAll("nothing parked, and the refund owed reported with its reason", func() bool {
		log := rw.processLog.String()
		return len(rw.parked()) == 0 && strings.Contains(log, `"msg":"refund owed"`) && strings.Contains(log, "charge_disputed")
	})
	played, _ := rw.refunds.Counts()
	if k := rw.sweepMinute(1); k.Found != 0 {
		t.Fatalf("a later sweep: %+v", k)
	}
	if now, _ := rw.refunds.Counts(); now != played {
		t.Errorf("Stripe was asked %d more times after the refund was owed; want none", now-played)
	}
}
