// Package load drives the HTTP API of a running stack with concurrent renters and
// checks that every answer is a success or a clean, documented refusal, so that the
// service can be watched under load and, with package faultproxy between it and
// DynamoDB, under faults.
//
// Each of Config.Renters renters repeats: pick one of Config.Bikes bikes, register it
// as an operator (PUT /bikes/{id}, idempotent), request it (POST /rentals; 409
// bike-unavailable is a normal outcome, and the renter tries another bike), wait until
// the payment is prepared and the rental-payment process has recorded its start (GET
// /rentals/{id}, polled with a deadline), then act as the rental's intent says:
// report the payment succeeded with a signed webhook (POST /webhooks/payments, the
// generic provider's event payment.succeeded), wait for the approval and return the
// bike as an operator; report it failed with a signed webhook (payment.failed); never
// pay (the sweep calls the payment off); or cancel it as an operator (POST
// /rentals/{id}/cancel-payment). Intents are dealt in the shares of Config.Mix,
// evenly spread over the rentals.
//
// Every webhook is one provider event with an id of its own ("evt-" and random
// characters), and is delivered again with the same id and body after an unclean
// answer, as a provider redelivers: the service applies an event once, and answers
// a redelivery as it answered the first (duplicate). A webhook that arrives after
// the payment was called off (by the sweep, or a cancellation) still answers 200:
// the rental stays cancelled, and a success is recorded as money to give back (a
// refund owed, with the generic provider); such rentals are counted as called off
// before the renter acted, and the late successes among them as paid late.
//
// Every request carries the token its route needs, from the local stack's token
// issuer (POST /local/tokens, through auth.Tokens): the renter's own on the renter
// routes (the renter is the token's subject), an operator's on the operator routes,
// none on the webhooks, which are signed, and on GET /bikes/{id}, which is public.
//
// A renter may have only MAX_PENDING_PER_RENTER (1 by default) outstanding requests,
// and a rental stays outstanding until its bike records the approval or the
// rejection, which for a rejected, never-paid or cancelled rental happens after the
// renter has moved on. So that each of the Config.Renters runs one rental after
// another as before, whatever the stack's limit, every rental in flight has its own
// renter: a renter goes on under the same identity after a rental it saw approved,
// and under a new one (the next of its numbered identities, with a token of its own)
// after any other. A 409 too-many-pending-requests is therefore never expected and
// counts as an unexpected refusal.
//
// Every answer is checked. A 2xx must be the route's documented status with a
// well-formed JSON body; a 4xx must be application/problem+json with a type and its
// own status; a 503 must carry Retry-After, and the request is sent again after that
// delay. Anything else, any other 5xx, a malformed body or a transport error, is an
// unclean failure, and Report.Unclean counts them: a service that degrades well
// under faults keeps it at zero.
//
// Run returns a Report with the rental ids by intent; Settle then waits until the
// stack is quiet and reads every rental's and bike's end state, and Check compares
// them with what each intent must end in.
package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// Intent is what a renter means to do with a rental once its payment is prepared.
type Intent string

// The intents, and the status each rental must end in.
const (
	// Confirm: the payment is confirmed by a signed webhook (payment.succeeded),
	// then the bike is returned. Ends approved or returned.
	Confirm Intent = "confirmed"
	// Reject: the payment is rejected by a signed webhook (payment.failed). Ends
	// rejected.
	Reject Intent = "rejected"
	// NeverPay: nothing happens; the sweep calls the payment off once it is older
	// than the stack's PAYMENT_TIMEOUT. Ends cancelled.
	NeverPay Intent = "never-paid"
	// OperatorCancel: an operator cancels the payment with POST
	// /rentals/{id}/cancel-payment. Ends cancelled.
	OperatorCancel Intent = "operator-cancelled"
)

// Intents lists every intent, in a fixed order.
func Intents() []Intent { return []Intent{Confirm, Reject, NeverPay, OperatorCancel} }

// Mix gives the share of the rentals dealt each intent. The shares are weights: they
// need not add up to 1, only be non-negative with a positive sum.
type Mix struct {
	Confirm, Reject, NeverPay, OperatorCancel float64
}

// DefaultMix is half confirmed, a fifth rejected, and the rest split between
// never paid and cancelled by an operator.
var DefaultMix = Mix{Confirm: 0.5, Reject: 0.2, NeverPay: 0.15, OperatorCancel: 0.15}

func (m Mix) weights() []float64 { return []float64{m.Confirm, m.Reject, m.NeverPay, m.OperatorCancel} }

