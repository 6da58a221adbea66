package payment

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/ident"
)

var (
	ref        = ReferenceFor("r-1")
	prepare    = PreparePayment{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR"}
	prepared   = PaymentPrepared{PaymentID: "p1", Reference: ref, Amount: 1250, Currency: "EUR"}
	confirmed  = PaymentConfirmed{Reference: ref, PaymentID: "p1"}
	rejected   = PaymentRejected{Reference: ref, PaymentID: "p1", Reason: "insufficient funds"}
	cancelled  = PaymentCancelled{Reference: ref, PaymentID: "p1"}
	late       = PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", ProviderEventID: "evt_2"}
	asked      = RefundRequested{Reference: ref, PaymentID: "p1", RefundID: "re_1", Amount: 1250, Currency: "EUR"}
	owed       = RefundOwed{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR"}
	refunded   = PaymentRefunded{Reference: ref, PaymentID: "p1", ProviderEventID: "evt_3"}
	unanswered = CancellationOwedAtProvider{Reference: ref, PaymentID: "p1", Attempts: 3}
	atProvider = CancellationDoneAtProvider{Reference: ref, PaymentID: "p1"}
	stillOwed  = CancellationStillOwed{Reference: ref, PaymentID: "p1", Tries: 1}
	byHand     = RefundMadeByHand{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR", OperatorReference: "bank-transfer-123", RecordedBy: "op-1"}
	// tookMore is the provider's word that it took 125000 where 1250 was asked.
	tookMore     = GiveUpUnmatchedSuccess{Reference: ref, Amount: 125000, Currency: "EUR"}
	tookMoreLate = PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p1", Amount: 125000, Currency: "EUR"}
)

func TestDecide(t *testing.T) {
	with := func(f func(*PreparePayment)) PreparePayment { c := prepare; f(&c); return c }
	tests := []struct {
		name  string
		given []Event
		when  Command
		then  []Event // nil means "no events"
		err   error
	}{
		// PreparePayment
		{"prepare", nil, prepare, []Event{prepared}, nil},
		{"prepare again", []Event{prepared}, prepare, nil, nil},
		{"prepare again with another amount", []Event{prepared}, with(func(c *PreparePayment) { c.Amount = 1 }), nil, nil},
		{"prepare confirmed", []Event{prepared, confirmed}, prepare, nil, nil},
		{"prepare rejected", []Event{prepared, rejected}, prepare, nil, nil},
		{"prepare cancelled", []Event{prepared, cancelled}, prepare, nil, nil},

		// ConfirmPayment
		{"confirm prepared", []Event{prepared}, ConfirmPayment{Reference: ref}, []Event{confirmed}, nil},
		{"confirm again", []Event{prepared, confirmed}, ConfirmPayment{Reference: ref}, nil, nil},
		{"a confirmation by a provider's event carries its receipt", []Event{prepared}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_1", Provider: "stripe", ProviderEventDigest: "d1"},
			[]Event{PaymentConfirmed{Reference: ref, PaymentID: "p1", ProviderEventID: "evt_1", Provider: "stripe", ProviderEventDigest: "d1"}}, nil},
		{"a rejection likewise", []Event{prepared}, RejectPayment{Reference: ref, Reason: "declined", ProviderEventID: "evt_1", Provider: "stripe", ProviderEventDigest: "d1"},
			[]Event{PaymentRejected{Reference: ref, PaymentID: "p1", Reason: "declined", ProviderEventID: "evt_1", Provider: "stripe", ProviderEventDigest: "d1"}}, nil},
		{"a late success carries no receipt", []Event{prepared, cancelled}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_2", Provider: "stripe", ProviderEventDigest: "d2"}, []Event{late}, nil},
		{"a success after the cancellation is recorded for a refund", []Event{prepared, cancelled}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_2"}, []Event{late}, nil},
		{"a success after a rejection likewise", []Event{prepared, rejected}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_2"}, []Event{late}, nil},

		// RecordCancellationStillOwed
		{"an owed cancellation left unanswered counts its tries", []Event{prepared, cancelled, unanswered}, RecordCancellationStillOwed{Reference: ref, Tries: 1},
			[]Event{stillOwed}, nil},
		{"and counts on", []Event{prepared, cancelled, unanswered, stillOwed}, RecordCancellationStillOwed{Reference: ref, Tries: 2},
			[]Event{CancellationStillOwed{Reference: ref, PaymentID: "p1", Tries: 2}}, nil},
		{"a try recorded already is not recorded again", []Event{prepared, cancelled, unanswered, stillOwed}, RecordCancellationStillOwed{Reference: ref, Tries: 1}, nil, nil},
		{"tries start at 1", []Event{prepared, cancelled, unanswered}, RecordCancellationStillOwed{Reference: ref}, nil, ErrInvalidCommand},
		{"nothing still owed once it was made", []Event{prepared, cancelled, unanswered, atProvider}, RecordCancellationStillOwed{Reference: ref, Tries: 1}, nil, nil},
		{"nothing still owed without a debt", []Event{prepared, cancelled}, RecordCancellationStillOwed{Reference: ref, Tries: 1}, nil, nil},
		{"nothing still owed after a late success", []Event{prepared, cancelled, unanswered, late}, RecordCancellationStillOwed{Reference: ref, Tries: 1}, nil, nil},

		// GiveUpUnmatchedSuccess: the late success is for what the provider took.
		{"an unmatched success gives a prepared payment up and sends what it took back", []Event{prepared}, tookMore,
			[]Event{cancelled, PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p1", Amount: 125000, Currency: "EUR"}}, nil},
		{"an unmatched success after the cancellation is a late success for what it took", []Event{prepared, cancelled}, GiveUpUnmatchedSuccess{Reference: ref, Amount: 1250, Currency: "USD"},
			[]Event{PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "USD"}}, nil},
		{"an unmatched success after a late success changes nothing", []Event{prepared, cancelled, late}, tookMore, nil, nil},
		{"an unmatched success never undoes a confirmation", []Event{prepared, confirmed}, tookMore, nil, nil},
		{"an unmatched success of an unknown payment", nil, tookMore, nil, ErrPaymentNotFound},
		{"an unmatched success says what it took", []Event{prepared}, GiveUpUnmatchedSuccess{Reference: ref}, nil, ErrInvalidCommand},
		{"an unmatched success for more than any payment", []Event{prepared}, GiveUpUnmatchedSuccess{Reference: ref, Amount: MaxAmount + 1, Currency: "EUR"}, nil, ErrInvalidCommand},
		{"an unmatched success in no currency", []Event{prepared}, GiveUpUnmatchedSuccess{Reference: ref, Amount: 1, Currency: "eur"}, nil, ErrInvalidCommand},
		{"what was taken is refunded", []Event{prepared, cancelled, tookMoreLate}, RecordRefund{Reference: ref, RefundID: "re_1"},
			[]Event{RefundRequested{Reference: ref, PaymentID: "p1", RefundID: "re_1", Amount: 125000, Currency: "EUR"}}, nil},
		{"what was taken is owed", []Event{prepared, cancelled, tookMoreLate}, OweRefund{Reference: ref},
			[]Event{RefundOwed{Reference: ref, PaymentID: "p1", Amount: 125000, Currency: "EUR"}}, nil},
		{"a second late success changes nothing", []Event{prepared, cancelled, late}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_9"}, nil, nil},
		{"a late success never confirms", []Event{prepared, cancelled, late}, CancelPayment{Reference: ref}, nil, nil},
		{"a late success is refunded once", []Event{prepared, cancelled, late}, RecordRefund{Reference: ref, RefundID: "re_1"}, []Event{asked}, nil},
		{"a refund already requested is not asked again", []Event{prepared, cancelled, late, asked}, RecordRefund{Reference: ref, RefundID: "re_2"}, nil, nil},
		{"nothing to refund without a late success", []Event{prepared, cancelled}, RecordRefund{Reference: ref, RefundID: "re_1"}, nil, nil},
		{"nothing to refund on a confirmed payment", []Event{prepared, confirmed}, OweRefund{Reference: ref}, nil, nil},
		{"a refund the provider cannot make is owed", []Event{prepared, cancelled, late}, OweRefund{Reference: ref}, []Event{owed}, nil},
		{"owed once", []Event{prepared, cancelled, late, owed}, OweRefund{Reference: ref}, nil, nil},
		{"the provider confirms a refund", []Event{prepared, cancelled, late, asked}, ConfirmRefund{Reference: ref, ProviderEventID: "evt_3"}, []Event{refunded}, nil},
		{"a refund confirmed twice", []Event{prepared, cancelled, late, asked, refunded}, ConfirmRefund{Reference: ref}, nil, nil},
		{"a refund id is required", []Event{prepared, cancelled, late}, RecordRefund{Reference: ref}, nil, ErrInvalidCommand},
		{"confirm unknown", nil, ConfirmPayment{Reference: ref}, nil, ErrPaymentNotFound},

		// RejectPayment
		{"reject prepared", []Event{prepared}, RejectPayment{Reference: ref, Reason: "insufficient funds"}, []Event{rejected}, nil},
		{"reject without reason", []Event{prepared}, RejectPayment{Reference: ref}, []Event{PaymentRejected{Reference: ref, PaymentID: "p1"}}, nil},
		{"reject again", []Event{prepared, rejected}, RejectPayment{Reference: ref, Reason: "other"}, nil, nil},
		{"reject confirmed", []Event{prepared, confirmed}, RejectPayment{Reference: ref}, nil, ErrPaymentAlreadyConfirmed},
		{"a failure after the cancellation changes nothing", []Event{prepared, cancelled}, RejectPayment{Reference: ref}, nil, nil},
		{"reject unknown", nil, RejectPayment{Reference: ref}, nil, ErrPaymentNotFound},

		// CancelPayment
		{"cancel prepared", []Event{prepared}, CancelPayment{Reference: ref}, []Event{cancelled}, nil},
		{"cancel confirmed is declined", []Event{prepared, confirmed}, CancelPayment{Reference: ref}, nil, ErrPaymentAlreadyConfirmed},
		{"cancel again", []Event{prepared, cancelled}, CancelPayment{Reference: ref}, nil, nil},
		{"cancel rejected", []Event{prepared, rejected}, CancelPayment{Reference: ref}, nil, nil},
		{"cancel unknown", nil, CancelPayment{Reference: ref}, nil, ErrPaymentNotFound},
		{"a cancellation the provider did not answer is owed to it", []Event{prepared}, CancelPayment{Reference: ref, UnansweredAttempts: 3}, []Event{cancelled, unanswered}, nil},
		{"an unanswered cancellation of a cancelled payment changes nothing", []Event{prepared, cancelled}, CancelPayment{Reference: ref, UnansweredAttempts: 3}, nil, nil},
		{"an unanswered cancellation of a confirmed payment is declined", []Event{prepared, confirmed}, CancelPayment{Reference: ref, UnansweredAttempts: 3}, nil, ErrPaymentAlreadyConfirmed},
		{"negative attempts", []Event{prepared}, CancelPayment{Reference: ref, UnansweredAttempts: -1}, nil, ErrInvalidCommand},
		{"the provider confirms an owed cancellation", []Event{prepared, cancelled, unanswered}, RecordCancelledAtProvider{Reference: ref}, []Event{atProvider}, nil},
		{"confirmed once", []Event{prepared, cancelled, unanswered, atProvider}, RecordCancelledAtProvider{Reference: ref}, nil, nil},
		{"nothing owed, nothing recorded", []Event{prepared, cancelled}, RecordCancelledAtProvider{Reference: ref}, nil, nil},
		{"a success meanwhile ends what was owed", []Event{prepared, cancelled, unanswered, late}, RecordCancelledAtProvider{Reference: ref}, nil, nil},
		{"a success after an owed cancellation is refunded", []Event{prepared, cancelled, unanswered}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_2"}, []Event{late}, nil},

		// A duplicated PaymentPrepared never reopens a settled payment.
		{"confirm after duplicate prepared on cancelled", []Event{prepared, cancelled, prepared}, ConfirmPayment{Reference: ref, ProviderEventID: "evt_2"}, []Event{late}, nil},

		// Invalid commands
		{"nil command", nil, nil, nil, ErrInvalidCommand},
		{"prepare without payment id", nil, with(func(c *PreparePayment) { c.PaymentID = "" }), nil, ErrInvalidCommand},
		{"prepare zero amount", nil, with(func(c *PreparePayment) { c.Amount = 0 }), nil, ErrInvalidCommand},
		{"prepare negative amount", nil, with(func(c *PreparePayment) { c.Amount = -5 }), nil, ErrInvalidCommand},
		{"prepare the largest amount", nil, with(func(c *PreparePayment) { c.Amount = MaxAmount }), []Event{PaymentPrepared{PaymentID: "p1", Reference: ref, Amount: MaxAmount, Currency: "EUR"}}, nil},
		{"prepare over the largest amount", nil, with(func(c *PreparePayment) { c.Amount = MaxAmount + 1 }), nil, ErrInvalidCommand},
		{"prepare lower-case currency", nil, with(func(c *PreparePayment) { c.Currency = "eur" }), nil, ErrInvalidCommand},
		{"prepare short currency", nil, with(func(c *PreparePayment) { c.Currency = "EU" }), nil, ErrInvalidCommand},
		{"prepare long currency", nil, with(func(c *PreparePayment) { c.Currency = "EURO" }), nil, ErrInvalidCommand},
		{"prepare empty currency", nil, with(func(c *PreparePayment) { c.Currency = "" }), nil, ErrInvalidCommand},
		{"prepare without reference", nil, with(func(c *PreparePayment) { c.Reference = "" }), nil, ErrInvalidCommand},
		{"prepare malformed reference", nil, with(func(c *PreparePayment) { c.Reference = "r-1" }), nil, ErrInvalidCommand},
		{"invalid prepare on existing payment", []Event{prepared}, with(func(c *PreparePayment) { c.Amount = 0 }), nil, ErrInvalidCommand},
		{"confirm without reference", []Event{prepared}, ConfirmPayment{}, nil, ErrInvalidCommand},
		{"reject malformed reference", []Event{prepared}, RejectPayment{Reference: "rp_"}, nil, ErrInvalidCommand},
		{"cancel another reference", []Event{prepared}, CancelPayment{Reference: ReferenceFor("r-2")}, nil, ErrInvalidCommand},
		{"prepare another reference", []Event{prepared}, with(func(c *PreparePayment) { c.Reference = ReferenceFor("r-2") }), nil, ErrInvalidCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(Fold(tc.given), tc.when)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Decide error = %v, want %v", err, tc.err)
			}
			if tc.then == nil && got != nil || !slices.Equal(got, tc.then) {
				t.Fatalf("Decide events = %#v, want %#v", got, tc.then)
			}
			if len(got) == 0 {
				return
			}
			// Once its events are applied, repeating the command changes nothing.
			again, err := Decide(Fold(append(slices.Clone(tc.given), got...)), tc.when)
			if again != nil || err != nil {
				t.Fatalf("repeated command = %#v, %v; want nil, nil", again, err)
			}
		})
	}
}

func TestInvalidReferenceIsAlsoReported(t *testing.T) {
	_, err := Decide(Fold(nil), ConfirmPayment{Reference: "nope"})
	if !errors.Is(err, ErrInvalidCommand) || !errors.Is(err, ErrInvalidReference) {
		t.Fatalf("Decide error = %v, want both ErrInvalidCommand and ErrInvalidReference", err)
	}
}

func TestEvolve(t *testing.T) {
	base := Payment{Reference: ref, PaymentID: "p1", Amount: 1250, Currency: "EUR"}
	status := func(st Status, reason string) Payment { p := base; p.Status, p.Reason = st, reason; return p }
	tests := []struct {
		name  string
		given []Event
		want  Payment
	}{
		{"no events", nil, Payment{Status: StatusNone}},
		{"prepared", []Event{prepared}, status(StatusPrepared, "")},
		{"confirmed", []Event{prepared, confirmed}, status(StatusConfirmed, "")},
		{"rejected", []Event{prepared, rejected}, status(StatusRejected, "insufficient funds")},
		{"cancelled", []Event{prepared, cancelled}, status(StatusCancelled, "")},
		{"duplicate prepared after settling", []Event{prepared, confirmed, PaymentPrepared{PaymentID: "p2", Reference: ref, Amount: 1, Currency: "USD"}},
			status(StatusConfirmed, "")},
		{"unknown event", []Event{prepared, unknownEvent{}}, status(StatusPrepared, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fold(tc.given); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Fold = %#v, want %#v", got, tc.want)
			}
		})
	}
	// The zero Payment behaves as StatusNone.
	if got := Evolve(Payment{}, prepared); !reflect.DeepEqual(got, status(StatusPrepared, "")) {
		t.Fatalf("Evolve(zero, prepared) = %#v", got)
	}
}

type unknownEvent struct{}

func (unknownEvent) EventType() string { return "Unknown" }

var allEvents = []Event{prepared, confirmed, rejected, cancelled, late, asked, owed, refunded, unanswered, atProvider, stillOwed, byHand, owedOther, otherByHand}

func TestEventTypes(t *testing.T) {
	var names []string
	for _, e := range allEvents {
		if name := reflect.TypeOf(e).Name(); e.EventType() != name {
			t.Errorf("%s.EventType() = %q, want the type name", name, e.EventType())
		}
		names = append(names, e.EventType())
	}
	if got := EventTypes(); !slices.Equal(got, names) {
		t.Fatalf("EventTypes() = %v, want %v", got, names)
	}
}

func TestDecodeEventRoundTrip(t *testing.T) {
	for _, e := range allEvents {
		t.Run(e.EventType(), func(t *testing.T) {
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEvent(e.EventType(), data)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if got != e {
				t.Fatalf("DecodeEvent = %#v, want %#v", got, e)
			}
		})
	}
}

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name, eventType, data string
		want                  Event
		err                   error
	}{
		{"camelCase fields", "PaymentPrepared", `{"paymentId":"p1","reference":"rp_r-1","amount":1250,"currency":"EUR"}`, prepared, nil},
		{"unknown fields are ignored", "PaymentConfirmed", `{"reference":"rp_r-1","paymentId":"p1","settledBy":"x"}`, confirmed, nil},
		{"unknown event type", "PaymentVanished", `{}`, nil, ErrUnknownEventType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEvent(tc.eventType, []byte(tc.data))
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("DecodeEvent = %#v, %v; want %#v, %v", got, err, tc.want, tc.err)
			}
		})
	}
	for _, data := range []string{`{"amount":`, `{"amount":"12"}`, ``, `{} {}`} {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if _, err := DecodeEvent("PaymentPrepared", []byte(data)); !errors.As(err, &syntax) && !errors.As(err, &typ) {
			t.Errorf("DecodeEvent(%q) error = %v, want a json error", data, err)
		}
	}
}

func TestReference(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, id := range []string{"r-1", "A_b-9", "x", long} {
		ref := ReferenceFor(id)
		if got, err := RentalIDFor(ref); err != nil || got != id {
			t.Errorf("RentalIDFor(ReferenceFor(%q)) = %q, %v; want %q", id, got, err, id)
		}
	}
	for _, ref := range []string{"", "rp_", "r-1", "RP_r-1", "xrp_r-1", "rp_r 1", "rp_r/1", "rp_é", "rp_" + long + "a"} {
		if got, err := RentalIDFor(ref); !errors.Is(err, ErrInvalidReference) {
			t.Errorf("RentalIDFor(%q) = %q, %v; want ErrInvalidReference", ref, got, err)
		}
	}
}

func FuzzReference(f *testing.F) {
	for _, s := range []string{"r-1", "", "rp_r-1", "rp_", "A_b-9", "r 1", "é", strings.Repeat("z", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Every valid rental id survives the round trip.
		if ident.Valid(s) {
			if got, err := RentalIDFor(ReferenceFor(s)); err != nil || got != s {
				t.Fatalf("RentalIDFor(ReferenceFor(%q)) = %q, %v", s, got, err)
			}
		} else if _, err := RentalIDFor(ReferenceFor(s)); !errors.Is(err, ErrInvalidReference) {
			t.Fatalf("RentalIDFor(ReferenceFor(%q)) accepted an invalid rental id", s)
		}
		// Every accepted reference is the one ReferenceFor makes.
		if id, err := RentalIDFor(s); err == nil && ReferenceFor(id) != s {
			t.Fatalf("ReferenceFor(RentalIDFor(%q)) = %q", s, ReferenceFor(id))
		}
	})
}

func TestStreamID(t *testing.T) {
	if got := StreamID("rp_r-1"); got != "payment-rp_r-1" {
		t.Fatalf(`StreamID("rp_r-1") = %q, want "payment-rp_r-1"`, got)
	}
}

func TestReferenceOf(t *testing.T) {
	const ref = "rp_b1_AAAAAAAAAAAAAAAAAAAAAA"
	for _, e := range []Event{
		PaymentPrepared{Reference: ref}, PaymentConfirmed{Reference: ref},
		PaymentRejected{Reference: ref}, PaymentCancelled{Reference: ref},
	} {
		if got := ReferenceOf(e); got != ref {
			t.Errorf("ReferenceOf(%T) = %q, want %q", e, got, ref)
		}
	}
	if got := ReferenceOf(nil); got != "" {
		t.Errorf("ReferenceOf(nil) = %q", got)
	}
}

// TestReceiptsInSettlingEvents reads the receipt a settling event carries, and the
// settling events recorded before receipts moved into them: they decode, fold as
// they did, and carry none.
func TestReceiptsInSettlingEvents(t *testing.T) {
	withReceipt := PaymentConfirmed{Reference: ref, PaymentID: "p1", ProviderEventID: "evt_1", Provider: "stripe", ProviderEventDigest: "d1"}
	if r, ok := ReceiptOf(withReceipt); !ok || r != (ProviderReceipt{Provider: "stripe", EventID: "evt_1", Kind: ProviderSucceeded, Digest: "d1"}) {
		t.Errorf("ReceiptOf(a confirmation with its receipt) = %+v, %v", r, ok)
	}
	rejection := PaymentRejected{Reference: ref, PaymentID: "p1", Reason: "declined", ProviderEventID: "evt_1", Provider: "generic", ProviderEventDigest: "d1"}
	if r, ok := ReceiptOf(rejection); !ok || r.Kind != ProviderFailed || r.Provider != "generic" {
		t.Errorf("ReceiptOf(a rejection with its receipt) = %+v, %v", r, ok)
	}
	for _, c := range []struct{ name, typ, data string }{
		{"an older confirmation by a webhook", "PaymentConfirmed", `{"reference":"rp_r-1","paymentId":"p1","providerEventId":"evt_1"}`},
		{"an older rejection by a webhook", "PaymentRejected", `{"reference":"rp_r-1","paymentId":"p1","reason":"declined","providerEventId":"evt_1"}`},
		{"a confirmation no webhook made", "PaymentConfirmed", `{"reference":"rp_r-1","paymentId":"p1"}`},
	} {
		e, err := DecodeEvent(c.typ, []byte(c.data))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r, ok := ReceiptOf(e); ok {
			t.Errorf("%s: ReceiptOf = %+v, want none (its receipt is in a stream of its own)", c.name, r)
		}
		if s := Fold([]Event{prepared, e}); s.Status != map[string]Status{"PaymentConfirmed": StatusConfirmed, "PaymentRejected": StatusRejected}[c.typ] {
			t.Errorf("%s folds to %+v", c.name, s)
		}
	}
	for _, e := range []Event{late, refunded, cancelled, prepared} {
		if r, ok := ReceiptOf(e); ok {
			t.Errorf("ReceiptOf(%T) = %+v, want none: only a settlement by the provider carries one", e, r)
		}
	}
	data, err := json.Marshal(withReceipt)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeEvent("PaymentConfirmed", data); err != nil || got != withReceipt {
		t.Errorf("round trip: %#v, %v", got, err)
	}
}

// TestAPrintedPaymentShowsNoClientSecret: a payment, or its PaymentPrepared,
// printed with %v or %+v (a log line, a test failure) leaves its client secret out,
// and says everything else.
func TestAPrintedPaymentShowsNoClientSecret(t *testing.T) {
	secret := "pi_1_secret_abc"
	s := Fold([]Event{PaymentPrepared{PaymentID: "pi_1", Reference: ref, Amount: 1250, Currency: "EUR", ClientSecret: secret}})
	for _, printed := range []string{fmt.Sprintf("%v", s), fmt.Sprintf("%+v", s), fmt.Sprintf("%+v", []Payment{s}),
		fmt.Sprintf("%v", PaymentPrepared{PaymentID: "pi_1", ClientSecret: secret}), fmt.Sprintf("%+v", struct{ P Payment }{s})} {
		if strings.Contains(printed, secret) || !strings.Contains(printed, "pi_1") {
			t.Errorf("printed %s: want the payment without its client secret", printed)
		}
	}
	if s.ClientSecret != secret {
		t.Errorf("printing changed the payment's secret to %q", s.ClientSecret)
	}
}
