package commandfn_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// The tests below hold each promise of the payment provider port (command.
// PaymentProvider: creating, cancelling, the provider's word with its answer,
// refunding, refunding money taken on another payment, finding a reference, and the
// bound on every call) on the command function as it is deployed: the service
// commandfn.Build makes from its environment, PAYMENT_PROVIDER=stripe, with Stripe
// played by stripe-mock behind stripemock.Stateful at STRIPE_API_URL, on moto. A
// capability proven only on the raw adapter can be lost by whatever the recipe puts
// around it; these fail when it is.

const deployedWebhookSecret = "whsec_deployed_provider_test"

// deployed is the command function's service and the Stripe it reaches.
type deployed struct {
	t    *testing.T
	s    *commandfn.Service
	paid *stripemock.Stateful
}

// deploy builds the command function's service with Stripe behind next (stripe-mock
// itself when nil) and the settings more.
func deploy(t *testing.T, next http.RoundTripper, more map[string]string) *deployed {
	t.Helper()
	if next == nil {
		next = http.DefaultTransport
	}
	paid := &stripemock.Stateful{Next: next}
	_, table := emulatortest.EventsTable(t)
	vars := map[string]string{
		wiring.EnvEventsTable: table, wiring.EnvWebhookSecret: "the-generic-webhook-secret-0123456789",
		paymentfn.EnvProvider: paymentfn.Stripe, paymentfn.EnvStripeAPIURL: paid.Serve(t, stripemock.Start(t).URL),
		paymentfn.EnvStripeSecretKey: stripemock.SecretKey, paymentfn.EnvStripeWebhookSecret: deployedWebhookSecret,
	}
	for k, v := range more {
		vars[k] = v
	}
	s, err := commandfn.Build(context.Background(), emulatortest.Config(t), env(vars), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return &deployed{t: t, s: s, paid: paid}
}

// prepare prepares a payment of 1500 EUR for a new rental of bike, and returns its
// reference and PaymentIntent.
func (d *deployed) prepare(bike string) (string, string) {
	d.t.Helper()
	ref := payment.ReferenceFor(bike + "_AAAAAAAAAAAAAAAAAAAAAA")
	res, err := d.s.Commands.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "set-by-the-provider", Amount: 1500, Currency: "EUR"}, command.Meta{})
	if err != nil {
		d.t.Fatalf("prepare %s: %v", ref, err)
	}
	return ref, res.State.PaymentID
}

// types returns the types of the events of ref's payment.
func (d *deployed) types(ref string) []string {
	d.t.Helper()
	records, err := d.s.Store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []string
	for _, r := range records {
		out = append(out, r.Type)
	}
	return out
}

// asked reports whether Stripe was sent a request that begins with request
// (Paid.Requests' form: method, path, idempotency key).
func (d *deployed) asked(request string) bool {
	return slices.ContainsFunc(d.paid.Requests(), func(r string) bool { return strings.HasPrefix(r, request) })
}

// webhook posts the Stripe event testdata/events/<name>.json, about ref and
// intent, under event id id, signed, to the API's POST /webhooks/stripe, and
// returns its status and body.
func (d *deployed) webhook(name, id, ref, intent string) (int, string) {
	d.t.Helper()
	return d.webhookWith(name, id, ref, intent, nil)
}

// webhookWith is webhook with the event changed by change (when not nil) before it
// is signed.
func (d *deployed) webhookWith(name, id, ref, intent string, change func(event map[string]any)) (int, string) {
	d.t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "provider", "stripe", "testdata", "events", name+".json"))
	if err != nil {
		d.t.Fatal(err)
	}
	body := strings.ReplaceAll(string(raw), "rp_01JZ8K3M6Q2W4E5R7T9YAB", ref)
	body = strings.ReplaceAll(body, "pi_3TbC4nLkdIwHu7ix0yXq2aZd", intent)
	var event map[string]any
	if err := json.Unmarshal([]byte(body), &event); err != nil {
		d.t.Fatal(err)
	}
	event["id"] = id
	if change != nil {
		change(event)
	}
	out, _ := json.Marshal(event)
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: out, Secret: deployedWebhookSecret, Timestamp: time.Now()})
	req := events.APIGatewayV2HTTPRequest{RawPath: "/webhooks/stripe", Body: string(out),
		Headers: map[string]string{"content-type": "application/json", strings.ToLower(stripe.SignatureHeader): signed.Header}}
	req.RequestContext.HTTP.Method = http.MethodPost
	res, err := d.s.API.Handle(context.Background(), req)
	if err != nil {
		d.t.Fatal(err)
	}
	return res.StatusCode, res.Body
}

