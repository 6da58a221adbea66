package command_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

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
	mock := stripemock.Start(t)
	refunds := &stripemock.Refunds{Next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: "whsec_test_refunds", APIURL: mock.URL,
		HTTPClient: &http.Client{Transport: refunds}})
	if err != nil {
		t.Fatal(err)
	}
	store := eventstore.NewMemory()
	return command.New(store, command.WithProvider(provider), command.WithCancelRetry(quickRetry)), store, refunds
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
// becomes owed, with Stripe's reason, once (a redelivery is a duplicate and
// records nothing), so that the money the renter never got back is on the
// operators' list; a charge.refunded delivered after the failure, before or after
// the refund is made by hand, changes nothing (it is no second refund); and a
// refund.failed for another Refund than ours changes nothing.
func TestARefundThatFailsAfterStripeAcceptedItIsOwed(t *testing.T) {
	for i, order := range []string{"after charge.refunded", "before charge.refunded", "another refund"} {
		t.Run(order, func(t *testing.T) { refundFailsAtStripe(t, order, fmt.Sprintf("refundfails%d", i)) })
	}
}

func refundFailsAtStripe(t *testing.T, order, bike string) {
	h, store, _ := stripeRefunds(t)
	ctx := context.Background()
	ref := lateSuccessFor(t, h, bike)
	if s, err := h.Refund(ctx, ref, command.Meta{}); err != nil || s.Refund != payment.RefundStatusRequested || s.RefundID == "" {
		t.Fatalf("the refund: %+v, %v; want it requested, with Stripe's Refund id", s, err)
	}
	s, _, err := h.LoadPayment(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	event := func(id string, kind payment.ProviderEventKind, refundID string) payment.ProviderEvent {
		ev := payment.ProviderEvent{Provider: stripe.Name, EventID: id, Kind: kind, Reference: ref, PaymentID: s.PaymentID, Amount: s.Amount, Currency: s.Currency}
		obj := payment.ProviderObject{Type: "charge.refunded", Object: "charge", ObjectID: "ch_1", Status: "succeeded"}
		if kind == payment.ProviderRefundFailed {
			ev.RefundID, ev.Reason = refundID, "Stripe's refund "+refundID+" failed (expired_or_canceled_card)"
			obj = payment.ProviderObject{Type: "refund.failed", Object: "refund", ObjectID: refundID, Status: "failed"}
		}
		ev.Digest = payment.EffectDigest(ev, obj)
		return ev
	}
	apply := func(ev payment.ProviderEvent) command.ProviderResult {
		t.Helper()
		res, err := h.ApplyProviderEvent(ctx, ev)
		if err != nil {
			t.Fatalf("%s %s: %v", ev.Kind, ev.EventID, err)
		}
		return res
	}
	refunded, failed := event("evt_charge_refunded", payment.ProviderRefunded, ""), event("evt_refund_failed", payment.ProviderRefundFailed, s.RefundID)
	want := []string{"PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}
	switch order {
	case "another refund":
		apply(refunded)
		if res := apply(event("evt_other_failed", payment.ProviderRefundFailed, "re_other")); res.Payment.Refund != payment.RefundStatusDone {
			t.Fatalf("another Refund's failure: %+v; want our refund still made", res.Payment)
		}
		if got := types(t, store, ref); !slices.Equal(got, append(want, "PaymentRefunded")) {
			t.Fatalf("recorded %v", got)
		}
		return
	case "after charge.refunded":
		apply(refunded)
		want = append(want, "PaymentRefunded")
	}
	res := apply(failed)
	if res.Duplicate || res.Payment.Refund != payment.RefundStatusOwed || !res.Payment.Refund.ForHands() {
		t.Fatalf("refund.failed: %+v; want the refund owed, for hands", res)
	}
	owed := lastOwed(t, store, ref)
	if owed.Reason != failed.Reason || owed.FailedRefundID != s.RefundID || owed.Amount != s.Amount || owed.Currency != s.Currency {
		t.Errorf("RefundOwed %+v; want the amount taken, Stripe's reason and the failed Refund", owed)
	}
	if again := apply(failed); !again.Duplicate {
		t.Fatalf("refund.failed delivered again: %+v; want a duplicate", again)
	}
	want = append(want, "RefundOwed")
	if order == "before charge.refunded" {
		if late := apply(refunded); late.Payment.Refund != payment.RefundStatusOwed {
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
	late := event("evt_charge_refunded_late", payment.ProviderRefunded, "")
	if res := apply(late); res.Payment.Refund != payment.RefundStatusMadeByHand {
		t.Fatalf("a charge.refunded after the refund was made by hand: %+v; want it made by hand, not refunded twice", res.Payment)
	}
	if got := types(t, store, ref); !slices.Equal(got, append(want, "RefundMadeByHand")) {
		t.Fatalf("recorded %v after a late charge.refunded", got)
	}
}
