package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// downProvider is a provider that can cancel, while down is false.
type downProvider struct {
	generic.Provider
	down bool
}

func (p *downProvider) CancelPayment(context.Context, string) (payment.CancelOutcome, payment.Told, error) {
	if p.down {
		return payment.ProviderCannotSay, payment.Told{}, errors.New("HTTP 503")
	}
	return payment.CancelledAtProvider, payment.Told{}, nil
}

// TestCancellationsListsWhatIsOwedToTheProvider gives up on a payment while the
// provider does not answer, lists the cancellation owed (text and JSON), lets a
// sweep with a provider that still cannot cancel report it still owed, and lists
// nothing once the provider confirmed it.
func TestCancellationsListsWhatIsOwedToTheProvider(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	if r := must(t, e, "cancellations"); r.stdout != "PAYMENT  RENTAL  OWED SINCE  AGE  NEXT TRY\n0 cancellations owed to the provider\n" {
		t.Errorf("cancellations of a world that owes none:\n%q", r.stdout)
	}
	ctx := context.Background()
	p := w.Projection(2)
	provider := &downProvider{down: true}
	h := command.New(w.Store, command.WithProvider(provider), command.WithCancelRetry(eventstore.RetryPolicy{MaxAttempts: 1}))
	ref := payment.ReferenceFor(outstanding[0])
	if _, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	settle(t, w, p, outstanding[0])

	r := must(t, e, "cancellations")
	if !strings.Contains(r.stdout, ref) || !strings.Contains(r.stdout, outstanding[0]) || !strings.HasSuffix(r.stdout, "1 cancellation owed to the provider\n") {
		t.Errorf("cancellations:\n%s", r.stdout)
	}
	list := decode[ctl.CancellationList](t, must(t, e, "cancellations", "--json"))
	if list.Count != 1 || list.Cancellations[0].Reference != ref || list.Cancellations[0].RentalID != outstanding[0] || list.Cancellations[0].OwedAt.IsZero() {
		t.Errorf("cancellations --json: %+v", list)
	}

	// The sweep here has the generic provider, which cannot cancel: still owed.
	sweep := wantStatus(t, 1, e, "sweep")
	if !strings.Contains(sweep.stdout, "found 1 cancellation owed to the provider: 0 made, 1 still owed") {
		t.Errorf("sweep:\n%s", sweep.stdout)
	}

	// A retry the provider leaves unanswered puts the next one off; the list
	// still says since when the cancellation is owed, and when it is tried next.
	if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); !owed {
		t.Fatalf("a retry while the provider is down: owed %v, %v", owed, err)
	}
	settle(t, w, p, outstanding[0])
	later := decode[ctl.CancellationList](t, must(t, e, "cancellations", "--json"))
	if later.Count != 1 || !later.Cancellations[0].OwedAt.Equal(list.Cancellations[0].OwedAt) || !later.Cancellations[0].Due.After(later.Now) {
		t.Errorf("cancellations after a retry put off: %+v; want it owed since %v, due after now", later, list.Cancellations[0].OwedAt)
	}
	if r := must(t, e, "cancellations"); !strings.Contains(r.stdout, timestamp(list.Cancellations[0].OwedAt)) || !strings.Contains(r.stdout, timestamp(later.Cancellations[0].Due)) {
		t.Errorf("cancellations after a retry put off, want it owed since %s and tried next at %s:\n%s",
			timestamp(list.Cancellations[0].OwedAt), timestamp(later.Cancellations[0].Due), r.stdout)
	}

	provider.down = false
	if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); owed || err != nil {
		t.Fatalf("retry: owed %v, %v", owed, err)
	}
	settle(t, w, p, outstanding[0])
	if list := decode[ctl.CancellationList](t, must(t, e, "cancellations", "--json")); list.Count != 0 {
		t.Errorf("cancellations after the provider confirmed: %+v", list)
	}
}