// notSupported reports whether a provider call's results say it cannot do what it
// was asked (payment.CancelNotSupported, payment.ErrRefundNotSupported,
// payment.ErrLookupNotSupported).
func notSupported(results []reflect.Value) bool {
	for _, r := range results {
		switch v := r.Interface().(type) {
		case payment.CancelOutcome:
			if v == payment.CancelNotSupported {
				return true
			}
		case error:
			if errors.Is(v, payment.ErrRefundNotSupported) || errors.Is(v, payment.ErrLookupNotSupported) {
				return true
			}
		}
	}
	return false
}

// TestTheDeployedProviderDoesAllTheStripeAdapterCan reads what the Stripe adapter
// can do from the adapter itself: each of its methods that calls Stripe (takes a
// context first) and does not answer "not supported". The provider the command
// function's recipe gives its commands must have each of them, and must not answer
// "not supported" where the adapter does not, and must bear its name. The calls are
// made with zero arguments, which the adapter refuses before it reaches Stripe.
func TestTheDeployedProviderDoesAllTheStripeAdapterCan(t *testing.T) {
	d := deploy(t, nil, nil)
	adapter, err := stripe.New(stripe.Config{SecretKey: stripemock.SecretKey, WebhookSecret: deployedWebhookSecret, APIURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	built := reflect.ValueOf(d.s.Commands.Provider())
	ctx := reflect.ValueOf(context.Background())
	var can []string
	for m := range reflect.TypeOf(adapter).Methods() {
		if m.Type.NumIn() < 2 || m.Type.In(1) != reflect.TypeFor[context.Context]() {
			continue // not a call to Stripe
		}
		args := []reflect.Value{ctx}
		for i := 2; i < m.Type.NumIn(); i++ {
			args = append(args, reflect.Zero(m.Type.In(i)))
		}
		if notSupported(reflect.ValueOf(adapter).MethodByName(m.Name).Call(args)) {
			continue
		}
		can = append(can, m.Name)
		deployedMethod := built.MethodByName(m.Name)
		if !deployedMethod.IsValid() {
			t.Errorf("the deployed provider (%s) cannot %s, which the Stripe adapter can", built.Type(), m.Name)
			continue
		}
		if notSupported(deployedMethod.Call(args)) {
			t.Errorf("the deployed provider (%s) answers %s \"not supported\", which the Stripe adapter supports", built.Type(), m.Name)
		}
	}
	if len(can) == 0 {
		t.Fatal("found nothing the Stripe adapter can do")
	}
	if name := d.s.Commands.Provider().Name(); name != adapter.Name() {
		t.Errorf("the deployed provider is named %q, not the Stripe adapter's %q: the events of the provider that holds the money would not apply", name, adapter.Name())
	}
	t.Logf("the Stripe adapter can: %v", can)
}

// TestTheDeployedCommandsCreateAtStripe: preparing a payment creates its
// PaymentIntent at Stripe, once per reference, and records its id.
func TestTheDeployedCommandsCreateAtStripe(t *testing.T) {
	d := deploy(t, nil, nil)
	ref, intent := d.prepare("create")
	if intent == "" || intent != d.paid.IntentOf(ref) || !d.asked("POST /v1/payment_intents create-"+ref) {
		t.Errorf("payment id %q, Stripe's PaymentIntent for the reference %q, requests %v", intent, d.paid.IntentOf(ref), d.paid.Requests())
	}
}

// TestTheDeployedCommandsCancelAtStripe: giving up on a payment cancels its
// PaymentIntent at Stripe first, and nothing is owed once Stripe did.
func TestTheDeployedCommandsCancelAtStripe(t *testing.T) {
	d := deploy(t, nil, nil)
	ref, intent := d.prepare("cancel")
	res, err := d.s.Commands.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || res.State.Status != payment.StatusCancelled || res.State.CancellationDue() {
		t.Fatalf("cancel: %+v, %v; want cancelled, nothing owed", res.State, err)
	}
	if !d.asked("POST /v1/payment_intents/" + intent + "/cancel") {
		t.Errorf("Stripe was not asked to cancel %s: %v", intent, d.paid.Requests())
	}
}

// TestTheDeployedCommandsRecordStripesWordAtTheDeadline: a payment the renter paid
// whose webhook never came is confirmed when giving up on it finds Stripe's word
// that it succeeded (the cancellation is declined), caused by that word, after one
// cancel and one retrieve.
func TestTheDeployedCommandsRecordStripesWordAtTheDeadline(t *testing.T) {
	d := deploy(t, nil, nil)
	ref, intent := d.prepare("told")
	d.paid.Pay(intent, ref, 1500, "eur")
	res, err := d.s.Commands.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{})
	if !errors.Is(err, payment.ErrPaymentAlreadyConfirmed) || res.State.Status != payment.StatusConfirmed {
		t.Fatalf("the deadline of a payment Stripe took: %+v, %v; want it confirmed and the cancellation declined", res.State, err)
	}
	records, err := d.s.Store.Read(context.Background(), payment.StreamID(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := records[len(records)-1]; last.Type != "PaymentConfirmed" || last.CausationID != command.ToldCausationID(stripe.Name, intent) {
		t.Errorf("last recorded %s caused by %q; want PaymentConfirmed caused by Stripe's word", last.Type, last.CausationID)
	}
	if cancels, retrieves := d.paid.Counts(); cancels != 1 || retrieves != 1 {
		t.Errorf("Stripe asked to cancel %d times and read %d times; want once each", cancels, retrieves)
	}
}

// TestTheDeployedCommandsRefundALateSuccessAtStripe: a success Stripe reports after
// the payment was given up on is refunded there (refund-<reference>).
func TestTheDeployedCommandsRefundALateSuccessAtStripe(t *testing.T) {
	d := deploy(t, nil, nil)
	ref, intent := d.prepare("refund")
	if _, err := d.s.Commands.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if code, body := d.webhook("payment_intent.succeeded", "evt_late_refund", ref, intent); code != http.StatusOK {
		t.Fatalf("the late success: %d %s", code, body)
	}
	if got := d.types(ref); !slices.Equal(got, []string{"PaymentPrepared", "PaymentCancelled", "PaymentSucceededAfterCancellation", "RefundRequested"}) {
		t.Errorf("recorded %v; want the late success refunded", got)
	}
	if !d.asked("POST /v1/refunds refund-" + ref) {
		t.Errorf("Stripe was not asked to refund %s: %v", ref, d.paid.Requests())
	}
}

// TestTheDeployedCommandsRefundMoneyTakenOnAnotherPaymentIntent: money a success
// reports taken on another PaymentIntent than the one recorded is refunded on that
// one (refund-unexpected-<id>), and the payment is left as it was.
func TestTheDeployedCommandsRefundMoneyTakenOnAnotherPaymentIntent(t *testing.T) {
	d := deploy(t, nil, nil)
	ref, _ := d.prepare("unexpected")
	const other = "pi_3TbC4nLkdIwHu7ixOTHER000"
	if code, body := d.webhook("payment_intent.succeeded", "evt_unexpected", ref, other); code != http.StatusOK || !strings.Contains(body, `"mismatch":true`) {
		t.Fatalf("a success on another PaymentIntent: %d %s", code, body)
	}
	if !d.asked("POST /v1/refunds refund-unexpected-" + other) {
		t.Errorf("Stripe was not asked to refund %s: %v", other, d.paid.Requests())
	}
	if got := d.types(ref); !slices.Equal(got, []string{"PaymentPrepared"}) {
		t.Errorf("the payment recorded %v; want it untouched", got)
	}
}

// TestTheDeployedCommandsFindTheReferenceAtStripe: an event that names only the
// PaymentIntent (a charge without our metadata) is applied to our payment once
// Stripe, asked, gives the PaymentIntent's reference.
func TestTheDeployedCommandsFindTheReferenceAtStripe(t *testing.T) {
	d := deploy(t, nil, nil)
	ref, intent := d.prepare("find")
	if _, err := d.s.Commands.Payment(context.Background(), payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if code, body := d.webhook("payment_intent.succeeded", "evt_find_late", ref, intent); code != http.StatusOK {
		t.Fatalf("the late success: %d %s", code, body)
	}
	if code, body := d.webhook("charge.refunded.no_metadata", "evt_find_refunded", ref, intent); code != http.StatusOK {
		t.Fatalf("the charge refunded, naming only the PaymentIntent: %d %s", code, body)
	}
	if !d.asked("GET /v1/payment_intents/" + intent) {
		t.Errorf("Stripe was not asked for %s's reference: %v", intent, d.paid.Requests())
	}
	if got := d.types(ref); !slices.Contains(got, "PaymentRefunded") {
		t.Errorf("recorded %v; want the refund Stripe reported applied to %s", got, ref)
	}
}

// hangs is Stripe not answering the requests whose path ends with suffix, until
// the test ends, and answering through next otherwise.
type hangs struct {
	next   http.RoundTripper
	ended  chan struct{}
	mu     sync.Mutex
	suffix string
}

func (h *hangs) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	suffix := h.suffix
	h.mu.Unlock()
	if suffix != "" && strings.HasSuffix(r.URL.Path, suffix) {
		select {
		case <-r.Context().Done():
		case <-h.ended:
		}
		return nil, errors.New("stripe did not answer")
	}
	return h.next.RoundTrip(r)
}

func (h *hangs) set(suffix string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.suffix = suffix
}

// TestTheDeployedCommandsBoundEveryCallToStripe: with PAYMENT_PROVIDER_TIMEOUT at
// one second, a Stripe that does not answer fails the call with
// command.ErrProviderTimeout and nothing is recorded (creating), or the
// cancellation goes ahead owed to Stripe (cancelling).
func TestTheDeployedCommandsBoundEveryCallToStripe(t *testing.T) {
	stalled := &hangs{next: http.DefaultTransport, ended: make(chan struct{})}
	d := deploy(t, stalled, map[string]string{paymentfn.EnvProviderTimeout: "1s"})
	// Released before Stripe's server stops, which waits for its requests.
	t.Cleanup(func() { close(stalled.ended) })
	// A ceiling: the test must not hang.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	stalled.set("/v1/payment_intents")
	ref := payment.ReferenceFor("stalled_AAAAAAAAAAAAAAAAAAAAAA")
	_, err := d.s.Commands.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "set-by-the-provider", Amount: 1500, Currency: "EUR"}, command.Meta{})
	if !errors.Is(err, command.ErrProviderTimeout) {
		t.Errorf("prepare with Stripe silent: %v; want ErrProviderTimeout", err)
	}
	if got := d.types(ref); len(got) != 0 {
		t.Errorf("recorded %v before Stripe answered", got)
	}

	stalled.set("")
	ref, _ = d.prepare("stalled-cancel")
	stalled.set("/cancel")
	cancelCtx, done := context.WithTimeout(ctx, 8*time.Second) // the command function's budget, less its margin
	defer done()
	res, err := d.s.Commands.Payment(cancelCtx, payment.CancelPayment{Reference: ref}, command.Meta{})
	if err != nil || res.State.Status != payment.StatusCancelled || !res.State.CancellationDue() {
		t.Errorf("cancel with Stripe silent: %+v, %v; want cancelled, the cancellation owed", res.State, err)
	}
}

// TestTheDeployedCommandsRecordARefundMadeAgainAfterOneByHand: Stripe refunds a
// late success (its charge.refunded), then reports that refund failed
// (refund.failed): the refund is owed, and an operator pays it back by hand; then
// someone refunds the charge again in Stripe's dashboard, and Stripe's new
// charge.refunded, created after the failure, is recorded: the refund reads
// refunded-twice, the renter paid back twice. Stripe's events go through the
// command function's own API, the record by hand through its commands.
func TestTheDeployedCommandsRecordARefundMadeAgainAfterOneByHand(t *testing.T) {
	d := deploy(t, nil, nil)
	ctx := context.Background()
	ref, intent := d.prepare("twice")
	if _, err := d.s.Commands.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if code, body := d.webhook("payment_intent.succeeded", "evt_twice_late", ref, intent); code != http.StatusOK {
		t.Fatalf("the late success: %d %s", code, body)
	}
	s, _, err := d.s.Commands.LoadPayment(ctx, ref)
	if err != nil || s.Refund != payment.RefundStatusRequested || s.RefundID == "" {
		t.Fatalf("the late success refunded at Stripe: %+v, %v", s, err)
	}
	made := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(created time.Time) func(map[string]any) {
		return func(event map[string]any) { event["created"] = created.Unix() }
	}
	steps := []struct {
		name, event string
		change      func(map[string]any)
	}{
		{"evt_twice_refunded", "charge.refunded", at(made)},
		{"evt_twice_failed", "refund.failed", func(event map[string]any) {
			at(made.Add(10 * time.Minute))(event)
			event["data"].(map[string]any)["object"].(map[string]any)["id"] = s.RefundID // the Refund Stripe made
		}},
	}
	for _, step := range steps {
		if code, body := d.webhookWith(step.event, step.name, ref, intent, step.change); code != http.StatusOK {
			t.Fatalf("%s: %d %s", step.event, code, body)
		}
	}
	rentalID, _ := payment.RentalIDFor(ref)
	if _, err := d.s.Commands.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{}); err != nil {
		t.Fatalf("the refund owed, made by hand: %v", err)
	}
	if code, body := d.webhookWith("charge.refunded", "evt_twice_dashboard", ref, intent, at(made.Add(30*time.Minute))); code != http.StatusOK {
		t.Fatalf("the dashboard refund's charge.refunded: %d %s", code, body)
	}
	if s, _, err := d.s.Commands.LoadPayment(ctx, ref); err != nil || s.Refund != payment.RefundStatusTwice {
		t.Errorf("after a refund by hand and one in Stripe's dashboard: %q, %v; want refunded-twice", s.Refund, err)
	}
	if got := d.types(ref); !slices.Equal(got[len(got)-2:], []string{"RefundMadeByHand", "PaymentRefunded"}) {
		t.Errorf("recorded %v; want the dashboard's refund recorded after the one by hand", got)
	}
}

