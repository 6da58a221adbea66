package command_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// stripeRefunds is a command handler on a memory store whose provider is Stripe's
// adapter on stripe-mock, behind a transport that plays Stripe's answers to
// refunds.
func stripeRefunds(t *testing.T) (*command.Handler, eventstore.Store, *stripemock.Refunds) {
	t.Helper()
	store := eventstore.NewMemory()
	h, _, refunds := stripeRefundsOn(t, store)
	return h, store, refunds
}

// refundsWebhookSecret is the webhook secret of stripeRefundsOn's provider.
const refundsWebhookSecret = "whsec_test_refunds"

// stripeRefundsOn is stripeRefunds on store, with the provider, whose webhooks
// are signed with refundsWebhookSecret.
func stripeRefundsOn(t *testing.T, store eventstore.Store) (*command.Handler, *stripe.Provider, *stripemock.Refunds) {
	t.Helper()
	mock := stripemock.Start(t)
	refunds := &stripemock.Refunds{Next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: refundsWebhookSecret, APIURL: mock.URL,
		HTTPClient: &http.Client{Transport: refunds}})
	if err != nil {
		t.Fatal(err)
	}
	return command.New(store, command.WithProvider(provider), command.WithCancelRetry(quickRetry)), provider, refunds
}

// lateSuccessFor prepares the payment of bike's rental at Stripe, cancels it, and
// records the success that arrives afterwards: its refund is due.
func lateSuccessFor(t *testing.T, h *command.Handler, bike string) string {
	t.Helper()
	ref := preparedFor(t, h, bike)
	ctx := context.Background()
	if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Payment(ctx, payment.ConfirmPayment{Reference: ref}, command.Meta{})
	if err != nil || !res.State.RefundDue() {
		t.Fatalf("the late success: %+v, %v; want a refund due", res.State, err)
	}
	return ref
}

// TestAStripeRefundThatFailsForAWhileStaysDue: while Stripe fails (5xx), is busy
// (429) or does not answer (timeouts), a refund records nothing and returns an
// error that says trying again may succeed, so that its caller asks again (the
// webhook's redelivery, the process's parked record); once Stripe answers, the
// same refund, under the same idempotency key, is made and recorded once.
func TestAStripeRefundThatFailsForAWhileStaysDue(t *testing.T) {
	h, store, refunds := stripeRefunds(t)
	ctx := context.Background()
	for i, c := range []struct {
		name   string
		answer stripemock.RefundAnswer
	}{
		{"unavailable", stripemock.Unavailable},
		{"rate limited", stripemock.RateLimited},
		{"timed out", stripemock.TimedOut},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := lateSuccessFor(t, h, "tmp"+string(rune('a'+i)))
			refunds.Play(c.answer, -1)
			for range 2 {
				s, err := h.Refund(ctx, ref, command.Meta{})
				if err == nil || !payment.Temporary(err) || !s.RefundDue() || strings.Contains(err.Error(), stripemock.SecretKey) {
					t.Fatalf("a refund while Stripe is %s: %+v, %v; want a temporary error, the refund still due", c.name, s, err)
				}
			}
			if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation"}) {
				t.Fatalf("recorded %v while Stripe was %s; want nothing more", got, c.name)
			}
			refunds.Play(stripemock.RefundAnswer{}, 0)
			s, err := h.Refund(ctx, ref, command.Meta{})
			if err != nil || s.Refund != payment.RefundStatusRequested {
				t.Fatalf("the refund once Stripe answers: %+v, %v", s, err)
			}
			if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}) {
				t.Errorf("recorded %v; want one RefundRequested", got)
			}
			for _, k := range refunds.Keys() {
				if strings.Contains(k, ref) && k != "refund-"+ref {
					t.Errorf("a refund of %s was asked for under the key %q", ref, k)
				}
			}
		})
	}
}

