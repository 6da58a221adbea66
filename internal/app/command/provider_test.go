package command_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// unsupported answers "not supported" for what a test's provider leaves out: it
// refunds no payment it did not record, cannot be asked for a reference, and gives
// no name, so that the events of any provider are judged by their facts alone.
type unsupported struct{}

func (unsupported) Name() string { return "" }

func (unsupported) RefundUnexpected(context.Context, string, string) (string, error) {
	return "", payment.ErrRefundNotSupported
}

func (unsupported) ReferenceOf(context.Context, string) (string, error) {
	return "", payment.ErrLookupNotSupported
}

// holder is a provider that holds money as Stripe does: a payment is open until the
// renter pays it or it is cancelled, whichever comes first, and it answers a
// cancellation truthfully. With cannotCancel it is a provider that only calls back:
// a cancellation never reaches it, and it cannot refund.
type holder struct {
	unsupported
	cannotCancel bool
	// cancelTimesOut makes a provider that can cancel and refund never answer a
	// cancellation, which then goes ahead without it.
	cancelTimesOut bool

	mu       sync.Mutex
	state    map[string]string // payment id: open, succeeded or canceled
	refunds  map[string]int    // reference: refunds made
	creates  int
	cancels  int
	refundOf map[string]string
}

func newHolder(cannotCancel bool) *holder {
	return &holder{cannotCancel: cannotCancel, state: map[string]string{}, refunds: map[string]int{}, refundOf: map[string]string{}}
}

func (p *holder) CreatePayment(_ context.Context, ref string, _ int64, _ string) (payment.Created, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creates++
	id := "pi_" + ref
	if _, ok := p.state[id]; !ok {
		p.state[id] = "open"
	}
	return payment.Created{PaymentID: id, ClientSecret: id + "_secret_x"}, nil
}

func (p *holder) CancelPayment(_ context.Context, id string) (payment.CancelOutcome, payment.Told, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancels++
	if p.cannotCancel {
		return payment.CancelNotSupported, payment.Told{}, nil
	}
	if p.cancelTimesOut {
		return payment.ProviderCannotSay, payment.Told{}, context.DeadlineExceeded
	}
	switch p.state[id] {
	case "succeeded":
		return payment.AlreadySucceeded, payment.Told{}, nil
	default:
		p.state[id] = "canceled"
		return payment.CancelledAtProvider, payment.Told{}, nil
	}
}

func (p *holder) RefundPayment(_ context.Context, id, ref string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cannotCancel {
		return "", payment.ErrRefundNotSupported
	}
	if p.state[id] != "succeeded" {
		return "", errors.New("nothing to refund")
	}
	if _, ok := p.refundOf[ref]; !ok { // one refund per idempotency key
		p.refundOf[ref] = "re_" + ref
		p.refunds[ref]++
	}
	return p.refundOf[ref], nil
}

// pay is the renter paying: it succeeds unless the payment was cancelled first.
func (p *holder) pay(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state[id] != "open" {
		return false
	}
	p.state[id] = "succeeded"
	return true
}

// quickRetry retries cancellations the provider did not answer without waiting
// long, for tests.
var quickRetry = eventstore.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

func storesOf(t *testing.T, fn func(t *testing.T, store eventstore.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, eventstore.NewMemory()) })
	t.Run("dynamodb", func(t *testing.T) {
		client, table := emulatortest.EventsTable(t)
		fn(t, dynamo.New(client, table))
	})
}