// TestTheDeployedCommandsOweWhatStripeTook: at a payment's deadline Stripe says the
// PaymentIntent succeeded, but for 150000 where 1500 EUR were recorded, and then
// refuses its refund for good (a dispute): the payment is given up, and what is
// owed is what Stripe took, 150000 EUR; a refund made by hand for the 1500
// recorded is refused, saying so, and one for 150000 settles it. On the command
// function as commandfn.Build makes it.
func TestTheDeployedCommandsOweWhatStripeTook(t *testing.T) {
	refunds := &stripemock.Refunds{Next: http.DefaultTransport}
	d := deploy(t, refunds, nil)
	ctx := context.Background()
	ref, intent := d.prepare("took")
	d.paid.Pay(intent, ref, 150000, "eur")
	refunds.Play(stripemock.Refusal(400, "invalid_request_error", "charge_disputed", "Charge ch_1 has been charged back; cannot issue a refund."), -1)

	res, err := d.s.Commands.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{})
	taken := payment.Money{Amount: 150000, Currency: "EUR"}
	if err != nil || res.State.Status != payment.StatusCancelled || res.State.Refund != payment.RefundStatusOwed || res.State.Charge() != taken {
		t.Fatalf("the deadline of a payment Stripe took 150000 EUR for and will not refund: %+v, %v; want it given up, %v owed", res.State, err, taken)
	}
	rentalID, _ := payment.RentalIDFor(ref)
	_, err = d.s.Commands.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{})
	if !errors.Is(err, payment.ErrRefundAmountNotOwed) || !strings.Contains(err.Error(), "150000 EUR is owed") {
		t.Fatalf("by hand for the 1500 recorded: %v; want refused, saying 150000 EUR is owed", err)
	}
	made, err := d.s.Commands.RefundMadeByHand(ctx, rentalID, payment.RecordRefundMadeByHand{Amount: 150000, OperatorReference: "bank-1", RecordedBy: "ann"}, command.Meta{})
	if err != nil || made.Amount != taken.Amount || made.Currency != taken.Currency || made.Refund != payment.RefundStatusMadeByHand {
		t.Errorf("by hand for what Stripe took: %+v, %v", made, err)
	}
}