// TestARefundStripeRefusesForGoodIsOwed: a refund Stripe refuses in a way no retry
// changes (a disputed payment, one it cannot refund, a Refund that failed at the
// bank) is recorded as owed, with Stripe's reason, for operators to make by hand;
// it is not asked for again.
func TestARefundStripeRefusesForGoodIsOwed(t *testing.T) {
	h, store, refunds := stripeRefunds(t)
	ctx := context.Background()
	failed := stripemock.RefundAnswer{Status: http.StatusOK,
		Body: `{"id":"re_failed1","object":"refund","status":"failed","failure_reason":"expired_or_canceled_card","amount":1500,"currency":"eur"}`}
	for i, c := range []struct {
		name, reason string
		answer       stripemock.RefundAnswer
	}{
		{"charged back", "charge_disputed", stripemock.Refusal(400, "invalid_request_error", "charge_disputed", "Charge ch_1 has been charged back; cannot issue a refund.")},
		{"disputed", "refund_disputed_payment", stripemock.Refusal(400, "invalid_request_error", "refund_disputed_payment", "You cannot refund a disputed payment.")},
		{"not refundable", "charge_not_refundable", stripemock.Refusal(400, "invalid_request_error", "charge_not_refundable", "This charge cannot be refunded.")},
		{"amount too large", "amount_too_large", stripemock.Refusal(400, "invalid_request_error", "amount_too_large", "Refund amount is greater than unrefunded amount on charge.")},
		{"no successful charge", "payment_intent_unexpected_state", stripemock.Refusal(400, "invalid_request_error", "payment_intent_unexpected_state", "This PaymentIntent does not have a successful charge to refund.")},
		{"failed at the bank", "re_failed1 is failed (expired_or_canceled_card)", failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := lateSuccessFor(t, h, "refused"+string(rune('a'+i)))
			refunds.Play(c.answer, -1)
			played, _ := refunds.Counts()
			s, err := h.Refund(ctx, ref, command.Meta{})
			if err != nil || s.Refund != payment.RefundStatusOwed {
				t.Fatalf("a refund Stripe refuses (%s): %+v, %v; want it owed", c.name, s, err)
			}
			owed := lastOwed(t, store, ref)
			if !strings.Contains(owed.Reason, c.reason) || owed.Amount != 1500 || owed.Currency != "EUR" {
				t.Errorf("RefundOwed %+v; want 1500 EUR, the reason naming %q", owed, c.reason)
			}
			if s, err := h.Refund(ctx, ref, command.Meta{}); err != nil || s.Refund != payment.RefundStatusOwed {
				t.Fatalf("the refund asked for again: %+v, %v", s, err)
			}
			if now, _ := refunds.Counts(); now != played+1 {
				t.Errorf("Stripe was asked %d times; want once: a refund owed is not asked for again", now-played)
			}
			if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundOwed"}) {
				t.Errorf("recorded %v; want one RefundOwed", got)
			}
		})
	}
}

// TestARefundStripeSaysIsMadeAlreadyIsRecordedDone: Stripe answers
// charge_already_refunded when the payment was refunded in full already (our own
// refund, asked again after Stripe forgot its idempotency key, or one made at
// Stripe by hand). The money went back: that is recorded as Stripe's word
// (PaymentRefunded), not as a refund owed.
func TestARefundStripeSaysIsMadeAlreadyIsRecordedDone(t *testing.T) {
	h, store, refunds := stripeRefunds(t)
	ref := lateSuccessFor(t, h, "already")
	refunds.Play(stripemock.Refusal(400, "invalid_request_error", "charge_already_refunded", "Charge ch_1 has already been refunded."), -1)
	s, err := h.Refund(context.Background(), ref, command.Meta{})
	if err != nil || s.Refund != payment.RefundStatusDone || !s.Refunded() {
		t.Fatalf("a refund Stripe says is made already: %+v, %v; want it refunded", s, err)
	}
	if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "PaymentRefunded"}) {
		t.Errorf("recorded %v; want PaymentRefunded, nothing owed", got)
	}
}