// TestCancelRacingASuccessNeverKeepsTheMoney gives up on payments while their
// renters pay them, both at once and in both orders, many times, with a provider
// that can cancel and refund and with one that only calls back. Every time the
// payment ends confirmed with the money kept for the rental, or cancelled with the
// money (if any was taken) refunded or owed: never both, never neither.
func TestCancelRacingASuccessNeverKeepsTheMoney(t *testing.T) {
	for _, kind := range []struct {
		name                     string
		cannotCancel, timesOut   bool
		wantApproved, wantRefund bool // outcomes the rounds must reach at least once
	}{
		{"a provider that cancels and refunds", false, false, true, false},
		{"a provider whose cancellations time out", false, true, true, true},
		{"a provider that only calls back", true, false, true, true},
	} {
		t.Run(kind.name, func(t *testing.T) {
			storesOf(t, func(t *testing.T, store eventstore.Store) {
				const rounds = 24
				p := newHolder(kind.cannotCancel)
				p.cancelTimesOut = kind.timesOut
				h := command.New(store, command.WithProvider(p), command.WithCancelRetry(quickRetry))
				ctx := context.Background()
				outcomes := map[string]int{}
				for round := range rounds {
					ref := payment.ReferenceFor(fmt.Sprintf("b%d_AAAAAAAAAAAAAAAAAAAAAA", round))
					prep, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "ignored", Amount: 1500, Currency: "EUR"}, command.Meta{})
					if err != nil {
						t.Fatal(err)
					}
					if prep.State.PaymentID != "pi_"+ref {
						t.Fatalf("the payment id recorded is %q, not the provider's", prep.State.PaymentID)
					}
					var wg sync.WaitGroup
					var cancelErr, payErr error
					cancel := func() {
						_, cancelErr = h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
						if errors.Is(cancelErr, payment.ErrPaymentAlreadyConfirmed) {
							cancelErr = nil // declined: the success came first
						}
					}
					succeed := func() {
						if p.pay("pi_" + ref) {
							_, payErr = h.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "test", EventID: "evt-" + ref,
								Kind: payment.ProviderSucceeded, Reference: ref, PaymentID: "pi_" + ref, Amount: 1500, Currency: "EUR", Digest: "d"})

						}
					}
					switch round % 3 { // cancel first, success first, or both at once
					case 0:
						cancel()
						succeed()
					case 1:
						succeed()
						cancel()
					default:
						wg.Add(2)
						go func() { defer wg.Done(); cancel() }()
						go func() { defer wg.Done(); succeed() }()
						wg.Wait()
					}
					if cancelErr != nil || payErr != nil {
						t.Fatalf("round %d: cancel %v, success %v", round, cancelErr, payErr)
					}
					s, _, err := h.LoadPayment(ctx, ref)
					if err != nil {
						t.Fatal(err)
					}
					p.mu.Lock()
					taken, refunds := p.state["pi_"+ref] == "succeeded", p.refunds[ref]
					p.mu.Unlock()
					switch {
					case s.Status == payment.StatusConfirmed && !s.LateSuccess && s.Refund == payment.RefundStatusNone && taken && refunds == 0:
						outcomes["approved"]++
					case s.Status == payment.StatusCancelled && taken && s.LateSuccess && refunds == 1 && s.Refund == payment.RefundStatusRequested && !kind.cannotCancel:
						outcomes["cancelled, refunded"]++
					case s.Status == payment.StatusCancelled && taken && s.LateSuccess && s.Refund == payment.RefundStatusOwed && kind.cannotCancel:
						outcomes["cancelled, refund owed"]++
					case s.Status == payment.StatusCancelled && !taken && !s.LateSuccess && s.Refund == payment.RefundStatusNone:
						outcomes["cancelled, nothing taken"]++
					default:
						t.Fatalf("round %d: payment %+v with the money taken=%v and %d refunds", round, s, taken, refunds)
					}
				}
				refunds := outcomes["cancelled, refund owed"] + outcomes["cancelled, refunded"]
				if kind.wantRefund && refunds == 0 || kind.wantApproved && outcomes["approved"] == 0 {
					t.Errorf("outcomes %v: the rounds never took the path they were meant to", outcomes)
				}
				t.Logf("outcomes over %d rounds: %v", rounds, outcomes)
			})
		})
	}
}

