package httpapi_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func TestTheWebhookSecretNeverReachesTheLogs(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		rentalID := h.rentBike("b1", "alice")
		ref := h.prepare(rentalID)
		confirm := "/webhooks/payments"
		paid := event("evt-1", generic.TypeSucceeded, ref, "")
		before := strings.Count(h.logs.String(), "\n")

		s := string(secret)
		withSecret := `{"secret":"` + s + `"}`
		bearer := map[string]string{"Authorization": "Bearer " + s}
		for _, tc := range []struct {
			name, method, path, body string
			headers                  map[string]string
			status                   int
		}{
			{"forged webhook carrying the secret", http.MethodPost, confirm, withSecret,
				map[string]string{webhook.Header: fmt.Sprintf("t=%d,v1=%.64s", h.now.Unix(), hex.EncodeToString(secret)+strings.Repeat("0", 64))}, http.StatusUnauthorized},
			{"the secret as the signature", http.MethodPost, confirm, paid, map[string]string{webhook.Header: s}, http.StatusUnauthorized},
			{"the secret as a v1 value", http.MethodPost, confirm, paid, map[string]string{webhook.Header: "t=1,v1=" + s}, http.StatusUnauthorized},
			{"bearer token on a webhook", http.MethodPost, confirm, paid, bearer, http.StatusUnauthorized},
			{"bearer token on a query", http.MethodGet, "/bikes/b1", "", bearer, http.StatusOK},
			{"bearer token on a refused request", http.MethodPost, "/rentals", withSecret, bearer, http.StatusBadRequest},
			{"the secret as a field name", http.MethodPut, "/bikes/b2", `{"` + s + `":1}`, nil, http.StatusBadRequest},
			{"the secret as an idempotency key", http.MethodPost, "/rentals", `{"bikeId":"b1"}`,
				as("bob", map[string]string{"Idempotency-Key": s}), http.StatusConflict},
			{"the secret as a bike id", http.MethodGet, "/bikes/" + s, "", nil, http.StatusNotFound},
			{"the secret in a signed reason", http.MethodPost, confirm, event("evt-2", generic.TypeFailed, ref, s),
				signed(secret, event("evt-2", generic.TypeFailed, ref, s), h.now), http.StatusOK},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := h.expect(tc.method, tc.path, tc.body, tc.headers, tc.status)
				if r.status == http.StatusUnauthorized && strings.Contains(r.raw, s) {
					t.Errorf("401 body carries the secret: %s", r.raw)
				}
			})
		}

		logs := h.logs.String()
		// Every request was logged, so the absence below means something.
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		if got := len(lines) - before; got != 10 {
			t.Fatalf("%d log lines for 10 requests:\n%s", got, logs)
		}
		for _, line := range lines {
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil || entry["status"] == nil {
				t.Errorf("log line is not a JSON request record: %s", line)
			}
		}
		for _, leak := range []string{s, hex.EncodeToString(secret), "Bearer"} {
			if strings.Contains(logs, leak) {
				t.Errorf("the logs carry %q:\n%s", leak, logs)
			}
		}
	})
}

func TestStaleWebhooksAreRefused(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		rentalID := h.rentBike("b1", "alice")
		ref := h.prepare(rentalID)
		bikeEvents := h.streamLen(rental.StreamID("b1"))
		confirm, reject := "/webhooks/payments", "/webhooks/payments"
		confirmBody, rejectBody := event("evt-1", generic.TypeSucceeded, ref, ""), event("evt-2", generic.TypeFailed, ref, "card declined")

		for _, tc := range []struct {
			name, path, body string
			at               time.Time
		}{
			{"confirm signed 6 minutes ago", confirm, confirmBody, h.now.Add(-6 * time.Minute)},
			{"reject signed 6 minutes ago", reject, rejectBody, h.now.Add(-6 * time.Minute)},
			{"confirm signed 6 minutes ahead", confirm, confirmBody, h.now.Add(6 * time.Minute)},
			{"confirm signed a day ago", confirm, confirmBody, h.now.Add(-24 * time.Hour)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := h.expect(http.MethodPost, tc.path, tc.body, signed(secret, tc.body, tc.at), http.StatusUnauthorized)
				if !strings.HasSuffix(r.str("type"), "#problem-unauthorized") {
					t.Errorf("type = %q, want the unauthorized problem", r.str("type"))
				}
			})
		}
		if n := h.streamLen(payment.StreamID(ref)); n != 1 {
			t.Errorf("stale webhooks appended: the payment has %d events, want 1", n)
		}
		if n := h.streamLen(rental.StreamID("b1")); n != bikeEvents {
			t.Errorf("stale webhooks changed the bike: %d events, want %d", n, bikeEvents)
		}
		// The same webhook signed now is accepted: the refusals above were for time.
		h.expect(http.MethodPost, confirm, confirmBody, signed(secret, confirmBody, h.now), http.StatusOK)
		if n := h.streamLen(payment.StreamID(ref)); n != 2 {
			t.Errorf("a fresh confirm left %d payment events, want 2", n)
		}
	})
}