// TestARefundStripeRefusesForAnOperatorToFixIsNeverOwed: a refusal that an
// operator removes at Stripe (a key revoked or without the right to refund, a key
// of another account, a balance too low) or a defect of ours (a parameter Stripe
// does not take, a key reused) never becomes money owed by hand: the refund stays
// due, nothing is recorded, the error says what Stripe said (without the key), and
// once the cause is fixed the next try makes it.
func TestARefundStripeRefusesForAnOperatorToFixIsNeverOwed(t *testing.T) {
	h, store, refunds := stripeRefunds(t)
	ctx := context.Background()
	for i, c := range []struct {
		name   string
		answer stripemock.RefundAnswer
	}{
		{"key invalid", stripemock.Refusal(401, "invalid_request_error", "", "Invalid API Key provided: "+stripemock.SecretKey)},
		{"key without the right", stripemock.Refusal(403, "invalid_request_error", "secret_key_required", "The provided key does not have the required permissions for this endpoint.")},
		{"another account", stripemock.Refusal(404, "invalid_request_error", "resource_missing", "No such payment_intent: 'pi_1'")},
		{"balance too low", stripemock.Refusal(400, "invalid_request_error", "balance_insufficient", "Your balance is insufficient.")},
		{"key reused", stripemock.Refusal(400, "idempotency_error", "", "Keys for idempotent requests can only be used with the same parameters they were first used with.")},
		{"unknown parameter", stripemock.Refusal(400, "invalid_request_error", "parameter_unknown", "Received unknown parameter: x")},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := lateSuccessFor(t, h, "operator"+string(rune('a'+i)))
			refunds.Play(c.answer, -1)
			s, err := h.Refund(ctx, ref, command.Meta{})
			var refused *payment.RefundRefused
			if err == nil || !s.RefundDue() || errors.As(err, &refused) || errors.Is(err, payment.ErrAlreadyRefunded) {
				t.Fatalf("a refund refused for an operator to fix (%s): %+v, %v; want an error, the refund still due", c.name, s, err)
			}
			if strings.Contains(err.Error(), stripemock.SecretKey) {
				t.Errorf("the error carries the secret key: %v", err)
			}
			if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "PaymentSucceededAfterCancellation"}) {
				t.Fatalf("recorded %v; want nothing more", got)
			}
			refunds.Play(stripemock.RefundAnswer{}, 0)
			if s, err := h.Refund(ctx, ref, command.Meta{}); err != nil || s.Refund != payment.RefundStatusRequested {
				t.Fatalf("the refund once the cause is fixed: %+v, %v", s, err)
			}
		})
	}
}

// lastOwed decodes the last RefundOwed of ref's payment.
func lastOwed(t *testing.T, store eventstore.Store, ref string) payment.RefundOwed {
	t.Helper()
	recs, err := store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Type == (payment.RefundOwed{}).EventType() {
			owed, err := eventstore.Decode[payment.RefundOwed](recs[i], payment.DecodeEvent)
			if err != nil {
				t.Fatal(err)
			}
			return owed
		}
	}
	t.Fatalf("no RefundOwed in %s", ref)
	return payment.RefundOwed{}
}

// TestARefundThatFailsAfterStripeAcceptedItIsOwed: a Refund Stripe accepted may
// fail later at the bank, which Stripe reports by refund.failed, usually after the
// charge.refunded it sent when it created the Refund. In either order the refund
// becomes owed, with Stripe's reason, for the amount taken, once (a redelivery is
// a duplicate and records nothing), so that the money the renter never got back
// is on the operators' list; the charge.refunded of the Refund that failed,
// delivered after the failure or after the refund was made by hand, changes
// nothing; and a refund.failed for another Refund than ours changes nothing.
// Stripe's events are read by the adapter from signed bodies, so what tells them
// apart is what Stripe sends.
func TestARefundThatFailsAfterStripeAcceptedItIsOwed(t *testing.T) {
	for i, order := range []string{"after charge.refunded", "before charge.refunded", "another refund"} {
		t.Run(order, func(t *testing.T) { refundFailsAtStripe(t, order, fmt.Sprintf("refundfails%d", i)) })
	}
}

func refundFailsAtStripe(t *testing.T, order, bike string) {
	store := eventstore.NewMemory()
	h, provider, _ := stripeRefundsOn(t, store)
	ctx := context.Background()
	story := refundStory(t, h, provider, bike)
	ref, s := story.ref, story.payment
	apply := story.apply
	want := []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}
	switch order {
	case "another refund":
		apply(story.refunded)
		if res := apply(story.failedRefund("evt_other_failed", "re_other")); res.Payment.Refund != payment.RefundStatusDone {
			t.Fatalf("another Refund's failure: %+v; want our refund still made", res.Payment)
		}
		if got := types(t, store, ref); !slices.Equal(got, append(want, "PaymentRefunded")) {
			t.Fatalf("recorded %v", got)
		}
		return
	case "after charge.refunded":
		apply(story.refunded)
		want = append(want, "PaymentRefunded")
	}
	res := apply(story.failed)
	if res.Duplicate || res.Payment.Refund != payment.RefundStatusOwed || !res.Payment.Refund.ForHands() {
		t.Fatalf("refund.failed: %+v; want the refund owed, for hands", res)
	}
	owed := lastOwed(t, store, ref)
	if !strings.Contains(owed.Reason, s.RefundID) || owed.FailedRefundID != s.RefundID || owed.Amount != s.Amount || owed.Currency != s.Currency ||
		!owed.FailedAt.Equal(story.failedAt) {
		t.Errorf("RefundOwed %+v; want the amount taken, Stripe's reason, the failed Refund and when Stripe reported it failed (%v)", owed, story.failedAt)
	}
	if again := apply(story.failed); !again.Duplicate {
		t.Fatalf("refund.failed delivered again: %+v; want a duplicate", again)
	}
	want = append(want, "RefundOwed")
	if order == "before charge.refunded" {
		if late := apply(story.refunded); late.Payment.Refund != payment.RefundStatusOwed {
			t.Fatalf("charge.refunded after the failure: %+v; want the refund still owed", late.Payment)
		}
	}
	if got := types(t, store, ref); !slices.Equal(got, want) {
		t.Fatalf("recorded %v; want %v", got, want)
	}
	rentalID, err := payment.RentalIDFor(ref)
	if err != nil {
		t.Fatal(err)
	}
	made, err := h.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{Amount: s.Amount, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{})
	if err != nil || made.Refund != payment.RefundStatusMadeByHand {
		t.Fatalf("the refund owed made by hand: %+v, %v", made, err)
	}
	// The charge.refunded of the Refund that failed, delivered again after the
	// refund was made by hand: Stripe's word about the Refund that failed.
	if res := apply(story.refunded); res.Payment.Refund != payment.RefundStatusMadeByHand {
		t.Fatalf("the charge.refunded of the Refund that failed, after the refund was made by hand: %+v; want it made by hand, not refunded twice", res.Payment)
	}
	if got := types(t, store, ref); !slices.Equal(got, append(want, "RefundMadeByHand")) {
		t.Fatalf("recorded %v after a late charge.refunded", got)
	}
}