// TestPreparingTwiceCreatesOnePaymentAtTheProvider prepares one reference three
// times; the provider is asked once, and recording follows its answer.
func TestPreparingTwiceCreatesOnePaymentAtTheProvider(t *testing.T) {
	p := newHolder(false)
	h := command.New(eventstore.NewMemory(), command.WithProvider(p))
	ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
	for range 3 {
		res, err := h.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{})
		if err != nil || res.State.PaymentID != "pi_"+ref || res.State.ClientSecret != "pi_"+ref+"_secret_x" {
			t.Fatalf("prepare: %+v, %v", res.State, err)
		}
	}
	if p.creates != 1 {
		t.Errorf("the provider was asked %d times", p.creates)
	}
	// A bad command never reaches the provider.
	if _, err := h.Payment(context.Background(), payment.PreparePayment{Reference: "rp_b2_AAAAAAAAAAAAAAAAAAAAAA", PaymentID: "x", Amount: -1, Currency: "EUR"}, command.Meta{}); !errors.Is(err, payment.ErrInvalidCommand) || p.creates != 1 {
		t.Errorf("a negative amount: %v, %d creates", err, p.creates)
	}
}

// failing is a provider whose calls all fail.
type failing struct{ generic.Provider }

func (failing) CreatePayment(context.Context, string, int64, string) (payment.Created, error) {
	return payment.Created{}, errors.New("provider down")
}

func (failing) CancelPayment(context.Context, string) (payment.CancelOutcome, payment.Told, error) {
	return "", payment.Told{}, errors.New("provider down")
}

// TestNothingIsRecordedBeforeTheProviderAgreed: a payment the provider did not
// accept is not recorded, and a cancellation it refused outright is not either.
func TestNothingIsRecordedBeforeTheProviderAgreed(t *testing.T) {
	store := eventstore.NewMemory()
	ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
	if _, err := command.New(store, command.WithProvider(failing{})).Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{}); err == nil {
		t.Fatal("prepared with the provider down")
	}
	if recs, _ := store.Read(context.Background(), payment.StreamID(ref), 0); len(recs) != 0 {
		t.Fatalf("recorded %d events before the provider accepted", len(recs))
	}
	if _, err := command.New(store, command.WithProvider(generic.Provider{})).Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := command.New(store, command.WithProvider(failing{})).Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{}); err == nil {
		t.Fatal("cancelled while the provider refused to answer")
	}
	if recs, _ := store.Read(context.Background(), payment.StreamID(ref), 0); len(recs) != 1 {
		t.Fatalf("a refused cancellation recorded %d events", len(recs)-1)
	}
}

// TestAHandlerWithoutAProviderRefusesPayments: the provider is chosen where the
// handler is built; one built with none refuses every payment command with
// ErrNoProvider and records nothing, and still executes bike commands.
func TestAHandlerWithoutAProviderRefusesPayments(t *testing.T) {
	ctx := context.Background()
	store := eventstore.NewMemory()
	h := command.New(store)
	ref := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
	for name, send := range map[string]func() error{
		"prepare": func() error {
			_, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "x", Amount: 1500, Currency: "EUR"}, command.Meta{})
			return err
		},
		"confirm": func() error {
			_, err := h.Payment(ctx, payment.ConfirmPayment{Reference: ref}, command.Meta{})
			return err
		},
		"refund": func() error { _, err := h.Refund(ctx, ref, command.Meta{}); return err },
		"retry cancellation": func() error {
			_, err := h.RetryCancellation(ctx, ref, command.Meta{})
			return err
		},
		"provider event": func() error {
			_, err := h.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: generic.Name, EventID: "evt-1", Kind: payment.ProviderSucceeded, Reference: ref})
			return err
		},
	} {
		if err := send(); !errors.Is(err, command.ErrNoProvider) {
			t.Errorf("%s: err = %v, want ErrNoProvider", name, err)
		}
	}
	if recs, _ := store.Read(ctx, payment.StreamID(ref), 0); len(recs) != 0 {
		t.Errorf("refused payment commands recorded %d events", len(recs))
	}
	if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: "b1"}, command.Meta{}); err != nil {
		t.Errorf("a bike command: %v", err)
	}
}