func (m Mix) validate() error {
	sum := 0.0
	for _, w := range m.weights() {
		if w < 0 {
			return fmt.Errorf("load: mix %+v has a negative share", m)
		}
		sum += w
	}
	if sum <= 0 {
		return fmt.Errorf("load: mix %+v has no positive share", m)
	}
	return nil
}

// ParseMix parses shares such as "confirmed=0.5,rejected=0.2,never-paid=0.15,
// operator-cancelled=0.15"; intents not named get no share.
func ParseMix(s string) (Mix, error) {
	var m Mix
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		var w float64
		if _, err := fmt.Sscanf(value, "%g", &w); !ok || err != nil {
			return Mix{}, fmt.Errorf("load: mix item %q: want intent=share", part)
		}
		switch Intent(strings.TrimSpace(name)) {
		case Confirm:
			m.Confirm = w
		case Reject:
			m.Reject = w
		case NeverPay:
			m.NeverPay = w
		case OperatorCancel:
			m.OperatorCancel = w
		default:
			return Mix{}, fmt.Errorf("load: mix item %q: unknown intent (want one of %v)", part, Intents())
		}
	}
	return m, m.validate()
}

// Config says where the stack is and what load to put on it.
type Config struct {
	// BaseURL is the API's base URL, e.g. "http://127.0.0.1:3000". Required.
	BaseURL string
	// WebhookSecret is the payment provider's shared secret (the stack's
	// PAYMENT_WEBHOOK_SECRET). Required.
	WebhookSecret []byte
	// Bikes is how many bikes the renters share (N); at least 1.
	Bikes int
	// Renters is how many renters run at once (M); at least 1.
	Renters int
	// Rentals is how many rentals to make (accepted POST /rentals); 0 means no
	// limit, and then Duration is required.
	Rentals int
	// Duration is how long to keep starting rentals; 0 means no limit. A rental
	// started before the end is carried through.
	Duration time.Duration
	// Mix is the share of each intent; the zero Mix means DefaultMix.
	Mix Mix
	// Wait bounds each wait for an asynchronous step (the payment being prepared, a
	// confirmed rental being approved); 30s if zero. A rental a wait runs out on is
	// stuck.
	Wait time.Duration
	// Poll is the interval between the first reads of a rental while waiting; it
	// grows by half with each read, up to 8 times Poll. 200ms if zero.
	Poll time.Duration
	// Pause is about how long a renter waits after a 409 bike-unavailable before it
	// tries another bike (from half to one and a half times it); it grows by half
	// with each 409 in a row, up to 8 times Pause. 200ms if zero.
	Pause time.Duration
	// MaxBusyRetries is how many times a request answered 503 is sent again; 10 if
	// zero.
	MaxBusyRetries int
	// Prefix starts every bike and renter id, so that runs against one stack do not
	// meet; a random one if empty. At most 20 characters of A-Z, a-z, 0-9 and -.
	Prefix string
	// Seed seeds the renters' choices of bikes; 0 picks one at random.
	Seed uint64
	// Client sends the requests, and fetches the tokens; nil means a client with a
	// 30s timeout. The tokens live auth.DefaultTokenLifetime: a run must be shorter.
	Client *http.Client
}

func (c *Config) defaults() error {
	if c.BaseURL == "" {
		return errors.New("load: Config.BaseURL is required")
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if len(c.WebhookSecret) == 0 {
		return errors.New("load: Config.WebhookSecret is required")
	}
	if c.Bikes < 1 || c.Renters < 1 {
		return fmt.Errorf("load: want at least one bike and one renter, got %d and %d", c.Bikes, c.Renters)
	}
	if c.Rentals < 0 || c.Duration < 0 || (c.Rentals == 0 && c.Duration == 0) {
		return errors.New("load: bound the run with Config.Rentals, Config.Duration or both")
	}
	if c.Mix == (Mix{}) {
		c.Mix = DefaultMix
	}
	if err := c.Mix.validate(); err != nil {
		return err
	}
	if c.Wait <= 0 {
		c.Wait = 30 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Pause <= 0 {
		c.Pause = 200 * time.Millisecond
	}
	if c.MaxBusyRetries <= 0 {
		c.MaxBusyRetries = 10
	}
	if c.Prefix == "" {
		c.Prefix = "load-" + randomAlnum(6)
	}
	if len(c.Prefix) > 20 || strings.Trim(c.Prefix, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("load: prefix %q: want at most 20 characters of A-Z, a-z, 0-9 and -", c.Prefix)
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Client == nil {
		c.Client = NewClient()
	}
	return nil
}

// NewClient returns the HTTP client the generator uses by default: a 30s timeout,
// and enough idle connections for every renter.
func NewClient() *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second},
	}
}

