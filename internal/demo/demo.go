// Package demo is a narrated walk-through of the bike-rental service that a
// newcomer can follow. It runs against a running local stack over HTTP (make run)
// and tells, step by step, what each request does and why: renters and an operator
// sign in; bikes are registered; a request without a token is refused; a bike is
// rented, kept private from other renters, paid for through a signed webhook and
// returned, while a second request by the same renter is refused; a second
// renter's payment never arrives and the sweep gives up on it; a late cancel
// changes nothing; and each rental's audit trail is printed.
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

	"github.com/bikerental/bikerental/internal/auth"
	"github.com/bikerental/bikerental/internal/webhook"
)

// Config says where the stack is and how to talk to it.
type Config struct {
	BaseURL       string        // the API's base URL, e.g. "http://127.0.0.1:3000"; a local stack, whose POST /local/tokens issues the tokens
	WebhookSecret []byte        // the payment provider's shared secret (PAYMENT_WEBHOOK_SECRET)
	Out           io.Writer     // the narration; nil discards it
	Wait          time.Duration // how long to wait for each asynchronous step before failing; 0 means 60s
	Client        *http.Client  // nil: a client with a 10s timeout
}

// pollInterval is how often an asynchronous step is checked.
const pollInterval = 200 * time.Millisecond

// Who sends a request: the two renters, the operator, or nobody (no token).
const (
	alice    = "alice"
	bob      = "bob"
	operator = "ops"
	nobody   = ""
)

// The events each rental's history must contain, in this order.
var (
	aliceTrail = []string{"BikeRequested", "PaymentPrepared", "RentalPaymentRequested", "PaymentConfirmed",
		"RequestApproved", "RentalPaymentProcessCompleted", "BikeReturned"}
	bobTrail = []string{"BikeRequested", "PaymentPrepared", "RentalPaymentRequested", "PaymentCancelled",
		"RequestRejected", "RentalPaymentProcessCompleted"}
)

// Run tells the story against cfg.BaseURL and returns nil only if every step had
// the expected outcome. Each run uses new bikes, so it can run again against the
// same stack. Bob's payment must time out within cfg.Wait, so the stack's
// PAYMENT_TIMEOUT plus its SWEEP_INTERVAL must be shorter than cfg.Wait; and the
// stack must allow one outstanding request per renter (MAX_PENDING_PER_RENTER=1,
// the default).
func Run(ctx context.Context, cfg Config) error {
	if cfg.BaseURL == "" {
		return errors.New("demo: Config.BaseURL is required")
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
	d := &demo{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), bike: randomID("demo-bike-", 6), spare: randomID("demo-bike-", 6)}
	d.issuer = &auth.Tokens{BaseURL: d.base, Client: cfg.Client}
	fmt.Fprintf(cfg.Out, "Bike-rental demo against %s\nThis run uses bikes %s and %s, renters %s and %s, and an operator, %s.\n",
		d.base, d.bike, d.spare, alice, bob, operator)
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
	issuer            *auth.Tokens
	tokens            map[string]string // by who: alice, bob, operator
	alice, bob        rentalAccepted
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
	Status  string  `json:"status"`
	History []entry `json:"history"`
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
	for _, who := range []string{alice, bob, operator} {
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
	d.say("The payment provider tells the service that Alice paid by calling a webhook. It has no token: anyone could call that URL, so every call is signed instead. The Payment-Signature header carries a timestamp and an HMAC-SHA256 of the timestamp and the body, made with a secret only the provider and the service know.")
	path := "/payments/" + d.alice.PaymentReference + "/confirm"
	body := []byte("{}")
	signed := func(secret []byte) http.Header {
		return http.Header{"Content-Type": {"application/json"}, webhook.Header: {webhook.Sign(secret, body, time.Now())}}
	}
	d.say("First a forged call, signed with the wrong secret. It must be refused and change nothing.")
	wrong := append([]byte("not-the-provider-secret-"), d.cfg.WebhookSecret...)
	if err := d.expect(ctx, nobody, "POST", path, body, signed(wrong), http.StatusUnauthorized, nil); err != nil {
		return err
	}
	var v rentalView
	if err := d.expect(ctx, alice, "GET", "/rentals/"+d.alice.RentalID, nil, nil, http.StatusOK, &v); err != nil {
		return err
	}
	if err := same("Alice's rental after the forged call", v.Status, "awaiting-payment"); err != nil {
		return err
	}
	if slices.ContainsFunc(v.History, func(e entry) bool { return e.Type == "PaymentConfirmed" }) {
		return errors.New("the forged webhook confirmed the payment")
	}
	d.say("Still awaiting payment. Now the genuine call, signed with the shared secret:")
	var p struct{ PaymentReference, Status string }
	if err := d.expect(ctx, nobody, "POST", path, body, signed(d.cfg.WebhookSecret), http.StatusOK, &p); err != nil {
		if strings.Contains(err.Error(), "got 401") {
			err = fmt.Errorf("%w (is Config.WebhookSecret the stack's PAYMENT_WEBHOOK_SECRET?)", err)
		}
		return err
	}
	if err := same("the payment's status", p.Status, "confirmed"); err != nil {
		return err
	}
	d.say("The process sees PaymentConfirmed, approves Alice's request and records that it is done. We wait for the rental to be approved.")
	if _, err := d.waitStatus(ctx, alice, "/rentals/"+d.alice.RentalID, "approved"); err != nil {
		return err
	}
	d.say("The bike is Alice's now. The public view says only that it is not available, not who has it:")
	return d.publicBike(ctx, d.bike, false)
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
		return fmt.Errorf("Bob's payment never appeared in the pending list: %w", err)
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

func (d *demo) audit(ctx context.Context) error {
	d.say("GET /rentals/{id} shows a rental's status and every event that belongs to it, from three streams: the bike's (bike-...), the payment's (payment-rp_...) and the process's own (rentalpayment-...). A renter reads only their own rentals; an operator's token reads any, so the operator reads both. Each line: time (UTC), stream, version, event type, data.")
	for _, c := range []struct {
		r      rentalAccepted
		status string
		trail  []string
	}{{d.alice, "returned", aliceTrail}, {d.bob, "cancelled", bobTrail}} {
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
	}
	d.say("\nBoth trails hold the events they should, in order. Note the process's own events (RentalPaymentRequested, RentalPaymentProcessCompleted): it records what it did, so it can decide from those alone, and it has an explicit end.")
	return nil
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
		fmt.Fprintf(d.cfg.Out, "  %s", body)
	}
	fmt.Fprintln(d.cfg.Out)
	if who != nobody {
		fmt.Fprintf(d.cfg.Out, "     Authorization: Bearer <%s>\n", tokenOf(who))
	}
	for _, k := range []string{"Idempotency-Key", webhook.Header} {
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
		fmt.Fprintf(d.cfg.Out, "   < %d %s  %s\n", status, http.StatusText(status), clip(b, 160))
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
