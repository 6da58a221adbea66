package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestAmbiguousBodiesAreRefused sends bodies that encoding/json alone would accept
// with a meaning of its choosing: a member twice (the last one wins) or named in
// another case (matched anyway). Each is 400 invalid-request naming the member,
// and writes nothing.
func TestAmbiguousBodiesAreRefused(t *testing.T) {
	h := newHarness(t, eventstore.NewMemory(), nil)
	for _, b := range []string{"a", "b", "c"} {
		h.expect(http.MethodPut, "/bikes/"+b, "", nil, http.StatusCreated)
	}
	rentalID := h.rentBike("r1", "alice")
	approve(t, h, rentalID, "alice")
	ref := h.prepare(h.rentBike("p1", "bob"))
	streams := []string{rental.StreamID("a"), rental.StreamID("b"), rental.StreamID("c"), rental.StreamID("r1"),
		renter.StreamID("carol"), payment.StreamID(ref)}
	before := h.totalEvents(streams...)
	paid := `"id":"e1","type":"payment.succeeded","paymentReference":"` + ref + `"`
	for _, tc := range []struct {
		name, method, path, body string
		member                   string // the member the reason must name
	}{
		{"bike id twice", "POST", "/rentals", `{"bikeId":"a","bikeId":"b"}`, `"bikeId"`},
		{"bike id twice, once escaped", "POST", "/rentals", `{"bikeId":"a","bike\u0049d":"b"}`, `"bikeId"`},
		{"bike id in upper case", "POST", "/rentals", `{"BIKEID":"c"}`, `"BIKEID"`},
		{"bike id with a Kelvin sign", "POST", "/rentals", "{\"bi\u212aeId\":\"c\"}", "\"bi\u212aeId\""},
		{"bike id and its case variant", "POST", "/rentals", `{"bikeId":"a","BikeId":"b"}`, `"BikeId"`},
		{"bike id null", "POST", "/rentals", `{"bikeId":null}`, `"bikeId"`},
		{"rental id twice on a return", "POST", "/bikes/r1/return", `{"rentalId":"` + rentalID + `","rentalId":"` + rentalID + `"}`, `"rentalId"`},
		{"rental id in another case on a return", "POST", "/bikes/r1/return", `{"RentalId":"` + rentalID + `"}`, `"RentalId"`},
		{"webhook type twice", "POST", "/webhooks/payments", `{` + paid + `,"type":"payment.failed"}`, `"type"`},
		{"webhook reference in another case", "POST", "/webhooks/payments", `{"id":"e1","type":"payment.succeeded","PaymentReference":"` + ref + `"}`, `"PaymentReference"`},
		{"webhook id twice", "POST", "/webhooks/payments", `{` + paid + `,"id":"e2"}`, `"id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := as("carol")
			if strings.HasPrefix(tc.path, "/webhooks/") {
				headers = with(anonymous, signed(secret, tc.body, h.now))
			} else if strings.HasPrefix(tc.path, "/bikes/") {
				headers = nil // the operator
			}
			r := h.do(tc.method, tc.path, tc.body, headers)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.raw)
			}
			if !strings.HasSuffix(r.str("type"), "#problem-invalid-request") {
				t.Errorf("problem type %q, want invalid-request", r.str("type"))
			}
			if reason := bodyReason(r); !strings.Contains(reason, tc.member) {
				t.Errorf("invalidParams %s do not name %s for body", r.raw, tc.member)
			}
		})
	}
	if after := h.totalEvents(streams...); after != before {
		t.Errorf("refused bodies wrote %d events", after-before)
	}
	if n := h.streamLen(command.ReceiptStreamID(generic.Name, "e1")) + h.streamLen(command.ReceiptStreamID(generic.Name, "e2")); n != 0 {
		t.Errorf("a refused webhook left %d receipts", n)
	}
}