func randomAlnum(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// operatorSubject is the subject of a run's operator token.
func operatorSubject(prefix string) string { return prefix + "-ops" }

// renterID returns the k-th identity (from 1) of the n-th renter (from 0).
func renterID(prefix string, n, k int) string { return fmt.Sprintf("%s-r%d-%d", prefix, n+1, k) }

// ErrNoToken reports that the stack's token issuer gave no token: it is not a local
// stack, or not one that issues tokens.
var ErrNoToken = errors.New("load: no token from the stack")

// BikeIDs returns the ids of the bikes a run with cfg uses.
func (c Config) BikeIDs() []string {
	ids := make([]string, c.Bikes)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-b%d", c.Prefix, i+1)
	}
	return ids
}

// Outcome names counted in Report.Outcomes. Refusals and answers the generator did
// not expect are counted as "<route> <status> <problem type>".
const (
	OutcomeAccepted       = "rental accepted"
	OutcomeUnavailable    = "bike unavailable (409)"
	OutcomeNoBike         = "run over before a bike was free"
	OutcomeConfirmed      = "payment confirmed"
	OutcomeApproved       = "rental approved"
	OutcomeReturned       = "bike returned"
	OutcomeRejected       = "payment rejected"
	OutcomeLeftUnpaid     = "payment left unpaid"
	OutcomeCancelPrefix   = "cancel-payment: "
	OutcomeDiverted       = "payment called off before the renter acted"
	OutcomePaidLate       = "payment succeeded after it was called off (refund due)"
	OutcomeDuplicate      = "webhook redelivered, answered as a duplicate"
	OutcomeStuck          = "rental stuck (a wait ran out)"
	OutcomeBusyRetried    = "503 retried after Retry-After"
	OutcomeBusyExhausted  = "gave up after repeated 503s"
	OutcomeUncleanRetried = "sent again after an unclean answer"
	OutcomeUnexpected     = "unexpected refusal"
)

// Report is what a run did.
type Report struct {
	// Prefix starts every id of the run.
	Prefix string `json:"prefix"`
	// Elapsed is the run's duration.
	Elapsed time.Duration `json:"elapsedNs"`
	// Requests is every API request sent, retries and polls included (not the
	// fetches of tokens from the local issuer).
	Requests int64 `json:"requests"`
	// RequestsPerSecond is Requests over Elapsed.
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	// Outcomes counts what happened, by the Outcome names and, for refusals the
	// generator did not expect, by route, status and problem type.
	Outcomes map[string]int64 `json:"outcomes"`
	// Statuses counts the answers by route and status, e.g. "POST /rentals 202".
	Statuses map[string]int64 `json:"statuses"`
	// Unclean counts the answers that were neither a success nor a clean documented
	// refusal: a 5xx other than 503, a 503 without Retry-After, a malformed body, a
	// transport error. It must be zero.
	Unclean int64 `json:"unclean"`
	// UncleanSamples describes the first unclean failures.
	UncleanSamples []string `json:"uncleanSamples,omitempty"`
	// Unexpected counts clean refusals the renters had no reason to meet (anything
	// but 409 bike-unavailable on POST /rentals, and a payment called off before the
	// renter acted); they are in Outcomes too.
	Unexpected int64 `json:"unexpected"`
	// Rentals holds the ids of the rentals whose intended action was accepted, by
	// intent (never-paid ones once their payment was prepared).
	Rentals map[Intent][]string `json:"rentals"`
	// Diverted holds rentals whose payment was called off before the renter acted
	// (the rental was cancelled when the renter came to act, or the webhook answered
	// that the payment was already cancelled): they must end cancelled.
	Diverted []string `json:"diverted,omitempty"`
	// PaidLate holds the diverted rentals whose success webhook arrived after the
	// payment was called off: the money must be on its way back (a refund owed,
	// requested or done). They are in Diverted too.
	PaidLate []string `json:"paidLate,omitempty"`
	// Stuck holds rentals for which a wait ran out (the payment never prepared, a
	// confirmed rental never approved) or that were given up after repeated 503s or
	// an unclean failure.
	Stuck []string `json:"stuck,omitempty"`
	// Bikes is the ids of the bikes used.
	Bikes []string `json:"bikes"`
	// RenterIdentities counts the renters the run's Config.Renters acted as: each
	// goes on as a new renter after a rental it did not see approved (see the package
	// documentation).
	RenterIdentities int64 `json:"renterIdentities"`
}

// maxSamples bounds Report.UncleanSamples.
const maxSamples = 20

