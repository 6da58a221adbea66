package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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

// owedFor is how long before the test's projection a cancellation it projects was
// owed: its kind's backoff sends at once, a minute later and three minutes later,
// so that at the projection a retry was due in the minute after it was owed, and
// the next one is due in the minute to come.
const owedFor = 2*time.Minute + 5*time.Second

// TestCancellationsListsWhatIsOwedToTheProvider gives up on a payment while the
// provider does not answer, lists the cancellation owed (text and JSON), lets a
// sweep with a provider that still cannot cancel report it still owed, and one
// its backoff holds back report it put off, lists when it is tried next, and
// lists nothing once the provider confirmed it.
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
	// The projector and the process take the payment's records, the cancellation
	// owed as if it had been recorded owedFor ago.
	records := w.PaymentOf(outstanding[0])
	var owedAt time.Time
	for i, r := range records {
		if r.Type == (payment.CancellationOwedAtProvider{}).EventType() {
			owedAt = r.RecordedAt.Add(-owedFor).Truncate(time.Millisecond)
			records[i].RecordedAt = owedAt
		}
	}
	w.Project(p, records...)
	if err := w.Process.Handle(ctx, records[len(records)-1]); err != nil {
		t.Fatal(err)
	}

	r := must(t, e, "cancellations")
	if !strings.Contains(r.stdout, ref) || !strings.Contains(r.stdout, outstanding[0]) || !strings.HasSuffix(r.stdout, "1 cancellation owed to the provider\n") {
		t.Errorf("cancellations:\n%s", r.stdout)
	}
	list := decode[ctl.CancellationList](t, must(t, e, "cancellations", "--json"))
	if list.Count != 1 || list.Cancellations[0].Reference != ref || list.Cancellations[0].RentalID != outstanding[0] || !list.Cancellations[0].OwedAt.Equal(owedAt) {
		t.Errorf("cancellations --json: %+v, want it owed since %s", list, owedAt)
	}

	// A sweep when its retry is due, with the generic provider, which cannot
	// cancel: still owed.
	at := owedAt.Add(30 * time.Second).Format(time.RFC3339Nano)
	if sweep := wantStatus(t, 1, e, "sweep", "--at", at); !strings.Contains(sweep.stdout, "found 1 cancellation owed to the provider: 0 made, 1 still owed\n") ||
		!strings.Contains(sweep.err.Error(), "1 cancellation still owed to the provider") {
		t.Errorf("sweep --at %s: %v\n%s", at, sweep.err, sweep.stdout)
	}
	// A sweep now, between two retries: put off.
	if sweep := wantStatus(t, 1, e, "sweep"); !strings.Contains(sweep.stdout, "found 1 cancellation owed to the provider: 0 made, 1 still owed (1 put off until their next retry)\n") {
		t.Errorf("sweep:\n%s", sweep.stdout)
	}

	// A retry the provider leaves unanswered changes no row: the list still says
	// since when the cancellation is owed, and when the backoff tries it next.
	if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); !owed {
		t.Fatalf("a retry while the provider is down: owed %v, %v", owed, err)
	}
	settle(t, w, p, outstanding[0])
	later := decode[ctl.CancellationList](t, must(t, e, "cancellations", "--json"))
	if later.Count != 1 || !later.Cancellations[0].OwedAt.Equal(owedAt) || !later.Cancellations[0].Due.Equal(owedAt.Add(3*time.Minute)) || !later.Cancellations[0].Due.After(later.Now) {
		t.Errorf("cancellations after a retry put off: %+v; want it owed since %v, tried next 3 minutes after, after now", later, owedAt)
	}
	if r := must(t, e, "cancellations"); !strings.Contains(r.stdout, timestamp(owedAt)) || !strings.Contains(r.stdout, timestamp(later.Cancellations[0].Due)) {
		t.Errorf("cancellations after a retry put off, want it owed since %s and tried next at %s:\n%s",
			timestamp(owedAt), timestamp(later.Cancellations[0].Due), r.stdout)
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
