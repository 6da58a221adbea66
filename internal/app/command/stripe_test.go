package command_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// unavailable answers the cancellations of PaymentIntents with Stripe's 503 (an
// api_error, which stripe-go does not retry itself) while failures is not zero
// (-1: always), and passes every other request, and the cancellations after that,
// on to stripe-mock.
type unavailable struct {
	next http.RoundTripper

	mu       sync.Mutex
	failures int
	cancels  int // cancellations that reached stripe-mock
	refused  int // cancellations answered 503
}

func (u *unavailable) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/payment_intents/") || !strings.HasSuffix(r.URL.Path, "/cancel") {
		return u.next.RoundTrip(r)
	}
	u.mu.Lock()
	fail := u.failures != 0
	if fail {
		u.failures--
		u.refused++
	} else {
		u.cancels++
	}
	u.mu.Unlock()
	if !fail {
		return u.next.RoundTrip(r)
	}
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := `{"error":{"type":"api_error","message":"Stripe is briefly unavailable"}}`
	return &http.Response{
		StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_outage"}, "Stripe-Should-Retry": {"false"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: r, ContentLength: int64(len(body)),
	}, nil
}

func (u *unavailable) set(failures int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failures = failures
}

func (u *unavailable) counts() (refused, cancels int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.refused, u.cancels
}

// TestStripeCancellationsThroughAnOutage runs cancellations through the real Stripe
// adapter against stripe-mock, with Stripe answering 503 to the cancellations for a
// while: twice, which the command's own retries ride out, and then for good, which
// leaves the cancellation owed until Stripe answers again.
func TestStripeCancellationsThroughAnOutage(t *testing.T) {
	mock := stripemock.Start(t)
	outage := &unavailable{next: http.DefaultTransport}
	provider, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: "whsec_test_outage", APIURL: mock.URL,
		HTTPClient: &http.Client{Transport: outage}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := eventstore.NewMemory()
	h := command.New(store, command.WithProvider(provider), command.WithCancelRetry(quickRetry))

	t.Run("briefly", func(t *testing.T) {
		ref := preparedFor(t, h, "s1")
		outage.set(2)
		res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if refused, cancels := outage.counts(); refused != 2 || cancels != 1 {
			t.Errorf("Stripe refused %d cancellations and made %d; want 2, then 1", refused, cancels)
		}
		if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled"}) || res.State.CancellationDue() {
			t.Errorf("recorded %v, state %+v; want PaymentCancelled alone, nothing owed", got, res.State)
		}
	})

	t.Run("for good, then back", func(t *testing.T) {
		ref := preparedFor(t, h, "s2")
		outage.set(-1)
		res, err := h.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
		if err != nil || !res.State.CancellationDue() || res.State.Status != payment.StatusCancelled {
			t.Fatalf("a cancellation Stripe never answered: %+v, %v; want cancelled, owed", res.State, err)
		}
		owed, err := h.RetryCancellation(ctx, ref, command.Meta{})
		if !owed || err == nil || !strings.Contains(err.Error(), "HTTP 503") || strings.Contains(err.Error(), stripemock.SecretKey) {
			t.Errorf("a retry while Stripe is down: owed %v, %v", owed, err)
		}
		outage.set(0)
		_, before := outage.counts()
		if owed, err := h.RetryCancellation(ctx, ref, command.Meta{}); owed || err != nil {
			t.Fatalf("a retry once Stripe is back: owed %v, %v", owed, err)
		}
		if _, after := outage.counts(); after != before+1 {
			t.Errorf("%d cancellations reached Stripe, want 1", after-before)
		}
		if got := types(t, store, ref); !slices.Equal(got, []string{"PaymentCancelled", "CancellationOwedAtProvider", "CancellationStillOwed", "CancellationDoneAtProvider"}) {
			t.Errorf("recorded %v", got)
		}
	})
}
