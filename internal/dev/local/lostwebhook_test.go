package local_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// TestALostStripeWebhookNeverCostsAPayingRenterTheBike runs the service as it is
// deployed, on the local stack (the functions' own builders, moto's stream, the
// periodic sweep), with PAYMENT_PROVIDER=stripe and STRIPE_API_URL pointing at a
// Stripe that remembers (stripe-mock behind stripemock.Stateful): the renter pays
// the PaymentIntent with its client secret, as Stripe.js does, and Stripe's webhook
// never comes. Seen as a client sees it: once the payment's deadline passes, the
// rental is approved (the sweep asks Stripe to cancel, Stripe says the payment
// succeeded, and that word is recorded), the renter is no longer offered the client
// secret, and Stripe was asked to cancel, and read, at most twice each: the rental
// was settled within two sweeps of its deadline and never asked about again.
func TestALostStripeWebhookNeverCostsAPayingRenterTheBike(t *testing.T) {
	const sweepEvery, timeout = time.Second, 3 * time.Second
	paid := &stripemock.Stateful{Next: http.DefaultTransport}
	stripeAPI := paid.Serve(t, stripemock.Start(t).URL)

	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	env := map[string]string{
		wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvDeadlinesTable: emulatortest.TableName(t, "deadlines"),
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret, wiring.EnvPaymentTimeout: timeout.String(),
		paymentfn.EnvProvider: paymentfn.Stripe, paymentfn.EnvStripeAPIURL: stripeAPI,
	}
	sweeps := &counted{}
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: sweepEvery, Logger: slog.New(slog.DiscardHandler),
		Wrap: func(function string, inv local.Invoker) local.Invoker {
			if function == lambdas.Sweep {
				sweeps.Invoker = inv
				return sweeps
			}
			return inv
		}})
	if err != nil {
		t.Fatal(err)
	}
	c := newStackClient(t, serve(t, ctx, cancel, up))

	if code := c.send("PUT", "/bikes/lost-webhook", nil, nil, nil); code != http.StatusCreated {
		t.Fatalf("register the bike: %d", code)
	}
	token, err := c.tokens.Renter(context.Background(), "renter-lost-webhook")
	if err != nil {
		t.Fatal(err)
	}
	renter := http.Header{"Authorization": {auth.Bearer(token)}, "Content-Type": {"application/json"}}
	var requested struct{ RentalID string }
	if code := c.send("POST", "/rentals", []byte(`{"bikeId":"lost-webhook"}`), renter, &requested); code != http.StatusAccepted {
		t.Fatalf("request the bike: %d", code)
	}
	type view struct {
		Status  string
		Payment *struct{ PaymentID, ClientSecret string }
	}
	var v view
	c.waitFor("the payment to be offered to the renter", func() bool {
		v = view{}
		c.send("GET", "/rentals/"+requested.RentalID, nil, renter, &v)
		return v.Status == "awaiting-payment" && v.Payment != nil && v.Payment.ClientSecret != ""
	})

	// The renter pays, as Stripe.js does, and Stripe's webhook is lost.
	res, err := http.PostForm(stripeAPI+"/v1/payment_intents/"+v.Payment.PaymentID+"/confirm", url.Values{"client_secret": {v.Payment.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the renter's payment at Stripe: %d", res.StatusCode)
	}

	approved := await(func() bool {
		v = view{} // a member the answer leaves out must not keep an earlier answer's value
		c.send("GET", "/rentals/"+requested.RentalID, nil, renter, &v)
		return v.Status == "approved"
	})
	if cancels, retrieves := paid.Counts(); !approved {
		t.Fatalf("the rental is %s long after its payment's deadline, and Stripe was asked to cancel %d times and read %d times", v.Status, cancels, retrieves)
	}
	if v.Payment == nil || v.Payment.ClientSecret != "" {
		t.Errorf("the renter's view of the approved rental: %+v; want its payment, and nothing to pay with", v.Payment)
	}
	// Two sweeps more, begun after the approval: neither may ask Stripe about the
	// settled payment again.
	cancels, retrieves := paid.Counts()
	after := sweeps.started() + 2
	c.waitFor("two sweeps after the approval", func() bool { return sweeps.ended() >= after })
	if c2, r2 := paid.Counts(); c2 != cancels || r2 != retrieves || cancels < 1 || cancels > 2 || retrieves > 2 {
		t.Errorf("Stripe was asked to cancel %d then %d times and read %d then %d times; want at most twice each, and nothing after the approval", cancels, c2, retrieves, r2)
	}
}

// counted is an invoker that counts the invocations it began and ended.
type counted struct {
	local.Invoker
	mu          sync.Mutex
	begun, done int
}

func (c *counted) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	c.mu.Lock()
	c.begun++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.done++
		c.mu.Unlock()
	}()
	return c.Invoker.Invoke(ctx, payload)
}

func (c *counted) started() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.begun
}

// ended is how many invocations ended: once it reaches started()+n as read at some
// moment, n invocations begun after that moment have ended.
func (c *counted) ended() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}
