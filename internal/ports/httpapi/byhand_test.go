package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/deadlines"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// owe plays what makes the rental's refund owed: its payment cancelled, then taken
// by a provider that cannot refund.
func (h *harness) owe(rentalID string) string {
	h.t.Helper()
	ref := h.prepare(rentalID)
	for _, c := range []payment.Command{payment.CancelPayment{Reference: ref}, payment.ConfirmPayment{Reference: ref, ProviderEventID: "evt-late"}, payment.OweRefund{Reference: ref}} {
		if _, err := h.commands.Payment(context.Background(), c, command.Meta{}); err != nil {
			h.t.Fatalf("%T: %v", c, err)
		}
	}
	return ref
}

// TestARefundMadeByHandIsRecordedByAnOperatorOnce: an operator records a refund
// owed as paid back by hand, once; who recorded it is the token's subject; every
// refusal (a renter, nobody, an unknown rental, a rental that owes nothing, another
// amount, a second request, a bad body, a forged recorder) answers its problem and
// changes nothing.
func TestARefundMadeByHandIsRecordedByAnOperatorOnce(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		owedID := h.rentBike("b1", "alice")
		ref := h.owe(owedID)
		notOwedID := h.rentBike("b2", "bob")
		notOwedRef := h.prepare(notOwedID)
		streams := []string{payment.StreamID(ref), payment.StreamID(notOwedRef), rental.StreamID("b1"), rental.StreamID("b2")}
		path := "/rentals/" + owedID + "/refund-made-by-hand"
		const body = `{"amount":1500,"reference":"<img src=x onerror=alert(1)>"}`
		before := h.totalEvents(streams...)

		refused := []struct {
			name, path, body string
			headers          map[string]string
			status           int
			problem          string
		}{
			{"nobody", path, body, anonymous, 401, "unauthenticated"},
			{"the rental's own renter", path, body, as("alice"), 403, "forbidden"},
			{"another renter", path, body, as("bob"), 403, "forbidden"},
			{"an unknown rental", "/rentals/" + rental.NewRentalID("b1", "ZZZZZZZZZZZZZZZZZZZZZZ") + "/refund-made-by-hand", body, nil, 404, "rental-not-found"},
			{"an unknown bike's rental", "/rentals/" + rental.NewRentalID("b7", "ZZZZZZZZZZZZZZZZZZZZZZ") + "/refund-made-by-hand", body, nil, 404, "rental-not-found"},
			{"markup in the rental id", "/rentals/%3Cscript%3E/refund-made-by-hand", body, nil, 400, "invalid-request"},
			{"a rental that owes nothing", "/rentals/" + notOwedID + "/refund-made-by-hand", body, nil, 409, "refund-not-owed"},
			{"another amount", path, `{"amount":1499,"reference":"bank-1"}`, nil, 422, "refund-amount-not-owed"},
			{"no amount", path, `{"reference":"bank-1"}`, nil, 400, "invalid-request"},
			{"a negative amount", path, `{"amount":-1500,"reference":"bank-1"}`, nil, 400, "invalid-request"},
			{"an amount in a string", path, `{"amount":"1500","reference":"bank-1"}`, nil, 400, "invalid-request"},
			{"a fractional amount", path, `{"amount":1500.5,"reference":"bank-1"}`, nil, 400, "invalid-request"},
			{"no reference", path, `{"amount":1500}`, nil, 400, "invalid-request"},
			{"a reference with a line break", path, `{"amount":1500,"reference":"bank\nINFO forged"}`, nil, 400, "invalid-request"},
			{"a reference too long", path, `{"amount":1500,"reference":"` + strings.Repeat("x", 101) + `"}`, nil, 400, "invalid-request"},
			{"a forged recorder", path, `{"amount":1500,"reference":"bank-1","recordedBy":"someone-else"}`, nil, 400, "invalid-request"},
			{"a member twice", path, `{"amount":1,"amount":1500,"reference":"bank-1"}`, nil, 400, "invalid-request"},
			{"an empty body", path, ``, nil, 400, "invalid-request"},
		}
		for _, c := range refused {
			r := h.expect(http.MethodPost, c.path, c.body, c.headers, c.status)
			if !strings.HasSuffix(r.str("type"), "#problem-"+c.problem) {
				t.Errorf("%s: %s, want problem %s", c.name, r.raw, c.problem)
			}
			if n := h.totalEvents(streams...); n != before {
				t.Fatalf("%s: the refusal wrote %d events", c.name, n-before)
			}
		}
		if r := h.do(http.MethodPost, path, `{"amount":1499,"reference":"bank-1"}`, nil); !strings.Contains(r.str("detail"), "1500 EUR is owed, not 1499") {
			t.Errorf("another amount's detail does not say what is owed: %s", r.raw)
		}

		r := h.expect(http.MethodPost, path, body, nil, http.StatusOK)
		var got struct {
			RentalID, PaymentReference, Currency, Reference, RecordedBy, RecordedAt, Refund string
			Amount                                                                          int64
		}
		if err := json.Unmarshal([]byte(r.raw), &got); err != nil {
			t.Fatal(err)
		}
		if got.RentalID != owedID || got.PaymentReference != ref || got.Amount != 1500 || got.Currency != "EUR" || got.Reference != "<img src=x onerror=alert(1)>" ||
			got.RecordedBy != "ops" || got.Refund != "refunded-by-hand" || got.RecordedAt == "" {
			t.Errorf("answer %s", r.raw)
		}
		if strings.Contains(r.raw, "<img") || r.headers["Content-Type"] != "application/json" {
			t.Errorf("the reference's markup is not escaped as JSON data: %s (%s)", r.raw, r.headers["Content-Type"])
		}
		if n := h.totalEvents(streams...); n != before+1 {
			t.Fatalf("a refund made by hand wrote %d events, want 1", n-before)
		}

		// The rental's view shows it, the reference as text.
		v := h.expect(http.MethodGet, "/rentals/"+owedID, "", nil, http.StatusOK)
		if p, _ := v.body["payment"].(map[string]any); p["refund"] != "refunded-by-hand" || !strings.Contains(v.raw, `"type":"RefundMadeByHand"`) ||
			!strings.Contains(v.raw, `"operatorReference":"\u003cimg src=x onerror=alert(1)\u003e","recordedBy":"ops"`) {
			t.Errorf("the rental's view: %s", v.raw)
		}

		// Its renter sees the refund made, not who recorded it or the operator's
		// reference.
		mine := h.expect(http.MethodGet, "/rentals/"+owedID, "", as("alice"), http.StatusOK)
		if p, _ := mine.body["payment"].(map[string]any); p["refund"] != "refunded-by-hand" || !strings.Contains(mine.raw, `"type":"RefundMadeByHand"`) ||
			strings.Contains(mine.raw, "recordedBy") || strings.Contains(mine.raw, "operatorReference") || strings.Contains(mine.raw, `"ops"`) {
			t.Errorf("the renter's view of the rental: %s", mine.raw)
		}

		// A second one, replayed or altered, is refused and changes nothing.
		for _, again := range []string{body, `{"amount":1500,"reference":"bank-2"}`, `{"amount":1,"reference":"bank-2"}`} {
			r := h.expect(http.MethodPost, path, again, nil, http.StatusConflict)
			if !strings.HasSuffix(r.str("type"), "#problem-refund-already-recorded") {
				t.Errorf("again %s: %s", again, r.raw)
			}
		}
		if n := h.totalEvents(streams...); n != before+1 {
			t.Fatalf("the second requests wrote %d events", n-before-1)
		}
	})
}

