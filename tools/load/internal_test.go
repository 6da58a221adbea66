package load

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/domain/ident"
)

func TestIntentsAreDealtInTheirShares(t *testing.T) {
	g := newGen(Config{Rentals: 20, Mix: DefaultMix})
	got := map[Intent]int{}
	var first []Intent
	for {
		i, ok := g.claim(context.Background())
		if !ok {
			break
		}
		got[i]++
		if len(first) < 4 {
			first = append(first, i)
		}
	}
	want := map[Intent]int{Confirm: 10, Reject: 4, NeverPay: 3, OperatorCancel: 3}
	for i, n := range want {
		if got[i] != n {
			t.Errorf("%s: %d of 20, want %d (all: %v)", i, got[i], n, got)
		}
	}
	if first[0] != Confirm || first[1] == first[0] {
		t.Errorf("the first intents %v are not spread", first)
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix("confirmed=1, never-paid=3")
	if err != nil || m != (Mix{Confirm: 1, NeverPay: 3}) {
		t.Errorf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"confirmed", "paid=1", "confirmed=-1", "confirmed=0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	rep := Report{
		Rentals:  map[Intent][]string{Confirm: {"a", "b"}, Reject: {"c"}, NeverPay: {"d"}, OperatorCancel: {"e"}},
		Diverted: []string{"f", "g"},
		PaidLate: []string{"g"},
	}
	end := EndState{
		Rentals: map[string]string{"a": "returned", "b": "approved", "c": "rejected", "d": "cancelled", "e": "cancelled", "f": "cancelled", "g": "cancelled"},
		Bikes:   map[string]string{"x": "available", "y": "rented"},
		Refunds: map[string]string{"g": "owed"},
	}
	if v := Check(rep, end); len(v) != 0 {
		t.Errorf("violations %v, want none", v)
	}
	// The money of a late success must be on its way back, and no other rental may
	// have a refund.
	end.Refunds = map[string]string{"f": "owed"}
	if v := Check(rep, end); len(v) != 2 || !strings.Contains(v[0], "rental g, paid after") || !strings.Contains(v[1], "rental f has refund") {
		t.Errorf("violations %v, want g's missing refund and f's stray one", v)
	}
	end.Refunds = map[string]string{"g": "refunded"}
	end.Rentals["d"] = "awaiting-payment"
	end.Bikes["x"] = "requested"
	rep.Unclean = 1
	if v := Check(rep, end); len(v) != 3 {
		t.Errorf("violations %v, want 3", v)
	}
}

func TestBackoff(t *testing.T) {
	base := 100 * time.Millisecond
	us := time.Microsecond
	for try, want := range []time.Duration{100000 * us, 100000 * us, 150000 * us, 225000 * us, 337500 * us, 506250 * us} {
		if got := backoff(base, try); got != want {
			t.Errorf("backoff(%v, %d) = %v, want %v", base, try, got, want)
		}
	}
	if got := backoff(base, 100); got != 8*base {
		t.Errorf("backoff(%v, 100) = %v, want the cap %v", base, got, 8*base)
	}
}

func TestRentedBikes(t *testing.T) {
	rentals := map[string]string{
		"b1_AAAAAAAAAAAAAAAAAAAAAA": "approved",
		"b2_AAAAAAAAAAAAAAAAAAAAAA": "returned",
		"b3_AAAAAAAAAAAAAAAAAAAAAA": "cancelled",
		"not-a-rental-id":           "approved",
	}
	got := rentedBikes(rentals)
	if len(got) != 1 || !got["b1"] {
		t.Errorf("rentedBikes = %v, want only b1", got)
	}
}

func TestRenterIdentities(t *testing.T) {
	prefix := "load-abcdef789012345" // as long as a prefix may be
	if got := renterID(prefix, 0, 1); got != prefix+"-r1-1" {
		t.Errorf("renterID = %q", got)
	}
	if id := renterID(prefix, 9999, 99999); !ident.Valid(id) {
		t.Errorf("renter %q is not a valid renter id", id)
	}
	if id := operatorSubject(prefix); !ident.Valid(id) {
		t.Errorf("operator %q is not a valid subject", id)
	}
}

// TestWebhookAnswers plays the service's side of POST /webhooks/payments: the
// generator sends one signed generic event, with no token, and reads the answer. A
// success answered cancelled with a refund is a late payment: the rental is diverted
// and paid late; a failure answered cancelled is diverted only; a success answered
// cancelled without a refund (money kept) is unclean.
func TestWebhookAnswers(t *testing.T) {
	secret := []byte("load-test-webhook-secret")
	verifier, err := webhook.NewVerifier(secret, webhook.DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "rp_b1_AAAAAAAAAAAAAAAAAAAAAA"
	for _, c := range []struct {
		name, eventType, reason, status, refund string
		settled, diverted, late, unclean        bool
	}{
		{name: "confirmed", eventType: generic.TypeSucceeded, status: "confirmed", settled: true},
		{name: "rejected", eventType: generic.TypeFailed, reason: "declined", status: "rejected", settled: true},
		{name: "a late success", eventType: generic.TypeSucceeded, status: "cancelled", refund: "owed", diverted: true, late: true},
		{name: "a late failure", eventType: generic.TypeFailed, reason: "declined", status: "cancelled", diverted: true},
		{name: "money kept", eventType: generic.TypeSucceeded, status: "cancelled", unclean: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent generic.Event
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPost || r.URL.Path != "/webhooks/payments" || r.Header.Get("Authorization") != "" {
					t.Errorf("%s %s with Authorization %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				}
				if err := verifier.Verify(r.Header.Get(webhook.Header), body, time.Now()); err != nil {
					t.Errorf("signature: %v", err)
				}
				dec := json.NewDecoder(bytes.NewReader(body))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&sent); err != nil {
					t.Errorf("body %s: %v", body, err)
				}
				w.Header().Set("Content-Type", "application/json")
				ans, _ := json.Marshal(map[string]string{"eventId": sent.ID, "paymentReference": sent.PaymentReference, "status": c.status, "refund": c.refund})
				w.Write(ans)
			}))
			defer srv.Close()
			g := newGen(Config{BaseURL: srv.URL, WebhookSecret: secret, Client: srv.Client(), MaxBusyRetries: 1})
			if got := g.webhook(context.Background(), "tok", ref, c.eventType, c.reason); got != c.settled {
				t.Errorf("settled %t, want %t", got, c.settled)
			}
			if sent.Type != c.eventType || sent.PaymentReference != ref || sent.Reason != c.reason || !strings.HasPrefix(sent.ID, "evt-") {
				t.Errorf("sent %+v", sent)
			}
			rep := g.report(time.Second)
			if got := len(rep.Diverted) == 1; got != c.diverted {
				t.Errorf("diverted %v", rep.Diverted)
			}
			if got := len(rep.PaidLate) == 1; got != c.late {
				t.Errorf("paid late %v", rep.PaidLate)
			}
			if got := rep.Unclean > 0; got != c.unclean {
				t.Errorf("unclean %d: %v", rep.Unclean, rep.UncleanSamples)
			}
		})
	}
}
