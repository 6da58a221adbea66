package command_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// errUnavailable is a provider's answer that may pass: a 503.
var errUnavailable = errors.New("HTTP 503 from the provider")

// refusal is a provider's answer that will not pass by trying again.
type refusal struct{}

func (refusal) Error() string   { return "HTTP 401 from the provider" }
func (refusal) Temporary() bool { return false }

// flaky is a holder whose cancellations fail for a while: the next failures calls
// answer ProviderCannotSay with err, then it answers truthfully again.
type flaky struct {
	*holder
	failures int
	err      error
}

func (f *flaky) CancelPayment(ctx context.Context, id string) (payment.CancelOutcome, payment.Told, error) {
	f.mu.Lock()
	if f.failures != 0 {
		f.failures--
		f.cancels++
		f.mu.Unlock()
		return payment.ProviderCannotSay, payment.Told{}, f.err
	}
	f.mu.Unlock()
	return f.holder.CancelPayment(ctx, id)
}

func (f *flaky) recover() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = 0
}

// preparedFor prepares the payment of a rental of bike through h, and returns its
// reference.
func preparedFor(t *testing.T, h *command.Handler, bike string) string {
	t.Helper()
	ref := payment.ReferenceFor(bike + "_AAAAAAAAAAAAAAAAAAAAAA")
	if _, err := h.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "ignored", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	return ref
}

// types returns the event types of a payment's stream after PaymentPrepared.
func types(t *testing.T, store eventstore.Store, ref string) []string {
	t.Helper()
	recs, err := store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs[1:] {
		out = append(out, r.Type)
	}
	return out
}

// TestACancellationTheProviderBrieflyFailsIsRetried: a provider that fails twice
// with a temporary error, then answers, has cancelled the payment when the command
// returns, and nothing is owed to it.
func TestACancellationTheProviderBrieflyFailsIsRetried(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		p := &flaky{holder: newHolder(false), failures: 2, err: errUnavailable}
		h := command.New(store, command.WithProvider(p), command.WithCancelRetry(quickRetry))
		ref := preparedFor(t, h, "b1")
		res, err := h.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		state, cancels := p.state["pi_"+ref], p.cancels
		p.mu.Unlock()
		if state != "canceled" || cancels != 3 {
			t.Errorf("the payment is %q at the provider after %d cancellations; want canceled after 3", state, cancels)
		}
		if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled"}) || res.State.CancellationDue() {
			t.Errorf("recorded %v, state %+v; want PaymentCancelled alone, nothing owed", got, res.State)
		}
	})
}

// TestACancellationTheProviderNeverAnswersIsOwedUntilItDoes: the provider stays
// down through every retry. The cancellation is recorded all the same (the bike is
// released on time) and owed to the provider; retrying it while the provider is
// down keeps it owed; once the provider is back, the retry cancels the payment
// there and nothing is owed any more; retrying again asks nobody.
func TestACancellationTheProviderNeverAnswersIsOwedUntilItDoes(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		ctx := context.Background()
		p := &flaky{holder: newHolder(false), failures: -1, err: errUnavailable}
		h := command.New(store, command.WithProvider(p), command.WithCancelRetry(quickRetry))
		ref := preparedFor(t, h, "b1")
		res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if res.State.Status != payment.StatusCancelled || !res.State.CancellationDue() {
			t.Fatalf("after the provider did not answer: %+v; want cancelled, the cancellation owed", res.State)
		}
		if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "CancellationOwedAtProvider"}) {
			t.Fatalf("recorded %v", got)
		}
		recs, _ := store.Read(ctx, payment.StreamID(ref), 0)
		if e, err := payment.DecodeEvent(recs[2].Type, recs[2].Data); err != nil || e.(payment.CancellationOwedAtProvider).Attempts != quickRetry.MaxAttempts {
			t.Errorf("the owed cancellation reads %+v, %v; want %d attempts", e, err, quickRetry.MaxAttempts)
		}

		owed, err := h.RetryCancellation(ctx, ref, command.Meta{})
		if !owed || !errors.Is(err, errUnavailable) {
			t.Errorf("retry while the provider is down: owed %v, %v", owed, err)
		}
		// A retry the provider left unanswered is recorded, counted, so that the
		// next one waits longer (owed.Backoff).
		if got := types(t, store, ref); !slices.Equal(got[2:], []string{"CancellationStillOwed"}) {
			t.Errorf("a retry that failed recorded %v; want CancellationStillOwed", got[2:])
		}
		if s, _, _ := h.LoadPayment(ctx, ref); s.CancellationTries != 1 || !s.CancellationDue() {
			t.Errorf("after an unanswered retry: %+v; want 1 try, still owed", s)
		}

		p.recover()
		if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); owed || err != nil {
			t.Fatalf("retry once the provider is back: owed %v, %v", owed, err)
		}
		p.mu.Lock()
		state, cancels := p.state["pi_"+ref], p.cancels
		p.mu.Unlock()
		s, _, _ := h.LoadPayment(ctx, ref)
		if state != "canceled" || s.CancellationDue() || s.Status != payment.StatusCancelled {
			t.Errorf("the payment is %q at the provider, %+v here", state, s)
		}
		if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "CancellationOwedAtProvider", "CancellationStillOwed", "CancellationDoneAtProvider"}) {
			t.Errorf("recorded %v", got)
		}
		if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); owed || err != nil || p.cancels != cancels {
			t.Errorf("a retry with nothing owed: owed %v, %v, and the provider asked %d more times", owed, err, p.cancels-cancels)
		}
	})
}

