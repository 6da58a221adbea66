// Package demo is a narrated walk-through of the bike-rental service that a
// newcomer can follow. It runs against a running local stack over HTTP (make run)
// and tells, step by step, what each request does and why: renters and an operator
// sign in; bikes are registered; a request without a token is refused; a bike is
// rented, kept private from other renters, paid for through a signed webhook and
// returned, while a second request by the same renter is refused; a second
// renter's payment never arrives and the sweep gives up on it; a late cancel
// changes nothing; a third renter's payment succeeds only after the sweep gave up
// on it, and the money goes back while the rental stays cancelled; and each
// rental's audit trail is printed.
//
// The demo plays the payment provider, which reports each payment's outcome with a
// signed webhook: the generic provider (POST /webhooks/payments, signed with
// Payment-Signature) by default, or Stripe (POST /webhooks/stripe, Stripe's events
// signed with Stripe-Signature) when the stack runs with PAYMENT_PROVIDER=stripe.
//
// The same code is the end-to-end test's scenario: Run checks the outcome of every
// step and returns an error describing the first expectation that did not hold.
package demo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	stripehook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// Config says where the stack is and how to talk to it.
type Config struct {
	BaseURL       string // the API's base URL, e.g. "http://127.0.0.1:3000"; a local stack, whose POST /local/tokens issues the tokens
	WebhookSecret []byte // the generic payment provider's shared secret (PAYMENT_WEBHOOK_SECRET)
	// Provider is the stack's payment provider (its PAYMENT_PROVIDER), which the
	// demo plays: "" or "generic", or "stripe".
	Provider string
	// StripeWebhookSecret is the signing secret of the stack's Stripe webhook
	// endpoint (STRIPE_WEBHOOK_SECRET); required when Provider is "stripe".
	StripeWebhookSecret []byte
	Out                 io.Writer     // the narration; nil discards it
	Wait                time.Duration // how long to wait for each asynchronous step before failing; 0 means 60s
	Client              *http.Client  // nil: a client with a 10s timeout
}

// pollInterval is how often an asynchronous step is checked.
const pollInterval = 200 * time.Millisecond

// Who sends a request: the three renters, the operator, or nobody (no token).
const (
	alice    = "alice"
	bob      = "bob"
	carol    = "carol"
	operator = "ops"
	nobody   = ""
)

// The events each rental's history must contain, in this order.
var (
	aliceTrail = types(rental.BikeRequested{}, payment.PaymentPrepared{}, rentalpayment.RentalPaymentRequested{}, payment.PaymentConfirmed{},
		rental.RequestApproved{}, rentalpayment.RentalPaymentProcessCompleted{}, rental.BikeReturned{})
	bobTrail = types(rental.BikeRequested{}, payment.PaymentPrepared{}, rentalpayment.RentalPaymentRequested{}, payment.PaymentCancelled{},
		rental.RequestRejected{}, rentalpayment.RentalPaymentProcessCompleted{})
	// carolTrail is Bob's, then the success that came too late and the refund: owed
	// with the generic provider, which cannot refund; requested from Stripe, then
	// confirmed by it.
	carolTrail = map[string][]string{
		generic.Name: append(slices.Clone(bobTrail), types(payment.PaymentSucceededAfterCancellation{}, payment.RefundOwed{})...),
		stripe.Name:  append(slices.Clone(bobTrail), types(payment.PaymentSucceededAfterCancellation{}, payment.RefundRequested{}, payment.PaymentRefunded{})...),
	}
)

// types returns the stored types of events, in order.
func types(events ...interface{ EventType() string }) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EventType()
	}
	return out
}

// Run tells the story against cfg.BaseURL and returns nil only if every step had
// the expected outcome. Each run uses new bikes, so it can run again against the
// same stack. Bob's and Carol's payments must time out within cfg.Wait, so the
// stack's PAYMENT_TIMEOUT plus its SWEEP_INTERVAL must be shorter than cfg.Wait; and
// the stack must allow one outstanding request per renter (MAX_PENDING_PER_RENTER=1,
// the default). cfg.Provider must be the stack's PAYMENT_PROVIDER.
func Run(ctx context.Context, cfg Config) error {
	if cfg.BaseURL == "" {
		return errors.New("demo: Config.BaseURL is required")
	}
	switch cfg.Provider {
	case "", generic.Name:
		cfg.Provider = generic.Name
	case stripe.Name:
		if len(cfg.StripeWebhookSecret) == 0 {
			return errors.New("demo: Config.StripeWebhookSecret is required with the Stripe provider")
		}
	default:
		return fmt.Errorf("demo: Config.Provider %q: want %s or %s", cfg.Provider, generic.Name, stripe.Name)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 60 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	d := &demo{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), bike: randomID("demo-bike-", 6), spare: randomID("demo-bike-", 6),
		stripe: cfg.Provider == stripe.Name}
	d.issuer = &auth.Tokens{BaseURL: d.base, Client: cfg.Client}
	fmt.Fprintf(cfg.Out, "Bike-rental demo against %s\nThis run uses bikes %s and %s, renters %s, %s and %s, and an operator, %s.\n",
		d.base, d.bike, d.spare, alice, bob, carol, operator)
	if d.stripe {
		fmt.Fprintln(cfg.Out, "Payments go through Stripe (PAYMENT_PROVIDER=stripe); the demo plays Stripe's side and sends its signed events.")
	} else {
		fmt.Fprintln(cfg.Out, "Payments go through the generic provider (PAYMENT_PROVIDER unset or generic); the demo plays it and sends its signed events.")
	}
	steps := []struct {
		title string
		run   func(context.Context) error
	}{
		{"Renters and operators sign in", d.signIn},
		{"An operator registers two bikes", d.register},
		{"Alice asks for a bike", d.aliceRequests},
		{"Bob cannot read Alice's rental", d.private},
		{"Alice tries a second bike while her payment is pending", d.oneAtATime},
		{"The payment provider confirms Alice's payment", d.confirm},
		{"Alice returns the bike", d.giveBack},
		{"Bob asks for the bike, but his payment never arrives", d.bobTimesOut},
		{"A late cancel changes nothing", d.lateCancel},
		{"Carol's payment succeeds after the sweep gave up on it", d.latePayment},
		{"The audit trail", d.audit},
	}
	for i, s := range steps {
		fmt.Fprintf(cfg.Out, "\n%d. %s\n", i+1, s.title)
		if err := s.run(ctx); err != nil {
			fmt.Fprintf(cfg.Out, "   FAILED: %v\n", err)
			return fmt.Errorf("demo step %d (%s): %w", i+1, s.title, err)
		}
	}
	fmt.Fprintln(cfg.Out, "\nEvery step had the expected outcome.")
	return nil
}

