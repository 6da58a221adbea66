package demo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

func TestRandomID(t *testing.T) {
	valid := regexp.MustCompile(`^demo-bike-[a-z0-9]{6}$`)
	seen := map[string]bool{}
	for range 100 {
		id := randomID("demo-bike-", 6)
		if !valid.MatchString(id) || len(id) > 36 {
			t.Fatalf("randomID = %q, want demo-bike- and 6 lowercase alphanumerics, at most 36 characters", id)
		}
		seen[id] = true
	}
	if len(seen) < 95 {
		t.Errorf("100 ids, only %d distinct", len(seen))
	}
}

func history(types ...string) []entry {
	h := make([]entry, len(types))
	for i, typ := range types {
		h[i] = entry{Type: typ}
	}
	return h
}

func TestCheckHistory(t *testing.T) {
	with := append(history("BikeRegistered"), history(aliceTrail...)...)
	if err := checkHistory(with, aliceTrail); err != nil {
		t.Errorf("full trail with an extra event: %v", err)
	}
	swapped := history("BikeRequested", "PaymentPrepared", "RentalPaymentRequested", "RequestRejected",
		"PaymentCancelled", "RentalPaymentProcessCompleted")
	err := checkHistory(swapped, bobTrail)
	if err == nil || !strings.Contains(err.Error(), "RequestRejected is missing after the first 4") {
		t.Errorf("out of order: err = %v", err)
	}
	if err := checkHistory(nil, bobTrail); err == nil || !strings.Contains(err.Error(), "BikeRequested is missing after the first 0") {
		t.Errorf("empty history: err = %v", err)
	}
}

func TestFormatHistory(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 3, 4, 567_890_000, time.FixedZone("CEST", 2*3600))
	h := []entry{
		{At: at, Stream: "bike-b1", Version: 2, Type: "BikeRequested", Data: json.RawMessage(`{"renter":"alice", "bikeId":"b1"}`)},
		{At: at.Add(time.Second), Stream: "payment-rp_b1_x", Version: 1, Type: "PaymentPrepared",
			Data: json.RawMessage(`{"amount": {"cents": 1500, "currency": "EUR"}, "note": "two words", "empty": ""}`)},
		{At: at, Stream: "s", Version: 10, Type: "T", Data: json.RawMessage(`null`)},
	}
	want := []string{
		"10:03:04.567  bike-b1              v2   BikeRequested    bikeId=b1 renter=alice",
		`10:03:05.567  payment-rp_<rental>  v1   PaymentPrepared  amount={"cents":1500,"currency":"EUR"} empty="" note="two words"`,
		"10:03:04.567  s                    v10  T                null",
	}
	got := formatHistory(h, "b1_x")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("formatHistory:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestWrap(t *testing.T) {
	got := wrap("one two three four\nfive", 9)
	want := []string{"one two", "three", "four", "five"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}

func TestRunFailsClearlyOnServerErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"title":"Internal Server Error","status":500}`))
	}))
	defer srv.Close()
	var out strings.Builder
	err := Run(context.Background(), Config{BaseURL: srv.URL, WebhookSecret: []byte("0123456789abcdef"), Out: &out, Wait: time.Second})
	if err == nil {
		t.Fatal("Run succeeded against a server that answers 500 to everything")
	}
	for _, s := range []string{"step 1 (Renters and operators sign in)", "POST /local/tokens", "answered 500", `"title":"Internal Server Error"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if !strings.Contains(out.String(), "1. Renters and operators sign in") || !strings.Contains(out.String(), "FAILED:") {
		t.Errorf("narration does not show the failed step:\n%s", out.String())
	}
}

// tokenServer answers POST /local/tokens with "tok-<sub>", or "op-<sub>" for an
// operator, and hands every other request to next.
func tokenServer(t *testing.T, asked *[]string, next http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/local/tokens" {
			next(w, r)
			return
		}
		var req struct {
			Sub      string `json:"sub"`
			Operator bool   `json:"operator"`
		}
		if r.Method != "POST" || json.NewDecoder(r.Body).Decode(&req) != nil {
			t.Errorf("token request %s %s", r.Method, r.URL)
		}
		token := "tok-" + req.Sub
		if req.Operator {
			token = "op-" + req.Sub
		}
		*asked = append(*asked, token)
		w.Write([]byte(`{"token":"` + token + `","expiresIn":3600}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunSignsInAndRegistersWithTheOperatorsToken(t *testing.T) {
	var asked []string
	var auth string
	srv := tokenServer(t, &asked, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PUT" {
			auth = r.Header.Get("Authorization")
		}
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"title":"Internal Server Error","status":500}`))
	})
	var out strings.Builder
	err := Run(context.Background(), Config{BaseURL: srv.URL, WebhookSecret: []byte("0123456789abcdef"), Out: &out, Wait: time.Second})
	if err == nil {
		t.Fatal("Run succeeded against a server that answers 500 to everything but tokens")
	}
	for _, s := range []string{"step 2 (An operator registers two bikes)", "PUT /bikes/demo-bike-", "want 201 Created, got 500 Internal Server Error"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if strings.Join(asked, " ") != "tok-alice tok-bob tok-carol op-ops" {
		t.Errorf("tokens asked for: %q, want alice's, bob's, carol's and an operator's", asked)
	}
	if auth != "Bearer op-ops" {
		t.Errorf("PUT /bikes carried Authorization %q, want the operator's token", auth)
	}
	if !strings.Contains(out.String(), "Authorization: Bearer <the operator's token>") {
		t.Errorf("narration does not say whose token the request carries:\n%s", out.String())
	}
}