// Run puts the load cfg describes on the stack at cfg.BaseURL and reports what
// happened. It returns an error only for an invalid cfg or a run cut short by ctx;
// failures of the service are in the Report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	g := newGen(cfg)
	var err error
	if g.operator, err = g.tokens.Operator(ctx, operatorSubject(cfg.Prefix)); err != nil {
		if ctx.Err() != nil {
			return Report{}, ctx.Err()
		}
		return Report{}, fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	start := time.Now()
	if cfg.Duration > 0 {
		g.deadline = start.Add(cfg.Duration)
	}
	var wg sync.WaitGroup
	for i := range cfg.Renters {
		wg.Go(func() { g.renter(ctx, i) })
	}
	wg.Wait()
	rep := g.report(time.Since(start))
	return rep, ctx.Err()
}

// gen is one run of the generator.
type gen struct {
	cfg      Config
	bikes    []string
	deadline time.Time // zero: no time limit
	tally    *tally
	tokens   *auth.Tokens
	operator string // the operator's token
	// identities counts the renter identities the renters used.
	identities atomic.Int64

	mu      sync.Mutex
	claimed int
	current []float64 // smooth weighted round robin over the intents
	rentals map[Intent][]string
	divert  []string
	late    []string
	stuck   []string
}

func newGen(cfg Config) *gen {
	return &gen{
		cfg: cfg, bikes: cfg.BikeIDs(), tally: newTally(), tokens: &auth.Tokens{BaseURL: cfg.BaseURL, Client: cfg.Client},
		current: make([]float64, len(Intents())), rentals: map[Intent][]string{},
	}
}

// claim takes the next rental slot and deals its intent, or reports that the run
// is over.
func (g *gen) claim(ctx context.Context) (Intent, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ctx.Err() != nil || (g.cfg.Rentals > 0 && g.claimed >= g.cfg.Rentals) || g.over() {
		return "", false
	}
	g.claimed++
	// Smooth weighted round robin: evenly spread, and exact shares over a cycle.
	w := g.cfg.Mix.weights()
	total, best := 0.0, 0
	for i := range w {
		g.current[i] += w[i]
		total += w[i]
		if g.current[i] > g.current[best] {
			best = i
		}
	}
	g.current[best] -= total
	return Intents()[best], true
}

func (g *gen) over() bool { return !g.deadline.IsZero() && time.Now().After(g.deadline) }

func (g *gen) record(into *[]string, id string) {
	g.mu.Lock()
	*into = append(*into, id)
	g.mu.Unlock()
}

func (g *gen) recordIntent(i Intent, id string) {
	g.mu.Lock()
	g.rentals[i] = append(g.rentals[i], id)
	g.mu.Unlock()
}

func (g *gen) report(elapsed time.Duration) Report {
	g.mu.Lock()
	defer g.mu.Unlock()
	rep := g.tally.report()
	rep.Prefix = g.cfg.Prefix
	rep.Elapsed = elapsed
	if s := elapsed.Seconds(); s > 0 {
		rep.RequestsPerSecond = float64(rep.Requests) / s
	}
	rep.Rentals = map[Intent][]string{}
	for i, ids := range g.rentals {
		rep.Rentals[i] = slices.Clone(ids)
	}
	rep.Diverted = slices.Clone(g.divert)
	rep.PaidLate = slices.Clone(g.late)
	rep.Stuck = slices.Clone(g.stuck)
	rep.Bikes = slices.Clone(g.bikes)
	rep.RenterIdentities = g.identities.Load()
	return rep
}

// rentalAccepted is the answer to POST /rentals.
type rentalAccepted struct {
	RentalID         string `json:"rentalId"`
	BikeID           string `json:"bikeId"`
	Renter           string `json:"renter"`
	Status           string `json:"status"`
	PaymentReference string `json:"paymentReference"`
}

// rentalView is the part of GET /rentals/{id} the generator reads.
type rentalView struct {
	RentalID string         `json:"rentalId"`
	Status   string         `json:"status"`
	Payment  *paymentView   `json:"payment"`
	History  []historyEntry `json:"history"`
}

// paymentView is the rental's payment as GET /rentals/{id} shows it.
type paymentView struct {
	Status string `json:"status"`
	// Refund is "requested", "owed" or "refunded" once money taken after the payment
	// was given up on goes back.
	Refund string `json:"refund"`
}

// refund returns where the rental's refund stands, "" for none.
func (v rentalView) refund() string {
	if v.Payment == nil {
		return ""
	}
	return v.Payment.Refund
}

// refundStatuses are the refund statuses a rental's payment may have once money
// taken after it was given up on goes back (payment.RefundStatuses, but none).
var refundStatuses = func() []string {
	var out []string
	for _, r := range payment.RefundStatuses() {
		if r != payment.RefundStatusNone {
			out = append(out, string(r))
		}
	}
	return out
}()

// historyEntry is the part of an event of a rental's history the generator reads.
type historyEntry struct {
	Type string `json:"type"`
}