type demo struct {
	cfg               Config
	base, bike, spare string
	stripe            bool // the stack takes payments through Stripe
	issuer            *auth.Tokens
	tokens            map[string]string // by who: alice, bob, carol, operator
	alice, bob, carol rentalAccepted
}

type rentalAccepted struct {
	RentalID         string `json:"rentalId"`
	BikeID           string `json:"bikeId"`
	Renter           string `json:"renter"`
	Status           string `json:"status"`
	PaymentReference string `json:"paymentReference"`
}

// problemBody is the part of an application/problem+json answer the demo checks.
type problemBody struct {
	Type string `json:"type"`
}

// entry is one event of a rental's history, as GET /rentals/{id} shows it.
type entry struct {
	At      time.Time       `json:"at"`
	Stream  string          `json:"stream"`
	Version int64           `json:"version"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
}

type rentalView struct {
	Status  string       `json:"status"`
	Payment *paymentView `json:"payment"`
	History []entry      `json:"history"`
}

// paymentView is a rental's payment as GET /rentals/{id} shows it: what a client
// needs to pay it, and where money that came after it was given up on stands.
type paymentView struct {
	PaymentID    string `json:"paymentId"`
	ClientSecret string `json:"clientSecret"`
	Status       string `json:"status"`
	Refund       string `json:"refund"`
	// amount and currency are the payment's, from its PaymentPrepared: what the
	// demo's Stripe events say was paid.
	amount   int64
	currency string
}

// webhookAnswer is the service's answer to an authentic provider event.
type webhookAnswer struct {
	EventID          string `json:"eventId"`
	PaymentReference string `json:"paymentReference"`
	Status           string `json:"status"`
	Refund           string `json:"refund"`
	Duplicate        bool   `json:"duplicate"`
}

// has reports whether the history holds an event of the type.
func (v rentalView) has(eventType string) bool {
	return slices.ContainsFunc(v.History, func(e entry) bool { return e.Type == eventType })
}

func (d *demo) say(text string) {
	for _, l := range wrap(text, 76) {
		if l != "" {
			l = "   " + l
		}
		fmt.Fprintln(d.cfg.Out, l)
	}
}

func (d *demo) signIn(ctx context.Context) error {
	d.say("Renters sign in with the service's identity provider and send the bearer token it gives them with every request of theirs, in the Authorization header. The API checks the token before the service sees the request, and the renter is the token's subject: nobody can ask or read for somebody else. Operators have tokens of their own, which carry the operator scope that operator routes require. Only the public bike view and the payment provider's signed webhooks need no token.")
	d.say("A deployed stack's identity provider is a Cognito user pool; this local stack plays one, and hands out tokens at POST " + auth.TokenPath + ":")
	d.tokens = map[string]string{}
	for _, who := range []string{alice, bob, carol, operator} {
		get, body := d.issuer.Renter, fmt.Sprintf(`{"sub":%q}`, who)
		if who == operator {
			get, body = d.issuer.Operator, fmt.Sprintf(`{"sub":%q,"operator":true}`, who)
		}
		fmt.Fprintf(d.cfg.Out, "   > POST %s  %s\n", auth.TokenPath, body)
		token, err := get(ctx, who)
		if err != nil {
			return err
		}
		d.tokens[who] = token
		fmt.Fprintf(d.cfg.Out, "   < 200 OK  a signed JWT, %s\n", describeToken(token))
	}
	d.say("From here on, every request shows whose token it carries.")
	return nil
}

// describeToken summarises a JWT's claims for the narration: subject, scope and
// lifetime. It does not verify the token; the API does.
func describeToken(token string) string {
	parts := strings.Split(token, ".")
	var claims struct {
		Sub   string `json:"sub"`
		Scope string `json:"scope"`
		Iat   int64  `json:"iat"`
		Exp   int64  `json:"exp"`
	}
	if len(parts) != 3 {
		return "not a JWT"
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(raw, &claims) != nil {
		return "with claims that do not decode"
	}
	s := "sub=" + claims.Sub
	if claims.Scope != "" {
		s += " scope=" + claims.Scope
	}
	if claims.Exp > claims.Iat && claims.Iat > 0 {
		s += ", valid for " + shortDuration(time.Duration(claims.Exp-claims.Iat)*time.Second)
	}
	return s
}

// shortDuration writes d as time.Duration does, without zero minutes and seconds
// after whole hours or minutes: "1h", "1h30m", "90s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d *demo) register(ctx context.Context) error {
	d.say("An operator adds two new bikes to the fleet, with the operator's token. Every change in this service is stored as an event: registering a bike writes BikeRegistered to the bike's own event stream.")
	for _, id := range []string{d.bike, d.spare} {
		var bike struct{ BikeID, Status string }
		if err := d.expect(ctx, operator, "PUT", "/bikes/"+id, nil, nil, http.StatusCreated, &bike); err != nil {
			return err
		}
		if err := same("the new bike's status", bike.Status, "available"); err != nil {
			return err
		}
	}
	d.say("Anyone may look at a bike, without a token. The public view says only whether the bike can be requested, and nothing about who has it:")
	return d.publicBike(ctx, d.bike, true)
}

func (d *demo) aliceRequests(ctx context.Context) (err error) {
	d.say("Alice asks to rent the first bike, but forgets to sign in. Without a token the request is refused with 401 before it reaches the service.")
	body, _ := json.Marshal(map[string]string{"bikeId": d.bike})
	hdr := http.Header{"Content-Type": {"application/json"}}
	var p problemBody
	if err := d.expect(ctx, nobody, "POST", "/rentals", body, hdr, http.StatusUnauthorized, &p); err != nil {
		return err
	}
	if err := sameSuffix("the problem type", p.Type, "#problem-unauthenticated"); err != nil {
		return err
	}
	d.say("Now with her token. The body names only the bike: the renter is whoever the token says. The service holds the bike for her and answers 202 Accepted at once; the rest happens in the background. The Idempotency-Key header makes a retry of this request safe: it gets the same answer instead of an error.")
	if d.alice, err = d.request(ctx, alice, d.bike, http.StatusAccepted); err != nil {
		return err
	}
	d.say("Alice's rental is " + d.alice.RentalID + "; its payment reference is rp_ and the rental id. The rental-payment process reacts to the BikeRequested event and prepares a payment. We wait for that, reading the rental with Alice's token.")
	_, err = d.waitStatus(ctx, alice, "/rentals/"+d.alice.RentalID, "awaiting-payment")
	return err
}

// request asks for bike as renter with a fresh Idempotency-Key, requiring the
// status want; only a 202 is decoded and checked.
func (d *demo) request(ctx context.Context, renter, bike string, want int) (rentalAccepted, error) {
	body, _ := json.Marshal(map[string]string{"bikeId": bike})
	hdr := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {randomID("demo-"+renter+"-", 12)}}
	var r rentalAccepted
	if want != http.StatusAccepted {
		var p problemBody
		if err := d.expect(ctx, renter, "POST", "/rentals", body, hdr, want, &p); err != nil {
			return r, err
		}
		r.Status = p.Type // the problem type, for the caller to check
		return r, nil
	}
	if err := d.expect(ctx, renter, "POST", "/rentals", body, hdr, want, &r); err != nil {
		return r, err
	}
	if r.RentalID == "" || r.BikeID != bike || r.Renter != renter || r.PaymentReference != "rp_"+r.RentalID {
		return r, fmt.Errorf("POST /rentals: unexpected answer %+v", r)
	}
	return r, nil
}

func (d *demo) private(ctx context.Context) error {
	d.say("A rental is private to its renter (and to operators). Bob, signed in as himself, asks for Alice's rental. The answer is 404, exactly as for a rental that does not exist, so Bob cannot even learn that it does.")
	var p problemBody
	if err := d.expect(ctx, bob, "GET", "/rentals/"+d.alice.RentalID, nil, nil, http.StatusNotFound, &p); err != nil {
		return err
	}
	return sameSuffix("the problem type", p.Type, "#problem-rental-not-found")
}

func (d *demo) oneAtATime(ctx context.Context) error {
	d.say("While her first request is outstanding (requested, or awaiting payment), Alice may not make another: a renter may have one at a time (MAX_PENDING_PER_RENTER), so that nobody can hold the fleet with requests they never pay for. Her request for the second bike is refused with 409 until the first settles, and that bike stays available.")
	r, err := d.request(ctx, alice, d.spare, http.StatusConflict)
	if err != nil {
		return fmt.Errorf("%w (the stack must allow one outstanding request per renter, MAX_PENDING_PER_RENTER=1)", err)
	}
	if err := sameSuffix("the problem type", r.Status, "#problem-too-many-pending-requests"); err != nil {
		return err
	}
	return d.publicBike(ctx, d.spare, true)
}

func (d *demo) confirm(ctx context.Context) error {
	pay, err := d.payment(ctx, d.alice)
	if err != nil {
		return err
	}
	if d.stripe {
		d.say("This stack takes payments through Stripe. Preparing the payment created a PaymentIntent at Stripe (here stripe-mock, Stripe's API mock), and Alice's rental shows her what her app needs to pay it: the PaymentIntent's id, " + pay.PaymentID + ", and its client secret, which her app hands to Stripe's own payment form. Only Alice is shown the client secret: an operator reading the same rental is not.")
		var v rentalView
		if err := d.expect(ctx, operator, "GET", "/rentals/"+d.alice.RentalID, nil, nil, http.StatusOK, &v); err != nil {
			return err
		}
		if v.Payment == nil || v.Payment.PaymentID != pay.PaymentID || v.Payment.ClientSecret != "" {
			return fmt.Errorf("the operator's view of Alice's payment: want paymentId %s and no client secret, got %+v", pay.PaymentID, v.Payment)
		}
		fmt.Fprintf(d.cfg.Out, "     payment: paymentId=%s status=%s, and no clientSecret\n", v.Payment.PaymentID, v.Payment.Status)
		d.say("Stripe tells the service that Alice paid by calling its webhook, POST /webhooks/stripe, with a payment_intent.succeeded event. It has no token: anyone could call that URL, so every call is signed instead. The Stripe-Signature header carries a timestamp and an HMAC-SHA256 of the timestamp and the body, made with the endpoint's signing secret, which only Stripe and the service know. stripe-mock sends no events, so the demo plays Stripe and sends the event Stripe would send, signed as Stripe signs it.")
	} else {
		d.say("Alice's rental shows the payment the provider will report on, " + pay.PaymentID + ": her app names it when she pays at the provider. Then the provider tells the service that Alice paid by calling a webhook, POST /webhooks/payments, with the event payment.succeeded: its own event id, the type and the payment reference. It has no token: anyone could call that URL, so every call is signed instead. The Payment-Signature header carries a timestamp and an HMAC-SHA256 of the timestamp and the whole body, made with a secret only the provider and the service know.")
	}
	ev, err := d.paymentSucceeded(d.alice, pay)
	if err != nil {
		return err
	}
	d.say("First a forged call, signed with the wrong secret. It must be refused and change nothing.")
	wrong := append([]byte("not-the-provider-secret-"), d.secret()...)
	if err := d.deliver(ctx, ev, wrong, http.StatusUnauthorized, nil); err != nil {
		return err
	}
	var v rentalView
	if err := d.expect(ctx, alice, "GET", "/rentals/"+d.alice.RentalID, nil, nil, http.StatusOK, &v); err != nil {
		return err
	}
	if err := same("Alice's rental after the forged call", v.Status, "awaiting-payment"); err != nil {
		return err
	}
	if v.has(payment.PaymentConfirmed{}.EventType()) {
		return errors.New("the forged webhook confirmed the payment")
	}
	d.say("Still awaiting payment. Now the genuine call, signed with the shared secret:")
	if _, err := d.deliverChecked(ctx, ev, d.alice, "confirmed", "", false); err != nil {
		return err
	}
	d.say("The service applied the event once and recorded its receipt with it, under the provider's event id: were the provider to deliver it again, it would change nothing. The process sees PaymentConfirmed, approves Alice's request and records that it is done. We wait for the rental to be approved.")
	if _, err := d.waitStatus(ctx, alice, "/rentals/"+d.alice.RentalID, "approved"); err != nil {
		return err
	}
	d.say("The bike is Alice's now. The public view says only that it is not available, not who has it:")
	return d.publicBike(ctx, d.bike, false)
}

// payment reads r's rental as its renter and returns its payment, which must be
// prepared: with the provider's payment id, and for Stripe a PaymentIntent's id
// and its client secret, which the renter alone is shown.
func (d *demo) payment(ctx context.Context, r rentalAccepted) (paymentView, error) {
	var v rentalView
	if err := d.expect(ctx, r.Renter, "GET", "/rentals/"+r.RentalID, nil, nil, http.StatusOK, &v); err != nil {
		return paymentView{}, err
	}
	p := v.Payment
	switch {
	case p == nil || p.Status != string(payment.StatusPrepared):
		return paymentView{}, fmt.Errorf("GET /rentals/%s: want a prepared payment, got %+v", r.RentalID, p)
	case d.stripe && (!strings.HasPrefix(p.PaymentID, "pi_") || p.ClientSecret == ""):
		return paymentView{}, fmt.Errorf("GET /rentals/%s: want a PaymentIntent (pi_...) and its client secret, got paymentId %q and %s (is the stack's PAYMENT_PROVIDER stripe?)",
			r.RentalID, p.PaymentID, map[bool]string{true: "a client secret", false: "none"}[p.ClientSecret != ""])
	case !d.stripe && (p.PaymentID == "" || strings.HasPrefix(p.PaymentID, "pi_")):
		return paymentView{}, fmt.Errorf("GET /rentals/%s: want the generic provider's payment id, got %q (is the stack's PAYMENT_PROVIDER stripe?)", r.RentalID, p.PaymentID)
	}
	fmt.Fprintf(d.cfg.Out, "     payment: paymentId=%s status=%s%s\n", p.PaymentID, p.Status,
		map[bool]string{true: " clientSecret=<shown to " + r.Renter + " alone>", false: ""}[p.ClientSecret != ""])
	for _, e := range v.History {
		var prepared struct {
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		}
		if e.Type == (payment.PaymentPrepared{}).EventType() && json.Unmarshal(e.Data, &prepared) == nil {
			p.amount, p.currency = prepared.Amount, strings.ToLower(prepared.Currency)
		}
	}
	if p.amount <= 0 || p.currency == "" {
		return paymentView{}, fmt.Errorf("GET /rentals/%s: the history shows no PaymentPrepared with an amount", r.RentalID)
	}
	return *p, nil
}

func (d *demo) giveBack(ctx context.Context) error {
	d.say("Alice brings the bike back, and an operator takes it in: returns are an operator route. The return names her rental, so that a retry after a lost answer cannot end the next renter's rental. Operators see the bike's full status; it is available for the next renter.")
	var bike struct{ Status string }
	body := []byte(`{"rentalId": "` + d.alice.RentalID + `"}`)
	if err := d.expect(ctx, operator, "POST", "/bikes/"+d.bike+"/return", body, http.Header{"Content-Type": {"application/json"}}, http.StatusOK, &bike); err != nil {
		return err
	}
	return same("the returned bike's status", bike.Status, "available")
}

func (d *demo) bobTimesOut(ctx context.Context) (err error) {
	d.say("Bob asks for the same bike, with his token. As for Alice, a payment is prepared.")
	if d.bob, err = d.request(ctx, bob, d.bike, http.StatusAccepted); err != nil {
		return err
	}
	if _, err = d.waitStatus(ctx, bob, "/rentals/"+d.bob.RentalID, "awaiting-payment"); err != nil {
		return err
	}
	d.say("An outstanding payment has a row in the pending-payment list, a projection that the projector builds from payment events alone. Operators can read it, with the operator's token:")
	if err := d.showPending(ctx); err != nil {
		return err
	}
	d.say("The payment provider never calls back. Nothing was scheduled for this payment. Instead a sweep runs every few seconds (SWEEP_INTERVAL), reads the payments older than PAYMENT_TIMEOUT from that list, and for each sends the command an operator could send: CancelRentalPayment. The payment is cancelled first; only that event makes the process reject the request and release the bike. We wait for both.")
	if _, err := d.waitStatus(ctx, bob, "/rentals/"+d.bob.RentalID, "cancelled"); err != nil {
		return fmt.Errorf("%w (the stack's PAYMENT_TIMEOUT plus SWEEP_INTERVAL must be shorter than Config.Wait, %v)", err, d.cfg.Wait)
	}
	return d.waitAvailable(ctx, d.bike)
}

// showPending shows Bob's row in GET /payments/pending. It waits for the projector
// to add it, and moves on if the sweep removed it first or the stack has no
// projection (501).
func (d *demo) showPending(ctx context.Context) error {
	path := "/payments/pending?limit=1000"
	fmt.Fprintf(d.cfg.Out, "   > GET %s   (as %s; repeated every %v until Bob's payment is listed)\n", path, operator, pollInterval)
	var report func() // what to narrate once the poll is over
	start := time.Now()
	err := d.poll(ctx, func() (bool, string, error) {
		status, body, err := d.send(ctx, operator, "GET", path, nil, nil)
		if err != nil {
			return false, err.Error(), nil
		}
		switch status {
		case http.StatusNotImplemented:
			report = func() {
				fmt.Fprintln(d.cfg.Out, "   < 501 Not Implemented")
				d.say("This stack has no pending-payment projection configured, so the list cannot be shown. Moving on.")
			}
			return true, "", nil
		case http.StatusOK:
		default:
			return false, describe(status, body), nil
		}
		var list struct {
			Payments []struct {
				PaymentReference, RentalID string
				PreparedAt                 time.Time
				AgeSeconds                 int64
			}
			Count int
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return false, "", fmt.Errorf("GET %s: %v: %s", path, err, clip(body, 200))
		}
		for _, p := range list.Payments {
			if p.PaymentReference == d.bob.PaymentReference {
				line := fmt.Sprintf("   < 200 OK after %s: %d outstanding; Bob's: %s, rental %s, prepared %s UTC, %ds old",
					since(start), list.Count, p.PaymentReference, p.RentalID, p.PreparedAt.UTC().Format("15:04:05.000"), p.AgeSeconds)
				report = func() { fmt.Fprintln(d.cfg.Out, line) }
				return true, "", nil
			}
		}
		if s, err := d.status(ctx, bob, "/rentals/"+d.bob.RentalID); err == nil && s != "awaiting-payment" {
			report = func() {
				d.say("Bob's payment is no longer listed: the rental is already " + s + ". PAYMENT_TIMEOUT must be very short on this stack, and the sweep was quicker than us.")
			}
			return true, "", nil
		}
		return false, fmt.Sprintf("200 OK, %d outstanding, not Bob's", list.Count), nil
	})
	if err != nil {
		return fmt.Errorf("the pending list never showed Bob's payment: %w", err)
	}
	report()
	return nil
}

func (d *demo) lateCancel(ctx context.Context) error {
	d.say("An operator who did not see that the sweep already acted cancels Bob's payment by hand. Cancelling is a request, not a fact: it is safe to send twice, or late. Bob's process has already ended, so there is nothing to do. Alice's finished rental answers the same.")
	for _, r := range []rentalAccepted{d.bob, d.alice} {
		var res struct{ RentalID, Outcome string }
		if err := d.expect(ctx, operator, "POST", "/rentals/"+r.RentalID+"/cancel-payment", nil, nil, http.StatusOK, &res); err != nil {
			return err
		}
		if err := same(r.Renter+"'s cancel outcome", res.Outcome, "nothing-to-do"); err != nil {
			return err
		}
	}
	d.say("And the bike is still available:")
	return d.publicBike(ctx, d.bike, true)
}

func (d *demo) latePayment(ctx context.Context) (err error) {
	d.say("Carol asks for the same bike, with her token, and a payment is prepared for her as for the others.")
	if d.carol, err = d.request(ctx, carol, d.bike, http.StatusAccepted); err != nil {
		return err
	}
	if _, err = d.waitStatus(ctx, carol, "/rentals/"+d.carol.RentalID, "awaiting-payment"); err != nil {
		return err
	}
	pay, err := d.payment(ctx, d.carol)
	if err != nil {
		return err
	}
	d.say("Carol pays, but her payment is slow: her bank asks her to approve it, say, and she takes her time. The provider has said nothing when PAYMENT_TIMEOUT has passed, so the sweep gives up on the payment as it did on Bob's: it cancels it, the process rejects the request and the bike is released for the next renter.")
	if d.stripe {
		d.say("With Stripe the cancellation reaches Stripe too: the sweep cancels the PaymentIntent there first (stripe-mock agrees). A real PaymentIntent may succeed all the same, when the cancellation crosses the payment or times out.")
	}
	if _, err := d.waitStatus(ctx, carol, "/rentals/"+d.carol.RentalID, "cancelled"); err != nil {
		return fmt.Errorf("%w (the stack's PAYMENT_TIMEOUT plus SWEEP_INTERVAL must be shorter than Config.Wait, %v)", err, d.cfg.Wait)
	}
	if err := d.waitAvailable(ctx, d.bike); err != nil {
		return err
	}
	d.say("Then Carol's approval goes through, and the provider reports that her payment succeeded: a late payment. The service answers 200 all the same, because the event is authentic and about a payment it knows, and a provider that is not answered 200 delivers the event again and again. But the rental stays cancelled, because the bike was released and may be someone else's by now, and the money Carol paid must go back to her.")
	late, err := d.paymentSucceeded(d.carol, pay)
	if err != nil {
		return err
	}
	refund := "owed"
	if d.stripe {
		refund = "requested"
	}
	first, err := d.deliverChecked(ctx, late, d.carol, "cancelled", refund, false)
	if err != nil {
		return err
	}
	if d.stripe {
		d.say("The answer says refund \"requested\": the service recorded the success as PaymentSucceededAfterCancellation, not as a confirmation, and at once asked Stripe to refund the PaymentIntent in full (RefundRequested).")
	} else {
		d.say("The answer says refund \"owed\": the service recorded the success as PaymentSucceededAfterCancellation, not as a confirmation. The generic provider only calls back and cannot be asked for a refund, so the service records RefundOwed: operators find it with `rentalctl refunds`, and the RefundsOwed alarm fires until they have paid it back. The money is never kept silently.")
	}
	d.say("Providers deliver an event again when they are not sure it arrived. Delivered again, with the same event id and the same body, the event changes nothing and gets the same answer, marked duplicate:")
	again, err := d.deliverChecked(ctx, late, d.carol, first.Status, first.Refund, true)
	if err != nil {
		return err
	}
	if again.EventID != first.EventID {
		return fmt.Errorf("the redelivery answered event %q, the first delivery %q", again.EventID, first.EventID)
	}
	if d.stripe {
		d.say("Stripe refunds the PaymentIntent's charge and reports it with a charge.refunded event (played by the demo again: stripe-mock sends no events). The service records PaymentRefunded: the money is back with Carol.")
		refunded, err := d.chargeRefunded(d.carol, pay)
		if err != nil {
			return err
		}
		if _, err := d.deliverChecked(ctx, refunded, d.carol, "cancelled", "refunded", false); err != nil {
			return err
		}
		refund = "refunded"
	}
	d.say("Carol reads her rental: still cancelled, and its payment says where her money stands.")
	var v rentalView
	if err := d.expect(ctx, carol, "GET", "/rentals/"+d.carol.RentalID, nil, nil, http.StatusOK, &v); err != nil {
		return err
	}
	if v.Payment != nil {
		fmt.Fprintf(d.cfg.Out, "     payment: status=%s refund=%s\n", v.Payment.Status, v.Payment.Refund)
	}
	if err := d.checkLate(v, refund); err != nil {
		return err
	}
	d.say("And the bike was never handed over for Carol's late money: it is still available for the next renter.")
	return d.publicBike(ctx, d.bike, true)
}

// checkLate checks the view of Carol's rental after her late payment: cancelled,
// never approved nor confirmed, its payment cancelled and its refund as refund says.
func (d *demo) checkLate(v rentalView, refund string) error {
	if err := same("Carol's rental status", v.Status, "cancelled"); err != nil {
		return err
	}
	if v.Payment == nil {
		return errors.New("no payment shown on Carol's rental")
	}
	if err := same("Carol's payment status", v.Payment.Status, string(payment.StatusCancelled)); err != nil {
		return err
	}
	if err := same("Carol's refund", v.Payment.Refund, refund); err != nil {
		return err
	}
	for _, t := range types(rental.RequestApproved{}, payment.PaymentConfirmed{}) {
		if v.has(t) {
			return fmt.Errorf("the late payment of Carol's rental led to %s: the bike was handed over for it", t)
		}
	}
	return nil
}

func (d *demo) audit(ctx context.Context) error {
	d.say("GET /rentals/{id} shows a rental's status and every event that belongs to it, from three streams: the bike's (bike-...), the payment's (payment-rp_...) and the process's own (rentalpayment-...). A renter reads only their own rentals; an operator's token reads any, so the operator reads all three rentals. Each line: time (UTC), stream, version, event type, data.")
	for _, c := range []struct {
		r      rentalAccepted
		status string
		trail  []string
	}{{d.alice, "returned", aliceTrail}, {d.bob, "cancelled", bobTrail}, {d.carol, "cancelled", carolTrail[d.cfg.Provider]}} {
		var v rentalView
		fmt.Fprintln(d.cfg.Out)
		if err := d.expect(ctx, operator, "GET", "/rentals/"+c.r.RentalID, nil, nil, http.StatusOK, &v); err != nil {
			return err
		}
		fmt.Fprintf(d.cfg.Out, "   %s's rental: status %q (below, <rental> stands for %s)\n", c.r.Renter, v.Status, c.r.RentalID)
		for _, l := range formatHistory(v.History, c.r.RentalID) {
			fmt.Fprintln(d.cfg.Out, "     "+l)
		}
		if err := same(c.r.Renter+"'s rental status", v.Status, c.status); err != nil {
			return err
		}
		if err := checkHistory(v.History, c.trail); err != nil {
			return fmt.Errorf("%s's history: %w", c.r.Renter, err)
		}
		if c.r == d.carol {
			if err := d.checkLate(v, finalRefund(d.cfg.Provider)); err != nil {
				return err
			}
		}
	}
	d.say("\nThe trails hold the events they should, in order. Note the process's own events (RentalPaymentRequested, RentalPaymentProcessCompleted): it records what it did, so it can decide from those alone, and it has an explicit end. Carol's trail goes on after that end: her payment's stream records the success that came too late and where its money went, while her bike's stream never approved her request.")
	return d.publicBike(ctx, d.bike, true)
}

// finalRefund is where Carol's refund stands at the end of the story.
func finalRefund(provider string) string {
	if provider == stripe.Name {
		return "refunded"
	}
	return "owed"
}

// event is one provider event the demo delivers, playing the provider.
type event struct {
	path string // the provider's webhook route
	id   string // the provider's event id
	body []byte
}

// secret is the provider's webhook secret.
func (d *demo) secret() []byte {
	if d.stripe {
		return d.cfg.StripeWebhookSecret
	}
	return d.cfg.WebhookSecret
}

// signed returns the headers ev is delivered with, signed with secret now as its
// provider signs: Payment-Signature for the generic provider, Stripe-Signature
// (stripe-go's own signing) for Stripe.
func (d *demo) signed(ev event, secret []byte) http.Header {
	hdr := http.Header{"Content-Type": {"application/json"}}
	if d.stripe {
		p := stripehook.GenerateTestSignedPayload(&stripehook.UnsignedPayload{Payload: ev.body, Secret: string(secret), Timestamp: time.Now()})
		hdr.Set(stripe.SignatureHeader, p.Header)
	} else {
		hdr.Set(webhook.Header, generic.Sign(secret, ev.body, time.Now()))
	}
	return hdr
}

// deliver sends ev to its webhook, signed with secret, as the provider does: with
// no token.
func (d *demo) deliver(ctx context.Context, ev event, secret []byte, want int, out any) error {
	return d.expect(ctx, nobody, "POST", ev.path, ev.body, d.signed(ev, secret), want, out)
}

// deliverChecked delivers ev signed with the provider's secret and requires 200
// with the answer of an event applied to r's payment: the payment's status and
// refund after it, and whether this delivery repeated one already applied.
func (d *demo) deliverChecked(ctx context.Context, ev event, r rentalAccepted, status, refund string, duplicate bool) (webhookAnswer, error) {
	var ans webhookAnswer
	if err := d.deliver(ctx, ev, d.secret(), http.StatusOK, &ans); err != nil {
		if strings.Contains(err.Error(), "got 401") {
			if d.stripe {
				err = fmt.Errorf("%w (is Config.StripeWebhookSecret the stack's STRIPE_WEBHOOK_SECRET?)", err)
			} else {
				err = fmt.Errorf("%w (is Config.WebhookSecret the stack's PAYMENT_WEBHOOK_SECRET?)", err)
			}
		}
		return ans, err
	}
	want := webhookAnswer{EventID: ev.id, PaymentReference: r.PaymentReference, Status: status, Refund: refund, Duplicate: duplicate}
	if ans != want {
		return ans, fmt.Errorf("POST %s: want the answer %+v, got %+v", ev.path, want, ans)
	}
	return ans, nil
}

// paymentSucceeded is the provider's event that r's payment succeeded, under a new
// event id: the generic provider's payment.succeeded, or Stripe's
// payment_intent.succeeded about the PaymentIntent.
func (d *demo) paymentSucceeded(r rentalAccepted, p paymentView) (event, error) {
	if !d.stripe {
		id := "evt-" + ident.Random(20)
		body, err := json.Marshal(generic.Event{ID: id, Type: generic.TypeSucceeded, PaymentReference: r.PaymentReference})
		return event{path: "/webhooks/payments", id: id, body: body}, err
	}
	id := "evt_" + ident.Random(24)
	body, err := stripeEvent(id, stripe.EventPaymentSucceeded, stripePaymentIntent{
		ID: p.PaymentID, Object: "payment_intent", Status: "succeeded", Metadata: map[string]string{stripe.MetadataKey: r.PaymentReference},
		Amount: p.amount, AmountReceived: p.amount, Currency: p.currency, LatestCharge: chargeID(p.PaymentID),
		CaptureMethod: "automatic_async", ConfirmationMethod: "automatic", Created: time.Now().Unix() - 60,
		PaymentMethodTypes: []string{"card"},
	})
	return event{path: "/webhooks/stripe", id: id, body: body}, err
}

// chargeRefunded is Stripe's charge.refunded event about the charge of r's
// PaymentIntent, refunded in full.
func (d *demo) chargeRefunded(r rentalAccepted, p paymentView) (event, error) {
	id := "evt_" + ident.Random(24)
	body, err := stripeEvent(id, stripe.EventChargeRefunded, stripeCharge{
		ID: chargeID(p.PaymentID), Object: "charge", Status: "succeeded", PaymentIntent: p.PaymentID,
		Metadata: map[string]string{stripe.MetadataKey: r.PaymentReference},
		Amount:   p.amount, AmountCaptured: p.amount, AmountRefunded: p.amount, Currency: p.currency,
		Captured: true, Paid: true, Refunded: true, Created: time.Now().Unix() - 60,
	})
	return event{path: "/webhooks/stripe", id: id, body: body}, err
}

// chargeID is the id of the demo's charge of a PaymentIntent.
func chargeID(paymentIntent string) string {
	return "ch_" + strings.TrimPrefix(paymentIntent, "pi_")
}

// stripeEventBody is a Stripe event, in the shape of the adapter's recorded events
// (internal/adapters/provider/stripe/testdata/events), rendered for the API version
// the adapter pins.
type stripeEventBody struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Type       string `json:"type"`
	APIVersion string `json:"api_version"`
	Created    int64  `json:"created"`
	Data       struct {
		Object any `json:"object"`
	} `json:"data"`
	Livemode        bool `json:"livemode"`
	PendingWebhooks int  `json:"pending_webhooks"`
	Request         struct {
		ID             *string `json:"id"`
		IdempotencyKey *string `json:"idempotency_key"`
	} `json:"request"`
}

// stripePaymentIntent is the part of a PaymentIntent the demo's events carry.
type stripePaymentIntent struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Status             string            `json:"status"`
	Metadata           map[string]string `json:"metadata"`
	Amount             int64             `json:"amount"`
	AmountReceived     int64             `json:"amount_received"`
	Currency           string            `json:"currency"`
	LatestCharge       string            `json:"latest_charge"`
	CaptureMethod      string            `json:"capture_method"`
	ConfirmationMethod string            `json:"confirmation_method"`
	Created            int64             `json:"created"`
	Livemode           bool              `json:"livemode"`
	LastPaymentError   *struct{}         `json:"last_payment_error"`
	PaymentMethodTypes []string          `json:"payment_method_types"`
}

// stripeCharge is the part of a charge the demo's events carry.
type stripeCharge struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Status         string            `json:"status"`
	PaymentIntent  string            `json:"payment_intent"`
	Metadata       map[string]string `json:"metadata"`
	Amount         int64             `json:"amount"`
	AmountCaptured int64             `json:"amount_captured"`
	AmountRefunded int64             `json:"amount_refunded"`
	Currency       string            `json:"currency"`
	Captured       bool              `json:"captured"`
	Paid           bool              `json:"paid"`
	Refunded       bool              `json:"refunded"`
	Created        int64             `json:"created"`
	Livemode       bool              `json:"livemode"`
}

// stripeEvent renders the event id of type typ about object, created now.
func stripeEvent(id, typ string, object any) ([]byte, error) {
	e := stripeEventBody{ID: id, Object: "event", Type: typ, APIVersion: stripe.APIVersion, Created: time.Now().Unix(), PendingWebhooks: 1}
	e.Data.Object = object
	return json.Marshal(e)
}

// publicBike reads GET /bikes/{id} without a token and requires the public view:
// exactly bikeId and available, with available as want.
func (d *demo) publicBike(ctx context.Context, id string, want bool) error {
	var raw map[string]json.RawMessage
	if err := d.expect(ctx, nobody, "GET", "/bikes/"+id, nil, nil, http.StatusOK, &raw); err != nil {
		return err
	}
	available, err := checkPublicBike(raw, id)
	if err != nil {
		return err
	}
	if available != want {
		return fmt.Errorf("GET /bikes/%s: want available %t, got %t", id, want, available)
	}
	return nil
}

// checkPublicBike checks that a public bike view holds exactly bikeId (id) and
// available (a boolean), and returns available.
func checkPublicBike(raw map[string]json.RawMessage, id string) (bool, error) {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"available", "bikeId"}) {
		return false, fmt.Errorf("GET /bikes/%s: the public view must hold only bikeId and available, got %s", id, strings.Join(keys, ", "))
	}
	var bikeID string
	var available bool
	if json.Unmarshal(raw["bikeId"], &bikeID) != nil || bikeID != id || json.Unmarshal(raw["available"], &available) != nil {
		return false, fmt.Errorf("GET /bikes/%s: want bikeId %q and available a boolean, got %s and %s", id, id, raw["bikeId"], raw["available"])
	}
	return available, nil
}

// waitAvailable polls the public view of bike until it is available, narrating the wait.
func (d *demo) waitAvailable(ctx context.Context, id string) error {
	path := "/bikes/" + id
	fmt.Fprintf(d.cfg.Out, "   > GET %s   (no token; repeated every %v until available)\n", path, pollInterval)
	start := time.Now()
	err := d.poll(ctx, func() (bool, string, error) {
		code, b, err := d.send(ctx, nobody, "GET", path, nil, nil)
		if err != nil {
			return false, err.Error(), nil
		}
		var raw map[string]json.RawMessage
		if code != http.StatusOK || json.Unmarshal(b, &raw) != nil {
			return false, describe(code, b), nil
		}
		available, err := checkPublicBike(raw, id)
		return available, clip(b, 200), err
	})
	if err != nil {
		return fmt.Errorf("GET %s never showed the bike available: %w", path, err)
	}
	fmt.Fprintf(d.cfg.Out, "   < 200 OK after %s: available\n", since(start))
	return nil
}

// send makes one request as who (with who's bearer token; nobody sends none) and
// returns the status and body; it prints nothing.
func (d *demo) send(ctx context.Context, who, method, path string, body []byte, hdr http.Header) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if hdr != nil {
		req.Header = hdr.Clone()
	}
	if who != nobody {
		req.Header.Set("Authorization", auth.Bearer(d.tokens[who]))
	}
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return resp.StatusCode, b, nil
}

// expect makes one request as who, narrating it, requires the status code
// wantStatus and decodes the JSON body into out (unless out is nil).
func (d *demo) expect(ctx context.Context, who, method, path string, body []byte, hdr http.Header, wantStatus int, out any) error {
	fmt.Fprintf(d.cfg.Out, "   > %s %s", method, path)
	if len(body) > 0 {
		fmt.Fprintf(d.cfg.Out, "  %s", clipBody(body, maxShownBody))
	}
	fmt.Fprintln(d.cfg.Out)
	if who != nobody {
		fmt.Fprintf(d.cfg.Out, "     Authorization: Bearer <%s>\n", tokenOf(who))
	}
	for _, k := range []string{"Idempotency-Key", webhook.Header, stripe.SignatureHeader} {
		if v := hdr.Get(k); v != "" {
			fmt.Fprintf(d.cfg.Out, "     %s: %s\n", k, v)
		}
	}
	status, b, err := d.send(ctx, who, method, path, body, hdr)
	if err != nil {
		return err
	}
	if strings.HasPrefix(path, "/rentals/") && method == "GET" {
		fmt.Fprintf(d.cfg.Out, "   < %s\n", describe(status, b)) // the history is printed separately
	} else {
		fmt.Fprintf(d.cfg.Out, "   < %d %s  %s\n", status, http.StatusText(status), clip(b, 200))
	}
	if status != wantStatus {
		return fmt.Errorf("%s %s: want %d %s, got %d %s: %s", method, path,
			wantStatus, http.StatusText(wantStatus), status, http.StatusText(status), clip(b, 300))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not the expected JSON: %v: %s", method, path, err, clip(b, 300))
		}
	}
	return nil
}

// tokenOf names who's token in the narration.
func tokenOf(who string) string {
	if who == operator {
		return "the operator's token"
	}
	return who + "'s token"
}

// status returns the "status" field of GET path as who, which must answer 200.
func (d *demo) status(ctx context.Context, who, path string) (string, error) {
	code, b, err := d.send(ctx, who, "GET", path, nil, nil)
	if err != nil {
		return "", err
	}
	var v struct{ Status string }
	if code != http.StatusOK || json.Unmarshal(b, &v) != nil {
		return "", errors.New(describe(code, b))
	}
	return v.Status, nil
}

// waitStatus polls GET path as who until its "status" is want, narrating the wait.
func (d *demo) waitStatus(ctx context.Context, who, path, want string) (string, error) {
	fmt.Fprintf(d.cfg.Out, "   > GET %s   (as %s; repeated every %v until status is %q)\n", path, who, pollInterval, want)
	start := time.Now()
	err := d.poll(ctx, func() (bool, string, error) {
		s, err := d.status(ctx, who, path)
		if err != nil {
			return false, err.Error(), nil
		}
		return s == want, fmt.Sprintf("status %q", s), nil
	})
	if err != nil {
		return "", fmt.Errorf("GET %s never showed status %q: %w", path, want, err)
	}
	fmt.Fprintf(d.cfg.Out, "   < 200 OK after %s: status %q\n", since(start), want)
	return want, nil
}

// poll calls try every pollInterval until it reports done, returns an error, or
// cfg.Wait passes; then the error says what try saw last.
func (d *demo) poll(ctx context.Context, try func() (done bool, seen string, err error)) error {
	deadline := time.Now().Add(d.cfg.Wait)
	for {
		done, seen, err := try()
		if done || err != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("gave up after %v; last seen: %s", d.cfg.Wait, seen)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last seen: %s", ctx.Err(), seen)
		case <-time.After(pollInterval):
		}
	}
}

func same(what, got, expected string) error {
	if got != expected {
		return fmt.Errorf("%s: want %q, got %q", what, expected, got)
	}
	return nil
}

func sameSuffix(what, got, suffix string) error {
	if !strings.HasSuffix(got, suffix) {
		return fmt.Errorf("%s: want one ending in %q, got %q", what, suffix, got)
	}
	return nil
}

// describe summarises an answer: its status code and its "status" field if it has one.
func describe(code int, body []byte) string {
	var v struct{ Status string }
	if code == http.StatusOK && json.Unmarshal(body, &v) == nil && v.Status != "" {
		return fmt.Sprintf("%d %s, status %q", code, http.StatusText(code), v.Status)
	}
	return fmt.Sprintf("%d %s: %s", code, http.StatusText(code), clip(body, 200))
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// maxShownBody bounds the request bodies the narration shows: a Stripe event is
// long, and what matters in it comes first.
const maxShownBody = 320

// clipBody returns body as it is if it is at most n bytes, else cut with its size.
func clipBody(body []byte, n int) string {
	if len(body) <= n {
		return string(body)
	}
	return fmt.Sprintf("%s... (%d bytes)", body[:n], len(body))
}

// clip returns body on one line, cut to at most n bytes.
func clip(body []byte, n int) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// randomID returns prefix followed by n random lowercase letters and digits.
func randomID(prefix string, n int) string {
	b := []byte(prefix)
	for range n {
		b = append(b, idAlphabet[rand.IntN(len(idAlphabet))])
	}
	return string(b)
}

// formatHistory renders one line per entry: time (HH:MM:SS.mmm, UTC), stream,
// version, type and compact data, in aligned columns. To keep lines short, the
// rental id is written "<rental>" in streams and data (unless it is empty).
func formatHistory(h []entry, rentalID string) []string {
	short := func(s string) string {
		if rentalID == "" {
			return s
		}
		return strings.ReplaceAll(s, rentalID, "<rental>")
	}
	ws, wt := 0, 0
	for _, e := range h {
		ws, wt = max(ws, len(short(e.Stream))), max(wt, len(e.Type))
	}
	lines := make([]string, len(h))
	for i, e := range h {
		lines[i] = strings.TrimRight(fmt.Sprintf("%s  %-*s  v%-2d  %-*s  %s", e.At.UTC().Format("15:04:05.000"),
			ws, short(e.Stream), e.Version, wt, e.Type, short(compactData(e.Data))), " ")
	}
	return lines
}

// compactData renders a JSON object as "key=value" pairs in key order, strings
// unquoted unless they are empty or hold spaces, and anything else as compact JSON.
func compactData(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return compactJSON(raw)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		var s string
		if json.Unmarshal(obj[k], &s) == nil && s != "" && !strings.ContainsAny(s, " \t\n=") {
			parts[i] = k + "=" + s
			continue
		}
		parts[i] = k + "=" + compactJSON(obj[k])
	}
	return strings.Join(parts, " ")
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// checkHistory reports whether the history holds the event types of want in
// that order (other events may come between them).
func checkHistory(h []entry, want []string) error {
	got := make([]string, len(h))
	for i, e := range h {
		got[i] = e.Type
	}
	i := 0
	for _, t := range got {
		if i < len(want) && t == want[i] {
			i++
		}
	}
	if i < len(want) {
		return fmt.Errorf("want the events %s in order, but %s is missing after the first %d; got %s",
			strings.Join(want, ", "), want[i], i, strings.Join(got, ", "))
	}
	return nil
}

// wrap splits text into lines of at most width bytes at spaces; "\n" starts a
// new line and an empty line before it.
func wrap(text string, width int) []string {
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				lines = append(lines, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		lines = append(lines, line)
	}
	return lines
}
