package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// tooDeepReason is what the depth check says in invalidParams; the decoder's own
// refusals say something else, which is how a test tells the two apart.
var tooDeepReason = fmt.Sprintf("nest more than %d levels deep", httpapi.MaxJSONDepth)

// arrays returns n nested arrays: "[[...]]".
func arrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// objects returns n nested objects: {"a":{"a":...{}}}.
func objects(n int) string { return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1) }

func TestJSONDepthLimit(t *testing.T) {
	const (
		reject  = "reject"    // POST /webhooks/payments, signed: a failure's "reason" can be anything
		rentals = "/rentals"  // POST /rentals
		bikes   = "/bikes/b7" // PUT /bikes/b7, which takes an empty object or no body
	)
	brackets := strings.Repeat("[{", 40)
	for _, tc := range []struct {
		name, route, body string
		status            int
		tooDeep           bool // refused by the depth check, not by the decoder
	}{
		{"deeply nested array", rentals, arrays(httpapi.MaxJSONDepth + 1), 400, true},
		{"deeply nested object", rentals, objects(httpapi.MaxJSONDepth + 1), 400, true},
		{"nested array inside a webhook", reject, `{"reason":"x","extra":` + arrays(httpapi.MaxJSONDepth) + `}`, 400, true},
		{"nested object on a route without a body", bikes, objects(httpapi.MaxJSONDepth + 1), 400, true},
		{"as deep as the body limit allows", rentals, strings.Repeat("[", httpapi.MaxBodyBytes), 400, true},
		{"unbalanced closers do not hide depth", rentals, strings.Repeat("]", 8) + arrays(httpapi.MaxJSONDepth+1), 400, true},
		// At the limit the decoder sees the body and refuses it for what it holds.
		{"array exactly at the limit", rentals, `{"bikeId":"x","extra":` + arrays(httpapi.MaxJSONDepth-1) + `}`, 400, false},
		{"objects exactly at the limit", rentals, objects(httpapi.MaxJSONDepth), 400, false},
		{"brackets inside a string", reject, `{"reason":"` + brackets + `"}`, 200, false},
		{"escaped quotes inside a string", reject, `{"reason":"\"` + brackets + `\" \\\"` + brackets + `"}`, 200, false},
		{"escaped backslash ends the string", rentals, `{"bikeId":"\\","extra":` + arrays(httpapi.MaxJSONDepth) + `}`, 400, true},
		{"unterminated string", rentals, `{"bikeId":"` + brackets, 400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, eventstore.NewMemory(), nil)
			var r reply
			switch tc.route {
			case reject:
				ref := h.prepare(h.rentBike("b1", "alice"))
				body := strings.Replace(tc.body, "{", `{"id":"e1","type":"payment.failed","paymentReference":"`+ref+`",`, 1)
				r = h.expect(http.MethodPost, "/webhooks/payments", body, with(anonymous, signed(secret, body, h.now)), tc.status)
			case bikes:
				r = h.expect(http.MethodPut, bikes, tc.body, nil, tc.status)
			default:
				r = h.expect(http.MethodPost, tc.route, tc.body, as("alice"), tc.status)
			}
			if tc.status == 200 {
				if r.str("status") != "rejected" {
					t.Errorf("reject answered %s", r.raw)
				}
				return
			}
			reason := bodyReason(r)
			if reason == "" {
				t.Fatalf("invalidParams of %s do not name body", r.raw)
			}
			if got := strings.Contains(reason, tooDeepReason); got != tc.tooDeep {
				t.Errorf("reason %q: refused by the depth check = %v, want %v", reason, got, tc.tooDeep)
			}
		})
	}
}

// bodyReason returns the reason invalidParams gives for "body", or "".
func bodyReason(r reply) string {
	params, _ := r.body["invalidParams"].([]any)
	for _, p := range params {
		if p, _ := p.(map[string]any); p["name"] == "body" {
			reason, _ := p["reason"].(string)
			return reason
		}
	}
	return ""
}

func TestJSONDepthLimitWritesNothing(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	ref := h.prepare(h.rentBike("b1", "alice"))
	body := `{"id":"e1","type":"payment.failed","paymentReference":"` + ref + `","reason":"x","extra":` + arrays(httpapi.MaxJSONDepth) + `}`
	h.expect(http.MethodPost, "/webhooks/payments", body, with(anonymous, signed(secret, body, h.now)), http.StatusBadRequest)
	h.expect(http.MethodPut, "/bikes/b2", objects(httpapi.MaxJSONDepth+1), nil, http.StatusBadRequest)
	if n := h.streamLen("payment-" + ref); n != 1 {
		t.Errorf("a refused reject wrote to the payment: %d events, want 1", n)
	}
	if n := h.streamLen("bike-b2"); n != 0 {
		t.Errorf("a refused register wrote %d events", n)
	}
}
