package generic_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

var (
	secret = []byte("a-webhook-secret-of-enough-bytes-0123456789")
	now    = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ref    = payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAAA")
)

func provider(t *testing.T) generic.Provider {
	t.Helper()
	v, err := webhook.NewVerifier(secret, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return generic.Provider{Verifier: v}
}

func parse(t *testing.T, body string) (payment.ProviderEvent, error) {
	t.Helper()
	sig := generic.Sign(secret, []byte(body), now)
	return provider(t).ParseWebhook(func(h string) string {
		if h == webhook.Header {
			return sig
		}
		return ""
	}, []byte(body), now)
}

// TestAMemberThatIsThereStatesAFact: paymentId, amount and currency may be left
// out (the event then leaves them unstated, and they are not compared), but one
// that is there must hold a value a payment can have: "amount": 0 or
// "paymentId": "" is refused, never read as "not named".
func TestAMemberThatIsThereStatesAFact(t *testing.T) {
	head := `{"id":"evt-1","type":"payment.succeeded","paymentReference":"` + ref + `"`
	for _, c := range []struct {
		members  string
		unstated payment.Facts
		stated   payment.ProviderEvent
	}{
		{``, payment.AllFacts, payment.ProviderEvent{}},
		{`,"amount":1500`, payment.FactPaymentID | payment.FactCurrency, payment.ProviderEvent{Amount: 1500}},
		{`,"paymentId":"pay_1","currency":"EUR"`, payment.FactAmount, payment.ProviderEvent{PaymentID: "pay_1", Currency: "EUR"}},
		{`,"paymentId":"pay_1","amount":99999999,"currency":"EUR"`, 0, payment.ProviderEvent{PaymentID: "pay_1", Amount: payment.MaxAmount, Currency: "EUR"}},
	} {
		ev, err := parse(t, head+c.members+`}`)
		if err != nil {
			t.Fatalf("%s: %v", c.members, err)
		}
		if ev.Unstated != c.unstated || ev.PaymentID != c.stated.PaymentID || ev.Amount != c.stated.Amount || ev.Currency != c.stated.Currency {
			t.Errorf("%s: %+v, want unstated %v and %+v", c.members, ev, c.unstated.Names(), c.stated)
		}
	}
	for _, members := range []string{
		`,"amount":0`, `,"amount":-1`, `,"amount":100000000`, `,"amount":1.5`, `,"amount":"1500"`, `,"amount":null`,
		`,"paymentId":""`, `,"paymentId":"<b>"`, `,"paymentId":null`, `,"paymentId":"` + strings.Repeat("p", generic.MaxEventIDLength+1) + `"`,
		`,"currency":""`, `,"currency":"eur"`, `,"currency":"EURO"`, `,"currency":null`,
		`,"amount":0,"paymentId":""`,
	} {
		if ev, err := parse(t, head+members+`}`); !errors.Is(err, payment.ErrWebhookMalformed) {
			t.Errorf("%s: %+v, %v; want ErrWebhookMalformed", members, ev, err)
		}
	}
}

// TestAGenericDigestIsTheEventsContent: the generic body names only what decides
// the event's effect, so its digest covers every member (and which are there),
// whatever the bytes' layout; the body's own digest is kept beside it for the
// receipts recorded before.
func TestAGenericDigestIsTheEventsContent(t *testing.T) {
	a, err := parse(t, `{"id":"evt-1","type":"payment.succeeded","paymentReference":"`+ref+`","amount":1500}`)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"id":"evt-1","type":"payment.succeeded","paymentReference":"` + ref + `","amount":1500}`))
	if !strings.HasPrefix(a.Digest, payment.EffectDigestPrefix) || a.BodyDigest != hex.EncodeToString(sum[:]) {
		t.Errorf("digests %q, %q; want the effect's and the body's", a.Digest, a.BodyDigest)
	}
	b, err := parse(t, `{ "amount": 1500, "paymentReference": "`+ref+`", "type": "payment.succeeded", "id": "evt-1" }`)
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != b.Digest || a.BodyDigest == b.BodyDigest {
		t.Errorf("the same event laid out otherwise: digests %s and %s", a.Digest, b.Digest)
	}
	for _, other := range []string{
		`{"id":"evt-1","type":"payment.succeeded","paymentReference":"` + ref + `","amount":1501}`,
		`{"id":"evt-1","type":"payment.succeeded","paymentReference":"` + ref + `"}`,
		`{"id":"evt-1","type":"payment.succeeded","paymentReference":"` + ref + `","amount":1500,"currency":"EUR"}`,
		`{"id":"evt-1","type":"payment.failed","paymentReference":"` + ref + `","amount":1500}`,
		`{"id":"evt-1","type":"payment.failed","paymentReference":"` + ref + `","amount":1500,"reason":"declined"}`,
	} {
		c, err := parse(t, other)
		if err != nil {
			t.Fatal(err)
		}
		if c.Digest == a.Digest {
			t.Errorf("%s: the same digest as another event's", other)
		}
	}
}

// TestEventEncodesWhatItStates: an Event built with strictjson.Some names the
// member, even at its zero value, and one without leaves it out.
func TestEventEncodesWhatItStates(t *testing.T) {
	for _, c := range []struct {
		e    generic.Event
		want string
	}{
		{generic.Event{ID: "e", Type: generic.TypeSucceeded, PaymentReference: "r"}, `{"id":"e","type":"payment.succeeded","paymentReference":"r"}`},
		{generic.Event{ID: "e", Type: generic.TypeSucceeded, PaymentReference: "r", Amount: strictjson.Some(int64(0))}, `{"id":"e","type":"payment.succeeded","paymentReference":"r","amount":0}`},
	} {
		b, err := json.Marshal(c.e)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v encodes as %s, %v; want %s", c.e, b, err, c.want)
		}
	}
}