// has reports whether the rental's history holds an event of the type.
func (v rentalView) has(eventType string) bool {
	return slices.ContainsFunc(v.History, func(e historyEntry) bool { return e.Type == eventType })
}

// bikeView is the answer of the operators' bike routes (PUT /bikes/{id}, POST
// /bikes/{id}/return).
type bikeView struct {
	BikeID string `json:"bikeId"`
	Status string `json:"status"`
}

// bikeAvailability is the answer of the public GET /bikes/{id}.
type bikeAvailability struct {
	BikeID    string `json:"bikeId"`
	Available *bool  `json:"available"`
}

// The rental statuses of GET /rentals/{id}. A rental whose payment was refused or
// called off is rejecting or cancelling until its bike is free again and its
// process has ended, and only then rejected or cancelled.
const (
	statusRequested       = "requested"
	statusAwaitingPayment = "awaiting-payment"
	statusApproved        = "approved"
	statusReturned        = "returned"
	statusRejecting       = "rejecting"
	statusRejected        = "rejected"
	statusCancelling      = "cancelling"
	statusCancelled       = "cancelled"
)

var rentalStatuses = []string{statusRequested, statusAwaitingPayment, statusApproved, statusReturned,
	statusRejecting, statusRejected, statusCancelling, statusCancelled}

// settling reports whether a rental status is one the stack still changes on its
// own: the rental is outstanding, or ending.
func settling(status string) bool {
	return status == statusRequested || status == statusAwaitingPayment || status == statusRejecting || status == statusCancelling
}

// calledOff reports whether a rental status says that its payment was refused or
// called off, whether or not the rental has ended yet.
func calledOff(status string) bool {
	return status == statusRejecting || status == statusRejected || status == statusCancelling || status == statusCancelled
}

// renter runs one renter's loop until the run is over. It keeps its identity after
// a rental it saw approved, which no longer counts against the renter's limit of
// outstanding requests, and takes its next identity after any other, which may still.
func (g *gen) renter(ctx context.Context, n int) {
	rng := rand.New(rand.NewPCG(g.cfg.Seed, uint64(n)))
	identity, counted := 1, 0
	for seq := 1; ; seq++ {
		intent, ok := g.claim(ctx)
		if !ok {
			return
		}
		if counted != identity {
			g.identities.Add(1)
			counted = identity
		}
		if settled := g.rental(ctx, rng, renterID(g.cfg.Prefix, n, identity), seq, intent); !settled {
			identity++
		}
	}
}

// renterToken returns the renter's token, fetched once; a failure is unclean.
func (g *gen) renterToken(ctx context.Context, renter string) (string, bool) {
	token, err := g.tokens.Renter(ctx, renter)
	if err != nil {
		if ctx.Err() == nil {
			g.tally.unclean(fmt.Sprintf("POST /local/tokens for %s: %v", renter, err))
		}
		return "", false
	}
	return token, true
}

// rental carries one rental through, from finding a bike to the renter's action,
// and reports whether the rental is known to be settled (approved, its bike's
// approval recorded) so that it no longer counts against the renter's limit.
func (g *gen) rental(ctx context.Context, rng *rand.Rand, renter string, seq int, intent Intent) (settled bool) {
	token, ok := g.renterToken(ctx, renter)
	if !ok {
		return false
	}
	accepted, ok := g.request(ctx, rng, renter, token, seq)
	if !ok {
		return false
	}
	id := accepted.RentalID
	view, ok := g.waitRental(ctx, token, id, func(v rentalView) bool {
		return v.has(rentalpayment.TypeRequested) || calledOff(v.Status)
	})
	if !ok {
		return false
	}
	if calledOff(view.Status) {
		g.tally.outcome(OutcomeDiverted)
		g.record(&g.divert, id)
		return false
	}
	switch intent {
	case Confirm:
		return g.confirm(ctx, token, accepted)
	case Reject:
		if g.webhook(ctx, token, accepted.PaymentReference, generic.TypeFailed, "declined by the load generator") {
			g.tally.outcome(OutcomeRejected)
			g.recordIntent(Reject, id)
		}
	case NeverPay:
		g.tally.outcome(OutcomeLeftUnpaid)
		g.recordIntent(NeverPay, id)
	case OperatorCancel:
		g.cancel(ctx, id)
	}
	return false
}