// TestEachRefundOwedIsListedAndMadeByHandOnItsOwn: a rental that owes its own
// refund and one on another provider payment lists both in GET /refunds/owed and
// GET /deadlines?kind=refund, each with the provider payment it is owed on, what
// was taken and why; POST .../refund-made-by-hand naming the other provider
// payment settles that one alone, for its amount and currency, once, and a body
// without paymentId (as every client sent before) the rental's own; every
// refusal answers its problem and changes nothing.
func TestEachRefundOwedIsListedAndMadeByHandOnItsOwn(t *testing.T) {
	stores(t, func(t *testing.T, store eventstore.Store) {
		h := newHarness(t, store, nil)
		id := h.rentBike("b1", "alice")
		ref := h.owe(id)
		owedOther := payment.OweUnexpectedRefund{Reference: ref, PaymentID: "pi_other", Amount: 700, Currency: "USD", Reason: "charge_disputed"}
		if _, err := h.commands.Payment(context.Background(), owedOther, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		other := deadlinekinds.UnexpectedRefundSubject(id, "pi_other")
		d := newToDo(t, 2)
		d.project(store, payment.StreamID(ref)) // its own refund owed, then the other's
		h.withToDo(d)
		pay, _, err := h.commands.LoadPayment(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}

		type debt struct {
			RentalID, PaymentReference, PaymentID, Currency, Cause, Reason string
			Amount                                                         int64
		}
		var owed struct{ Refunds []debt }
		if err := json.Unmarshal([]byte(h.expect(http.MethodGet, "/refunds/owed", "", nil, http.StatusOK).raw), &owed); err != nil {
			t.Fatal(err)
		}
		want := []debt{
			{RentalID: id, PaymentReference: ref, PaymentID: pay.PaymentID, Currency: "EUR", Cause: "late-success", Amount: 1500},
			{RentalID: id, PaymentReference: ref, PaymentID: "pi_other", Currency: "USD", Cause: "other-payment", Reason: "charge_disputed", Amount: 700},
		}
		if !slices.Equal(owed.Refunds, want) {
			t.Fatalf("GET /refunds/owed: %+v\nwant %+v", owed.Refunds, want)
		}
		var listed struct {
			Deadlines []struct {
				RentalID string
				Refund   *debt
			}
		}
		h.query = map[string]string{"kind": "refund"}
		if err := json.Unmarshal([]byte(h.expect(http.MethodGet, "/deadlines", "", nil, http.StatusOK).raw), &listed); err != nil {
			t.Fatal(err)
		}
		h.query = nil
		if len(listed.Deadlines) != 2 || listed.Deadlines[0].RentalID != id || listed.Deadlines[1].RentalID != id || listed.Deadlines[0].Refund == nil ||
			listed.Deadlines[1].Refund == nil || listed.Deadlines[0].Refund.PaymentID != pay.PaymentID || listed.Deadlines[1].Refund.PaymentID != "pi_other" ||
			listed.Deadlines[1].Refund.Amount != 700 || listed.Deadlines[1].Refund.Cause != "other-payment" {
			t.Fatalf("GET /deadlines?kind=refund: %+v", listed)
		}

		streams := []string{payment.StreamID(ref), rental.StreamID("b1")}
		before := h.totalEvents(streams...)
		path := "/rentals/" + id + "/refund-made-by-hand"
		for _, c := range []struct {
			name, body string
			status     int
			problem    string
		}{
			{"the other payment's amount for the own one", `{"amount":700,"reference":"bank-2"}`, 422, "refund-amount-not-owed"},
			{"another amount on the other payment", `{"amount":1500,"reference":"bank-2","paymentId":"pi_other"}`, 422, "refund-amount-not-owed"},
			{"another currency on the other payment", `{"amount":700,"reference":"bank-2","paymentId":"pi_other","currency":"EUR"}`, 422, "refund-amount-not-owed"},
			{"another currency on the own one", `{"amount":1500,"reference":"bank-1","currency":"USD"}`, 422, "refund-amount-not-owed"},
			{"a provider payment that owes nothing", `{"amount":700,"reference":"bank-2","paymentId":"pi_unknown"}`, 409, "refund-not-owed"},
			{"markup as the provider payment", `{"amount":700,"reference":"bank-2","paymentId":"<img src=x>"}`, 409, "refund-not-owed"},
			{"an empty provider payment", `{"amount":700,"reference":"bank-2","paymentId":""}`, 400, "invalid-request"},
			{"a provider payment with a line break", `{"amount":700,"reference":"bank-2","paymentId":"pi\nother"}`, 400, "invalid-request"},
			{"a provider payment too long", `{"amount":700,"reference":"bank-2","paymentId":"` + strings.Repeat("p", 256) + `"}`, 400, "invalid-request"},
			{"a null provider payment", `{"amount":700,"reference":"bank-2","paymentId":null}`, 400, "invalid-request"},
			{"a lower-case currency", `{"amount":700,"reference":"bank-2","paymentId":"pi_other","currency":"usd"}`, 400, "invalid-request"},
		} {
			r := h.expect(http.MethodPost, path, c.body, nil, c.status)
			if !strings.HasSuffix(r.str("type"), "#problem-"+c.problem) {
				t.Errorf("%s: %s, want %s", c.name, r.raw, c.problem)
			}
			if n := h.totalEvents(streams...); n != before {
				t.Fatalf("%s: the refusal wrote %d events", c.name, n-before)
			}
		}
		if r := h.do(http.MethodPost, path, `{"amount":7,"reference":"bank-2","paymentId":"pi_other"}`, nil); !strings.Contains(r.str("detail"), "700 USD is owed on provider payment pi_other, not 7") {
			t.Errorf("the detail does not say what is owed: %s", r.raw)
		}

		var got struct {
			RentalID, PaymentID, Currency, Reference, RecordedBy, Refund string
			Amount                                                       int64
		}
		r := h.expect(http.MethodPost, path, `{"amount":700,"reference":"bank-2","paymentId":"pi_other","currency":"USD"}`, nil, http.StatusOK)
		if err := json.Unmarshal([]byte(r.raw), &got); err != nil || got.RentalID != id || got.PaymentID != "pi_other" || got.Amount != 700 || got.Currency != "USD" ||
			got.Reference != "bank-2" || got.RecordedBy != "ops" || got.Refund != "refunded-by-hand" {
			t.Fatalf("the other payment's refund made by hand: %s", r.raw)
		}
		h.expect(http.MethodPost, path, `{"amount":700,"reference":"bank-2","paymentId":"pi_other"}`, nil, http.StatusConflict)
		d.project(store, payment.StreamID(ref))
		if _, ok, err := d.index.Row(context.Background(), refundKind(t), other); ok || err != nil {
			t.Errorf("the other payment's refund made by hand is still owed on the to-do list (%v)", err)
		}
		if r := h.expect(http.MethodGet, "/refunds/owed", "", nil, http.StatusOK); r.body["count"] != float64(1) || !strings.Contains(r.raw, `"paymentId":"`+pay.PaymentID+`"`) {
			t.Errorf("GET /refunds/owed after the other payment's refund made by hand: %s, want the own one alone", r.raw)
		}
		v := h.expect(http.MethodGet, "/rentals/"+id, "", nil, http.StatusOK)
		if p, _ := v.body["payment"].(map[string]any); p["refund"] != "owed" || !strings.Contains(v.raw, `"unexpectedRefunds":[{"paymentId":"pi_other","amount":700,"currency":"USD","refund":"refunded-by-hand"}]`) {
			t.Fatalf("the rental after the other payment's refund: %s", v.raw)
		}

		r = h.expect(http.MethodPost, path, `{"amount":1500,"reference":"bank-1"}`, nil, http.StatusOK)
		if err := json.Unmarshal([]byte(r.raw), &got); err != nil || got.PaymentID != pay.PaymentID || got.Amount != 1500 || got.Currency != "EUR" || got.Refund != "refunded-by-hand" {
			t.Fatalf("the own refund made by hand: %s", r.raw)
		}
		h.expect(http.MethodPost, path, `{"amount":1500,"reference":"bank-1","paymentId":"`+pay.PaymentID+`"}`, nil, http.StatusConflict)
		if n := h.totalEvents(streams...); n != before+2 {
			t.Fatalf("two refunds made by hand wrote %d events", n-before)
		}

		// Money a provider reported taken without saying how much: recorded for what
		// the operator paid back, in the currency the operator names.
		if _, err := h.commands.Payment(context.Background(), payment.OweUnexpectedRefund{Reference: ref, PaymentID: "pi_unsaid"}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		if r := h.expect(http.MethodPost, path, `{"amount":450,"reference":"bank-3","paymentId":"pi_unsaid"}`, nil, http.StatusUnprocessableEntity); !strings.Contains(r.str("detail"), "name the currency") {
			t.Errorf("no currency for money taken in a currency the provider did not name: %s", r.raw)
		}
		r = h.expect(http.MethodPost, path, `{"amount":450,"reference":"bank-3","paymentId":"pi_unsaid","currency":"GBP"}`, nil, http.StatusOK)
		if err := json.Unmarshal([]byte(r.raw), &got); err != nil || got.PaymentID != "pi_unsaid" || got.Amount != 450 || got.Currency != "GBP" {
			t.Fatalf("a refund of an amount the provider did not say: %s", r.raw)
		}
		// Its renter sees where each stands, not the refusal, who recorded it or the
		// operator's reference.
		mine := h.expect(http.MethodGet, "/rentals/"+id, "", as("alice"), http.StatusOK)
		if !strings.Contains(mine.raw, `"type":"UnexpectedRefundMadeByHand"`) || strings.Contains(mine.raw, "charge_disputed") || strings.Contains(mine.raw, "bank-2") ||
			strings.Contains(mine.raw, "recordedBy") {
			t.Errorf("the renter's view: %s", mine.raw)
		}
	})
}

// refundKind is the refund owed's kind as the service declares it.
func refundKind(t *testing.T) deadlines.Kind {
	k, ok := deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{}).ByName(deadlinekinds.Refund)
	if !ok {
		t.Fatal("no refund kind")
	}
	return k
}