func TestDescribeToken(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct{ token, want string }{
		{enc(`{"alg":"RS256"}`) + "." + enc(`{"sub":"alice","iat":1000,"exp":4600}`) + ".sig", "sub=alice, valid for 1h"},
		{"h." + enc(`{"sub":"ops","scope":"bikerental/operator","iat":1000,"exp":1090}`) + ".sig", "sub=ops scope=bikerental/operator, valid for 1m30s"},
		{"opaque", "not a JWT"},
		{"a.!!.c", "with claims that do not decode"},
	} {
		if got := describeToken(c.token); got != c.want {
			t.Errorf("describeToken(%q) = %q, want %q", c.token, got, c.want)
		}
	}
}

func TestCheckPublicBike(t *testing.T) {
	for _, c := range []struct {
		body      string
		available bool
		err       string
	}{
		{`{"bikeId":"b1","available":true}`, true, ""},
		{`{"bikeId":"b1","available":false}`, false, ""},
		{`{"bikeId":"b1","available":false,"renter":"alice"}`, false, "only bikeId and available, got available, bikeId, renter"},
		{`{"bikeId":"b1","status":"rented"}`, false, "only bikeId and available, got bikeId, status"},
		{`{"bikeId":"b2","available":true}`, false, `want bikeId "b1"`},
		{`{"bikeId":"b1","available":"yes"}`, false, "available a boolean"},
	} {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.body), &raw); err != nil {
			t.Fatal(err)
		}
		available, err := checkPublicBike(raw, "b1")
		if c.err == "" && (err != nil || available != c.available) {
			t.Errorf("%s: available %t, err %v; want %t", c.body, available, err, c.available)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err = %v, want one saying %q", c.body, err, c.err)
		}
	}
}

func TestRunNeedsBaseURL(t *testing.T) {
	if err := Run(context.Background(), Config{}); err == nil {
		t.Error("Run without BaseURL succeeded")
	}
}

func TestRunNeedsAKnownProviderAndItsSecret(t *testing.T) {
	for _, cfg := range []Config{
		{BaseURL: "http://127.0.0.1:1", Provider: "paypal"},
		{BaseURL: "http://127.0.0.1:1", Provider: stripe.Name}, // no StripeWebhookSecret
	} {
		if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "Config.") {
			t.Errorf("Run(%+v) = %v, want a configuration error", cfg, err)
		}
	}
}

// TestTheProviderEventsAreWhatTheAdaptersRead plays both providers' events through
// the adapters the service parses them with: each must be authentic with the right
// secret, and be the event it claims to be, about the rental's payment.
func TestTheProviderEventsAreWhatTheAdaptersRead(t *testing.T) {
	r := rentalAccepted{RentalID: "bike-1_AAAAAAAAAAAAAAAAAAAAAA", Renter: carol, PaymentReference: "rp_bike-1_AAAAAAAAAAAAAAAAAAAAAA"}
	now := time.Now()
	genericSecret, stripeSecret := []byte("generic-demo-test-secret"), []byte("whsec_demo_test_secret")

	d := &demo{cfg: Config{Provider: generic.Name, WebhookSecret: genericSecret}}
	ev, err := d.paymentSucceeded(r, paymentView{PaymentID: "pay_x"})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := webhook.NewVerifier(genericSecret, webhook.DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	got, err := generic.Provider{Verifier: verifier}.ParseWebhook(d.signed(ev, d.secret()).Get, ev.body, now)
	if err != nil || ev.path != "/webhooks/payments" || got.Kind != payment.ProviderSucceeded || got.Reference != r.PaymentReference || got.EventID != ev.id {
		t.Errorf("the generic payment.succeeded %s: %+v, %v", ev.body, got, err)
	}
	if _, err := (generic.Provider{Verifier: verifier}).ParseWebhook(d.signed(ev, []byte("another secret")).Get, ev.body, now); err == nil {
		t.Error("a generic event signed with another secret was authentic")
	}
	if again, _ := d.paymentSucceeded(r, paymentView{}); again.id == ev.id {
		t.Errorf("two events share the id %s", ev.id)
	}

	d = &demo{cfg: Config{Provider: stripe.Name, StripeWebhookSecret: stripeSecret}, stripe: true}
	adapter, err := stripe.New(stripe.Config{SecretKey: "sk_test_123", WebhookSecret: string(stripeSecret)})
	if err != nil {
		t.Fatal(err)
	}
	intent := paymentView{PaymentID: "pi_3TbC4nLkdIwHu7ix0yXq2aZd", amount: 1500, currency: "eur"}
	succeeded, err := d.paymentSucceeded(r, intent)
	if err != nil {
		t.Fatal(err)
	}
	refunded, err := d.chargeRefunded(r, intent)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ev       event
		kind     payment.ProviderEventKind
		recorded string
	}{{succeeded, payment.ProviderSucceeded, "payment_intent.succeeded"}, {refunded, payment.ProviderRefunded, "charge.refunded"}} {
		got, err := adapter.ParseWebhook(d.signed(c.ev, d.secret()).Get, c.ev.body, now)
		if err != nil || c.ev.path != "/webhooks/stripe" || got.Kind != c.kind || got.Reference != r.PaymentReference || got.PaymentID != intent.PaymentID || got.EventID != c.ev.id {
			t.Errorf("%s %s: %+v, %v", c.recorded, c.ev.body, got, err)
		}
		if _, err := adapter.ParseWebhook(d.signed(c.ev, []byte("whsec_another")).Get, c.ev.body, now); err == nil {
			t.Errorf("%s signed with another secret was authentic", c.recorded)
		}
		sameShape(t, c.recorded, c.ev.body)
	}
}