// request registers a bike as an operator and asks for it as the renter, whose token
// is token, a random bike at a time, until one is accepted: after a 409
// bike-unavailable it pauses about cfg.Pause and tries another bike. It gives up only
// when the run's Duration is over or ctx is done.
func (g *gen) request(ctx context.Context, rng *rand.Rand, renter, token string, seq int) (rentalAccepted, bool) {
	last := -1
	for attempt := 1; ; attempt++ {
		i := rng.IntN(len(g.bikes))
		if i == last && len(g.bikes) > 1 {
			i = (i + 1 + rng.IntN(len(g.bikes)-1)) % len(g.bikes)
		}
		last = i
		bike := g.bikes[i]
		var b bikeView
		ans, err := g.send(ctx, call{method: http.MethodPut, path: "/bikes/" + bike, route: "PUT /bikes/{id}", token: g.operator})
		if err != nil || !g.expect(ans, &b, func() bool { return b.BikeID == bike && b.Status != "" }, http.StatusOK, http.StatusCreated) {
			return rentalAccepted{}, false
		}
		// The renter is the token's subject, never named in the body.
		body, _ := json.Marshal(map[string]string{"bikeId": bike})
		key := fmt.Sprintf("%s-%d-%d", renter, seq, attempt)
		// The API derives the rental id from the key: a retry asks for the same rental.
		id := rental.NewRentalID(bike, ident.Derived(rental.RentalSuffixLength, bike, renter, key))
		ans, err = g.send(ctx, call{method: http.MethodPost, path: "/rentals", route: "POST /rentals", body: body, token: token,
			header: func() http.Header { return http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {key}} },
			effect: func(ctx context.Context) (bool, error) {
				v, err := g.readRental(ctx, token, id)
				if errors.Is(err, errNotFound) {
					return false, nil
				}
				return err == nil && v.has(rental.BikeRequested{}.EventType()), err
			}})
		if err != nil {
			return rentalAccepted{}, false
		}
		if ans.status == http.StatusConflict && ans.problem.is("bike-unavailable") {
			g.tally.outcome(OutcomeUnavailable)
			if g.over() {
				g.tally.outcome(OutcomeNoBike)
				return rentalAccepted{}, false
			}
			// Back off while every bike seems taken, so that searching renters do not
			// crowd out the work they wait for.
			pause := backoff(g.cfg.Pause, attempt)
			pause = pause/2 + time.Duration(rng.Int64N(int64(pause)+1))
			if sleep(ctx, pause) != nil {
				return rentalAccepted{}, false
			}
			continue
		}
		var r rentalAccepted
		if !g.expect(ans, &r, func() bool {
			return r.RentalID == id && r.BikeID == bike && r.Renter == renter && r.PaymentReference == "rp_"+r.RentalID && r.Status == statusRequested
		}, http.StatusAccepted) {
			return rentalAccepted{}, false
		}
		g.tally.outcome(OutcomeAccepted)
		return r, true
	}
}

// waitRental reads the rental with token (its renter's) until done holds, for at
// most cfg.Wait, every cfg.Poll at first and less often as the wait goes on (see
// backoff); a rental the wait ran out on is stuck.
func (g *gen) waitRental(ctx context.Context, token, id string, done func(rentalView) bool) (rentalView, bool) {
	giveUp := time.Now().Add(g.cfg.Wait)
	for polls := 0; ; {
		v, err := g.readRental(ctx, token, id)
		if errors.Is(err, errNotFound) {
			g.tally.unexpected(fmt.Sprintf("%s GET /rentals/{id} 404 rental-not-found", OutcomeUnexpected))
		}
		if err != nil {
			g.stuckOn(ctx, id)
			return v, false
		}
		if done(v) {
			return v, true
		}
		if time.Now().After(giveUp) {
			g.tally.outcome(OutcomeStuck)
			g.record(&g.stuck, id)
			return v, false
		}
		polls++
		if sleep(ctx, backoff(g.cfg.Poll, polls)) != nil {
			return v, false
		}
	}
}

// stuckOn records a rental abandoned after a failure, unless the run was cut short.
func (g *gen) stuckOn(ctx context.Context, id string) {
	if ctx.Err() == nil {
		g.record(&g.stuck, id)
	}
}