// TestASuccessWhileTheCancellationIsOwedIsRefunded: the renter pays while the
// cancellation is owed. Whether the retry finds the success at the provider first
// or the provider's webhook reports it first, the money goes back, once, and
// nothing is owed any more.
func TestASuccessWhileTheCancellationIsOwedIsRefunded(t *testing.T) {
	for _, webhookFirst := range []bool{false, true} {
		name := map[bool]string{false: "the retry finds it", true: "the webhook reports it"}[webhookFirst]
		t.Run(name, func(t *testing.T) {
			storesOf(t, func(t *testing.T, store eventstore.Store) {
				ctx := context.Background()
				p := &flaky{holder: newHolder(false), failures: -1, err: errUnavailable}
				h := command.New(store, command.WithProvider(p), command.WithCancelRetry(quickRetry))
				ref := preparedFor(t, h, "b1")
				if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
					t.Fatal(err)
				}
				if !p.pay("pi_" + ref) {
					t.Fatal("the payment was not payable at the provider")
				}
				if webhookFirst {
					if _, err := h.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "test", EventID: "evt-1",
						Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: "pi_" + ref, Amount: 1500, Currency: "EUR", Digest: "d"}); err != nil {
						t.Fatal(err)
					}
				}
				p.recover()
				if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); owed || err != nil {
					t.Fatalf("retry: owed %v, %v", owed, err)
				}
				s, _, _ := h.LoadPayment(ctx, ref)
				p.mu.Lock()
				refunds := p.refunds[ref]
				p.mu.Unlock()
				if !s.LateSuccess || s.Refund != payment.RefundStatusRequested || refunds != 1 || s.CancellationDue() {
					t.Errorf("payment %+v with %d refunds; want the late success refunded once, nothing owed", s, refunds)
				}
			})
		})
	}
}

// TestWhatIsOwedToTheProvider: a provider that cannot cancel at all owes nothing;
// one that refuses outright (an error that is not temporary) is asked once, and the
// cancellation is owed.
func TestWhatIsOwedToTheProvider(t *testing.T) {
	ctx := context.Background()
	store := eventstore.NewMemory()
	only := newHolder(true)
	h := command.New(store, command.WithProvider(only), command.WithCancelRetry(quickRetry))
	ref := preparedFor(t, h, "b1")
	res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || res.State.CancellationDue() || only.cancels != 1 || !slices.Equal(types(t, store, ref), []string{"PaymentCancelled"}) {
		t.Errorf("a provider that only calls back: %+v, %v, asked %d times, recorded %v", res.State, err, only.cancels, types(t, store, ref))
	}

	refused := &flaky{holder: newHolder(false), failures: -1, err: refusal{}}
	h = command.New(store, command.WithProvider(refused), command.WithCancelRetry(quickRetry))
	ref = preparedFor(t, h, "b2")
	res, err = h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || !res.State.CancellationDue() || refused.cancels != 1 {
		t.Errorf("a refusal: %+v, %v, asked %d times; want owed after one", res.State, err, refused.cancels)
	}
}

// TestTheRetriesStayInsideTheBudget: a command whose context has little time left
// asks the provider once, and still records the cancellation as owed.
func TestTheRetriesStayInsideTheBudget(t *testing.T) {
	store := eventstore.NewMemory()
	p := &flaky{holder: newHolder(false), failures: -1, err: errUnavailable}
	h := command.New(store, command.WithProvider(p)) // the default retry: waits of up to 1.6 s
	ref := preparedFor(t, h, "b1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || !res.State.CancellationDue() || p.cancels != 1 {
		t.Errorf("%+v, %v, asked %d times; want owed after one", res.State, err, p.cancels)
	}
}
