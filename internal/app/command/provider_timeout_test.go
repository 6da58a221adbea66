package command_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// silent is a provider that never answers: every call waits for its context.
type silent struct{ calls chan string }

func (s silent) wait(ctx context.Context, call string) error {
	s.calls <- call
	<-ctx.Done()
	return ctx.Err()
}

func (silent) Name() string { return "silent" }

func (s silent) CreatePayment(ctx context.Context, _ string, _ int64, _ string) (payment.Created, error) {
	return payment.Created{}, s.wait(ctx, "create")
}

func (s silent) CancelPayment(ctx context.Context, _ string) (payment.CancelOutcome, payment.Told, error) {
	return payment.ProviderCannotSay, payment.Told{}, s.wait(ctx, "cancel")
}

func (s silent) RefundPayment(ctx context.Context, _, _ string) (string, error) {
	return "", s.wait(ctx, "refund")
}

func (s silent) RefundUnexpected(ctx context.Context, _, _ string) (string, error) {
	return "", s.wait(ctx, "refund-unexpected")
}

func (s silent) ReferenceOf(ctx context.Context, _ string) (string, error) {
	return "", s.wait(ctx, "reference")
}

// TestTheProviderTimeoutBoundsEveryCall: every call of the port (each method of
// PaymentProvider that takes a context, read from the interface itself, so that a
// method added later is held to it too) made through the handler's provider to a
// provider that never answers fails with ErrProviderTimeout once the bound has
// passed, wrapping the provider's own error; a cancellation passes on what the
// provider said; a call the caller cancelled is a cancellation, not a timeout.
func TestTheProviderTimeoutBoundsEveryCall(t *testing.T) {
	s := silent{calls: make(chan string, 10)}
	p := command.New(eventstore.NewMemory(), command.WithProvider(s), command.WithProviderTimeout(20*time.Millisecond)).Provider()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a generous ceiling: the test must not hang
	defer cancel()

	port := reflect.TypeFor[command.PaymentProvider]()
	calls := 0
	for m := range port.Methods() {
		if m.Type.NumIn() == 0 || m.Type.In(0) != reflect.TypeFor[context.Context]() {
			continue
		}
		args := []reflect.Value{reflect.ValueOf(ctx)}
		for i := 1; i < m.Type.NumIn(); i++ {
			args = append(args, reflect.Zero(m.Type.In(i)))
		}
		out := reflect.ValueOf(p).MethodByName(m.Name).Call(args)
		err, _ := out[len(out)-1].Interface().(error)
		if !errors.Is(err, command.ErrProviderTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want ErrProviderTimeout wrapping the provider's error", m.Name, err)
		}
		if m.Name == "CancelPayment" {
			if outcome := out[0].Interface(); outcome != payment.ProviderCannotSay {
				t.Errorf("cancel: %q, want the provider's %q", outcome, payment.ProviderCannotSay)
			}
		}
		calls++
	}
	if calls != 5 || len(s.calls) != calls {
		t.Errorf("%d calls of the port made, %d reached the provider; want the 5 the port has", calls, len(s.calls))
	}

	gone, stop := context.WithCancel(ctx)
	stop()
	bounded := command.New(eventstore.NewMemory(), command.WithProvider(s), command.WithProviderTimeout(time.Hour)).Provider()
	if _, err := bounded.CreatePayment(gone, "ref", 1500, "EUR"); errors.Is(err, command.ErrProviderTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller: %v, want context.Canceled and no timeout", err)
	}
}