// webhook delivers one signed event of the generic provider (POST
// /webhooks/payments, with no token) about the payment ref: payment.succeeded or
// payment.failed (with reason), under an event id of its own. It reports whether the
// event settled the payment as the renter meant; token (the renter's) reads the
// rental back after an unclean answer. The event is delivered again as it was, same
// id and body, after an unclean answer: the service applies it once, and a
// redelivery gets the first delivery's answer. An event that finds the payment
// already called off is answered 200 all the same and diverts the rental; a success
// then must come with a refund due.
func (g *gen) webhook(ctx context.Context, token, ref, eventType, reason string) bool {
	id := strings.TrimPrefix(ref, "rp_")
	eventID := newEventID()
	body, _ := json.Marshal(generic.Event{ID: eventID, Type: eventType, PaymentReference: ref, Reason: reason})
	settles, want := payment.PaymentRejected{}.EventType(), paymentRejected
	if eventType == generic.TypeSucceeded {
		settles, want = payment.PaymentConfirmed{}.EventType(), paymentConfirmed
	}
	ans, err := g.send(ctx, call{method: http.MethodPost, path: webhookPath, route: "POST " + webhookPath, body: body,
		header: func() http.Header {
			return http.Header{"Content-Type": {"application/json"}, webhook.Header: {generic.Sign(g.cfg.WebhookSecret, body, time.Now())}}
		},
		effect: g.recorded(token, id, settles, payment.PaymentSucceededAfterCancellation{}.EventType())})
	if err != nil {
		g.stuckOn(ctx, id)
		return false
	}
	var p webhookAnswer
	if !g.expect(ans, &p, func() bool {
		if p.EventID != eventID || p.PaymentReference != ref {
			return false
		}
		switch {
		case p.Status == want:
			return p.Refund == ""
		case p.Status == paymentCancelled && eventType == generic.TypeSucceeded:
			return slices.Contains(refundStatuses, p.Refund) // the money of a late success goes back
		case p.Status == paymentCancelled:
			return p.Refund == ""
		}
		return false
	}, http.StatusOK) {
		g.stuckOn(ctx, id)
		return false
	}
	if p.Duplicate {
		g.tally.outcome(OutcomeDuplicate)
	}
	if p.Status == paymentCancelled {
		g.tally.outcome(OutcomeDiverted)
		g.record(&g.divert, id)
		if p.Refund != "" {
			g.tally.outcome(OutcomePaidLate)
			g.record(&g.late, id)
		}
		return false
	}
	return true
}

// webhookPath is the generic provider's webhook.
const webhookPath = "/webhooks/payments"

// The payment statuses a webhook answers with.
const (
	paymentConfirmed = "confirmed"
	paymentRejected  = "rejected"
	paymentCancelled = "cancelled"
)

// webhookAnswer is the answer to an authentic provider event.
type webhookAnswer struct {
	EventID          string `json:"eventId"`
	PaymentReference string `json:"paymentReference"`
	Status           string `json:"status"`
	Refund           string `json:"refund"`
	Duplicate        bool   `json:"duplicate"`
}

// newEventID returns a provider event id of its own: events are told apart by their
// ids, which must never repeat, in this run or any other against the same stack.
func newEventID() string { return "evt-" + ident.Random(24) }

// confirm pays, waits for the approval and returns the bike as an operator. It
// reports whether it saw the rental approved: the bike has recorded the approval, so
// the rental no longer counts against the renter's limit.
func (g *gen) confirm(ctx context.Context, token string, r rentalAccepted) (approved bool) {
	if !g.webhook(ctx, token, r.PaymentReference, generic.TypeSucceeded, "") {
		return false
	}
	g.tally.outcome(OutcomeConfirmed)
	g.recordIntent(Confirm, r.RentalID)
	if _, ok := g.waitRental(ctx, token, r.RentalID, func(v rentalView) bool { return v.Status == statusApproved }); !ok {
		return false
	}
	g.tally.outcome(OutcomeApproved)
	// A return is not idempotent: it names no rental, so sent again after it took
	// effect it is refused as bike-not-rented, or ends whichever rental the bike is
	// in by then. After an unclean answer or a 503 it is sent again only once the
	// rental's history shows that it did not take effect.
	returned := g.recorded(g.operator, r.RentalID, rental.BikeReturned{}.EventType())
	for attempt := 0; ; attempt++ {
		var b bikeView
		ans, err := g.send(ctx, call{method: http.MethodPost, path: "/bikes/" + r.BikeID + "/return", route: "POST /bikes/{id}/return",
			token: g.operator, effect: returned, once: true})
		if (errors.Is(err, errUnclean) || errors.Is(err, errRetryLater)) && attempt < maxUncleanRetries+g.cfg.MaxBusyRetries {
			if took, err := returned(ctx); err == nil && took {
				break
			}
			delay := uncleanRetryDelay
			if errors.Is(err, errRetryLater) {
				delay = ans.retryAfter
				g.tally.outcome(OutcomeBusyRetried)
			} else {
				g.tally.outcome(OutcomeUncleanRetried)
			}
			if sleep(ctx, delay) != nil {
				return true
			}
			continue
		}
		if err != nil || !g.expect(ans, &b, func() bool { return b.BikeID == r.BikeID && b.Status == "available" }, http.StatusOK) {
			g.stuckOn(ctx, r.RentalID)
			return true
		}
		break
	}
	g.tally.outcome(OutcomeReturned)
	return true
}