// TestAStripeRefundAfterARefundMadeByHandIsRecordedTwice: the story. A
// late success refunded by Stripe (re_1), charge.refunded, then refund.failed for
// re_1 (the refund is owed); an operator pays it back by hand; then someone
// refunds the charge again in Stripe's dashboard, and Stripe sends a new
// charge.refunded. That refund is recorded: the rental's refund reads
// refunded-twice, so that the renter paid twice is seen. In every order Stripe's
// four events and the operator's record can arrive (Stripe creates the second
// refund only after the first failed, but may deliver its events in any order),
// each delivered twice: the second refund is recorded, and no report of re_1 is.
// On both stores.
func TestAStripeRefundAfterARefundMadeByHandIsRecordedTwice(t *testing.T) {
	for i, c := range []struct {
		order string // r1: re_1's charge.refunded, f1: its refund.failed, h: by hand, r2: the dashboard refund's charge.refunded
		want  payment.RefundStatus
		// recorded are the events recorded after RefundRequested.
		recorded []string
	}{
		{"r1 f1 h r2", payment.RefundStatusTwice, []string{"PaymentRefunded", "RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{"f1 r1 h r2", payment.RefundStatusTwice, []string{"RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{"f1 h r1 r2", payment.RefundStatusTwice, []string{"RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{"f1 h r2 r1", payment.RefundStatusTwice, []string{"RefundOwed", "RefundMadeByHand", "PaymentRefunded"}},
		{"r1 f1 r2 h", payment.RefundStatusDone, []string{"PaymentRefunded", "RefundOwed", "PaymentRefunded"}},
		{"r1 r2 f1 h", payment.RefundStatusDone, []string{"PaymentRefunded", "PaymentRefunded"}},
		{"r2 r1 f1 h", payment.RefundStatusDone, []string{"PaymentRefunded"}},
		{"r2 f1 r1 h", payment.RefundStatusDone, []string{"PaymentRefunded"}},
		{"f1 r2 r1 h", payment.RefundStatusDone, []string{"RefundOwed", "PaymentRefunded"}},
		{"f1 h r1", payment.RefundStatusMadeByHand, []string{"RefundOwed", "RefundMadeByHand"}},
	} {
		t.Run(c.order, func(t *testing.T) {
			storesOf(t, func(t *testing.T, store eventstore.Store) {
				h, provider, _ := stripeRefundsOn(t, store)
				story := refundStory(t, h, provider, fmt.Sprintf("twice%d", i))
				rentalID, err := payment.RentalIDFor(story.ref)
				if err != nil {
					t.Fatal(err)
				}
				for _, step := range strings.Fields(c.order) {
					if step == "h" {
						_, err := h.RefundMadeByHand(context.Background(), rentalID, payment.RecordRefundMadeByHand{Amount: story.payment.Amount,
							OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{})
						if err != nil && !errors.Is(err, payment.ErrRefundAlreadyRecorded) {
							t.Fatalf("by hand: %v", err)
						}
						continue
					}
					ev := map[string]payment.ProviderEvent{"r1": story.refunded, "f1": story.failed, "r2": story.again}[step]
					first := story.apply(ev)
					if again := story.apply(ev); !again.Duplicate || !reflect.DeepEqual(again.Payment, first.Payment) {
						t.Fatalf("%s delivered again: %+v; want a duplicate, the payment %+v", step, again, first.Payment)
					}
				}
				s, _, err := h.LoadPayment(context.Background(), story.ref)
				if err != nil {
					t.Fatal(err)
				}
				got := types(t, store, story.ref)[3:]
				if s.Refund != c.want || !slices.Equal(got, c.recorded) {
					t.Fatalf("the refund is %q after %v; want %q after %v", s.Refund, got, c.want, c.recorded)
				}
				if last := lastOf[payment.PaymentRefunded](t, store, story.ref); c.want == payment.RefundStatusTwice &&
					(last.ProviderEventID != story.again.EventID || !last.ReportedAt.Equal(story.againAt)) {
					t.Errorf("the refund recorded twice is %+v; want the dashboard refund's event, reported at %v", last, story.againAt)
				}
			})
		})
	}
}

// stripeRefundStory is a late success Stripe refunded (re_…, as stripe-mock
// named it) and the events Stripe sends of it, signed and read by the adapter:
// refunded, the charge.refunded it sent when it created the Refund (at
// refundedAt); failed, the refund.failed of that Refund (at failedAt); and
// again, the charge.refunded of another refund someone made in the dashboard
// once it had failed (at againAt).
type stripeRefundStory struct {
	t                             *testing.T
	h                             *command.Handler
	provider                      *stripe.Provider
	ref                           string
	payment                       payment.Payment
	refunded, failed, again       payment.ProviderEvent
	refundedAt, failedAt, againAt time.Time
}

func refundStory(t *testing.T, h *command.Handler, provider *stripe.Provider, bike string) *stripeRefundStory {
	t.Helper()
	ctx := context.Background()
	ref := lateSuccessFor(t, h, bike)
	s, err := h.Refund(ctx, ref, command.Meta{})
	if err != nil || s.Refund != payment.RefundStatusRequested || s.RefundID == "" {
		t.Fatalf("the refund: %+v, %v; want it requested, with Stripe's Refund id", s, err)
	}
	st := &stripeRefundStory{t: t, h: h, provider: provider, ref: ref, payment: s,
		refundedAt: time.Unix(1780045200, 0).UTC(), failedAt: time.Unix(1780477200, 0).UTC(), againAt: time.Unix(1780480800, 0).UTC()}
	st.refunded = st.chargeRefunded("evt_"+bike+"_refunded1", st.refundedAt)
	st.failed = st.failedRefund("evt_"+bike+"_failed1", s.RefundID)
	st.again = st.chargeRefunded("evt_"+bike+"_refunded2", st.againAt)
	return st
}

// chargeRefunded is Stripe's charge.refunded of the story's payment, created at.
func (st *stripeRefundStory) chargeRefunded(id string, at time.Time) payment.ProviderEvent {
	return st.signed("charge.refunded.json", func(e, object map[string]any) {
		e["id"], e["created"] = id, at.Unix()
		object["payment_intent"], object["amount"], object["amount_refunded"] = st.payment.PaymentID, st.payment.Amount, st.payment.Amount
		object["metadata"] = map[string]any{"reference": st.ref}
	})
}

// failedRefund is Stripe's refund.failed of the Refund refundID of the story's
// payment, created at failedAt.
func (st *stripeRefundStory) failedRefund(id, refundID string) payment.ProviderEvent {
	return st.signed("refund.failed.json", func(e, object map[string]any) {
		e["id"], e["created"] = id, st.failedAt.Unix()
		object["id"], object["payment_intent"], object["amount"], object["created"] = refundID, st.payment.PaymentID, st.payment.Amount, st.refundedAt.Unix()
		object["metadata"] = map[string]any{"reference": st.ref}
	})
}

// signed is the event of a fixture of the Stripe adapter's, changed by change,
// as the story's provider reads it from the signed body (stripeEvent).
func (st *stripeRefundStory) signed(fixture string, change func(e, object map[string]any)) payment.ProviderEvent {
	st.t.Helper()
	return stripeEvent(st.t, st.provider, refundsWebhookSecret, fixture, change)
}

// apply applies ev to the story's payment, as the webhook does.
func (st *stripeRefundStory) apply(ev payment.ProviderEvent) command.ProviderResult {
	st.t.Helper()
	res, err := st.h.ApplyProviderEvent(context.Background(), ev)
	if err != nil {
		st.t.Fatalf("%s %s: %v", ev.Kind, ev.EventID, err)
	}
	return res
}
