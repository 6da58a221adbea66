package command_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// silent is a provider that never answers: every call waits for its context.
type silent struct{ calls chan string }

func (s silent) wait(ctx context.Context, call string) error {
	s.calls <- call
	<-ctx.Done()
	return ctx.Err()
}

func (s silent) CreatePayment(ctx context.Context, _ string, _ int64, _ string) (payment.Created, error) {
	return payment.Created{}, s.wait(ctx, "create")
}

func (s silent) CancelPayment(ctx context.Context, _ string) (payment.CancelOutcome, error) {
	return payment.ProviderCannotSay, s.wait(ctx, "cancel")
}

func (s silent) RefundPayment(ctx context.Context, _, _ string) (string, error) {
	return "", s.wait(ctx, "refund")
}

type silentFinder struct{ silent }

func (s silentFinder) ReferenceOf(ctx context.Context, _ string) (string, error) {
	return "", s.wait(ctx, "reference")
}

// TestWithTimeoutBoundsEveryProviderCall checks that a provider that never answers
// fails each call with ErrProviderTimeout once the bound has passed, passes on what
// the provider said, keeps the provider's ReferenceFinder, and leaves a call the
// caller cancelled a cancellation.
func TestWithTimeoutBoundsEveryProviderCall(t *testing.T) {
	s := silentFinder{silent{calls: make(chan string, 10)}}
	p := command.WithTimeout(s, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a generous ceiling: the test must not hang
	defer cancel()

	_, err := p.CreatePayment(ctx, "ref", 1500, "EUR")
	if !errors.Is(err, command.ErrProviderTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("create: %v, want ErrProviderTimeout wrapping the provider's error", err)
	}
	outcome, err := p.CancelPayment(ctx, "pi_1")
	if !errors.Is(err, command.ErrProviderTimeout) || outcome != payment.ProviderCannotSay {
		t.Errorf("cancel: %q, %v; want the provider's %q and ErrProviderTimeout", outcome, err, payment.ProviderCannotSay)
	}
	if _, err := p.RefundPayment(ctx, "pi_1", "ref"); !errors.Is(err, command.ErrProviderTimeout) {
		t.Errorf("refund: %v, want ErrProviderTimeout", err)
	}
	finder, ok := p.(command.ReferenceFinder)
	if !ok {
		t.Fatal("the bounded provider lost the provider's ReferenceFinder")
	}
	if _, err := finder.ReferenceOf(ctx, "pi_1"); !errors.Is(err, command.ErrProviderTimeout) {
		t.Errorf("reference: %v, want ErrProviderTimeout", err)
	}
	if _, ok := command.WithTimeout(s.silent, time.Second).(command.ReferenceFinder); ok {
		t.Error("a provider without ReferenceOf gained one")
	}

	gone, stop := context.WithCancel(ctx)
	stop()
	if _, err := command.WithTimeout(s, time.Hour).CreatePayment(gone, "ref", 1500, "EUR"); errors.Is(err, command.ErrProviderTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller: %v, want context.Canceled and no timeout", err)
	}
}