// errNotFound reports a rental the API does not know.
var errNotFound = errors.New("load: rental not found")

// readRental reads a rental once with token, its renter's or an operator's;
// errNotFound if the API answers 404 (as it does to another renter).
func (g *gen) readRental(ctx context.Context, token, id string) (rentalView, error) {
	var v rentalView
	ans, err := g.send(ctx, call{method: http.MethodGet, path: "/rentals/" + id, route: "GET /rentals/{id}", token: token})
	if err != nil {
		return v, err
	}
	if ans.status == http.StatusNotFound && ans.problem.is("rental-not-found") {
		return v, errNotFound
	}
	if !g.expect(ans, &v, func() bool { return v.RentalID == id && slices.Contains(rentalStatuses, v.Status) }, http.StatusOK) {
		return v, errUnclean
	}
	return v, nil
}

// recorded returns a call's effect check: whether the rental's history, read with
// token, holds an event of one of the given types.
func (g *gen) recorded(token, id string, eventTypes ...string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		v, err := g.readRental(ctx, token, id)
		return err == nil && slices.ContainsFunc(eventTypes, v.has), err
	}
}

// cancel calls the payment off as an operator.
func (g *gen) cancel(ctx context.Context, id string) {
	var c struct{ RentalID, Outcome string }
	ans, err := g.send(ctx, call{method: http.MethodPost, path: "/rentals/" + id + "/cancel-payment", route: "POST /rentals/{id}/cancel-payment",
		token: g.operator, effect: g.recorded(g.operator, id, payment.PaymentCancelled{}.EventType())})
	if err != nil || !g.expect(ans, &c, func() bool {
		return c.RentalID == id && (c.Outcome == "cancelled" || c.Outcome == "declined" || c.Outcome == "nothing-to-do")
	}, http.StatusOK) {
		g.stuckOn(ctx, id)
		return
	}
	g.tally.outcome(OutcomeCancelPrefix + c.Outcome)
	g.recordIntent(OperatorCancel, id)
}

// expect checks that ans is a success with one of the statuses want and a JSON body
// that decodes into v and satisfies ok. Otherwise it counts the answer, as unclean
// or as an unexpected clean refusal, and returns false.
func (g *gen) expect(ans answer, v any, ok func() bool, want ...int) bool {
	if slices.Contains(want, ans.status) {
		if err := json.Unmarshal(ans.body, v); err != nil || !ok() {
			g.tally.unclean(fmt.Sprintf("%s: %d with an unexpected body: %.300s", ans.route, ans.status, ans.body))
			return false
		}
		return true
	}
	if ans.problem != nil {
		g.tally.unexpected(fmt.Sprintf("%s %s %d %s", OutcomeUnexpected, ans.route, ans.status, ans.problem.anchor()))
		return false
	}
	g.tally.unclean(fmt.Sprintf("%s: unexpected status %d: %.300s", ans.route, ans.status, ans.body))
	return false
}

// backoff returns base for the first try and half again as much for each further
// one, up to 8 times base.
func backoff(base time.Duration, try int) time.Duration {
	d := base
	for i := 1; i < try && d < 8*base; i++ {
		d += d / 2
	}
	return min(d, 8*base)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// tally counts requests and outcomes; it is safe for concurrent use.
type tally struct {
	requests  atomic.Int64
	mu        sync.Mutex
	outcomes  map[string]int64
	statuses  map[string]int64
	uncleanN  int64
	unexpectN int64
	samples   []string
}

func newTally() *tally {
	return &tally{outcomes: map[string]int64{}, statuses: map[string]int64{}}
}

func (t *tally) outcome(name string) {
	t.mu.Lock()
	t.outcomes[name]++
	t.mu.Unlock()
}

func (t *tally) status(route string, status int) {
	t.mu.Lock()
	t.statuses[fmt.Sprintf("%s %d", route, status)]++
	t.mu.Unlock()
}

func (t *tally) unclean(what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.uncleanN++
	if len(t.samples) < maxSamples {
		t.samples = append(t.samples, time.Now().Format("15:04:05.000")+" "+what)
	}
}

func (t *tally) unexpected(what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unexpectN++
	t.outcomes[what]++
}

func (t *tally) report() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	rep := Report{Requests: t.requests.Load(), Outcomes: map[string]int64{}, Statuses: map[string]int64{},
		Unclean: t.uncleanN, Unexpected: t.unexpectN, UncleanSamples: slices.Clone(t.samples)}
	for k, v := range t.outcomes {
		rep.Outcomes[k] = v
	}
	for k, v := range t.statuses {
		rep.Statuses[k] = v
	}
	return rep
}