// sameShape checks that every field of the demo's Stripe event, at every depth, is
// one the adapter's recorded event of that type has.
func sameShape(t *testing.T, recorded string, body []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "provider", "stripe", "testdata", "events", recorded+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, got, want map[string]any)
	walk = func(path string, got, want map[string]any) {
		for k, v := range got {
			w, ok := want[k]
			if !ok {
				t.Errorf("%s: the demo's event has %s%s, which the recorded event lacks", recorded, path, k)
				continue
			}
			if g, ok := v.(map[string]any); ok {
				if w, ok := w.(map[string]any); ok {
					walk(path+k+".", g, w)
				}
			}
		}
	}
	walk("", got, want)
	if got["type"] != want["type"] || got["api_version"] != want["api_version"] {
		t.Errorf("%s: type %v, API version %v; recorded %v, %v", recorded, got["type"], got["api_version"], want["type"], want["api_version"])
	}
}

func TestShowPending(t *testing.T) {
	for _, c := range []struct{ name, pending, rental, narration string }{
		{"listed", `{"payments":[{"paymentReference":"rp_b_r","rentalId":"b_r","preparedAt":"2026-05-01T12:00:00.5Z","ageSeconds":2}],"count":1,"limit":1000}`,
			"awaiting-payment", "1 outstanding; Bob's: rp_b_r, rental b_r, prepared 12:00:00.500 UTC, 2s old"},
		{"not configured", "501", "awaiting-payment", "has no pending-payment projection"},
		{"already swept", `{"payments":[],"count":0,"limit":1000}`, "cancelled", "the rental is already cancelled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				want := "Bearer op-ops"
				if strings.HasPrefix(r.URL.Path, "/rentals/") {
					want = "Bearer tok-bob"
				}
				if got := r.Header.Get("Authorization"); got != want {
					t.Errorf("%s %s: Authorization %q, want %q", r.Method, r.URL, got, want)
				}
				switch {
				case r.URL.Path == "/payments/pending" && c.pending == "501":
					w.WriteHeader(http.StatusNotImplemented)
				case r.URL.Path == "/payments/pending":
					w.Write([]byte(c.pending))
				case r.URL.Path == "/rentals/b_r":
					w.Write([]byte(`{"status":"` + c.rental + `"}`))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			var out strings.Builder
			d := &demo{cfg: Config{Out: &out, Wait: time.Second, Client: srv.Client()}, base: srv.URL,
				tokens: map[string]string{alice: "tok-alice", bob: "tok-bob", operator: "op-ops"},
				bob:    rentalAccepted{RentalID: "b_r", PaymentReference: "rp_b_r"}}
			if err := d.showPending(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), c.narration) {
				t.Errorf("narration does not say %q:\n%s", c.narration, out.String())
			}
		})
	}
}

func TestShowPendingFailsWhenNeverListed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/payments/pending" {
			w.Write([]byte(`{"payments":[],"count":0,"limit":1000}`))
			return
		}
		w.Write([]byte(`{"status":"awaiting-payment"}`))
	}))
	defer srv.Close()
	d := &demo{cfg: Config{Out: io.Discard, Wait: 500 * time.Millisecond, Client: srv.Client()}, base: srv.URL,
		bob: rentalAccepted{RentalID: "b_r", PaymentReference: "rp_b_r"}}
	err := d.showPending(context.Background())
	if err == nil || !strings.Contains(err.Error(), "gave up after 500ms; last seen: 200 OK, 0 outstanding, not Bob's") {
		t.Errorf("err = %v", err)
	}
}
