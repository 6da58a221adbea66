package sweeptrigger_test

import (
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweeptrigger"
)

func TestParseTrigger(t *testing.T) {
	for input, wantOne := range map[string]bool{
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`: true,
		`{"scheduledTime":"2026-11-29T12:00:00Z"}`:                                                   false,
		`null`: false,
	} {
		tr, err := sweeptrigger.Parse([]byte(input))
		if err != nil || tr.OnePayment() != wantOne {
			t.Errorf("Parse(%s) = %+v, %v; want one payment %v", input, tr, err, wantOne)
		}
	}
	for _, bad := range []string{
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b2_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1 x","paymentReference":"rp_b1 x"}`,
		`{"rentalId":42}`,
	} {
		if _, err := sweeptrigger.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

// FuzzParseTrigger checks that no input makes the sweep's trigger parsing panic, and
// that a one-payment trigger it accepts names a payment of the rental it names.
func FuzzParseTrigger(f *testing.F) {
	for _, seed := range []string{
		`{"scheduledTime":"2026-11-29T12:00:00Z"}`,
		`{"version":"0","detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-29T12:00:00Z","detail":{}}`,
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b2_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`null`, ``, `[]`, `{"time":1}`,
	} {
		f.Add([]byte(seed))
	}
	clock := time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, input []byte) {
		tr, err := sweeptrigger.Parse(input)
		if err != nil {
			return
		}
		if tr.OnePayment() {
			if owner, err := payment.RentalIDFor(tr.PaymentReference); err != nil || owner != tr.RentalID {
				t.Fatalf("accepted %q: payment %q is not rental %q's", input, tr.PaymentReference, tr.RentalID)
			}
			return
		}
		if now, err := tr.Now(clock); err == nil && now.After(clock) {
			t.Fatalf("accepted %q: now %v is later than the clock %v", input, now, clock)
		}
	})
}

func TestNowFrom(t *testing.T) {
	clock := time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)
	for _, tc := range []struct {
		name, input string
		want        time.Time
		err         bool
	}{
		{"scheduler input", `{"scheduledTime":"2026-11-29T12:00:00Z"}`, clock.Add(-30 * time.Second), false},
		{"rule event", `{"version":"0","detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-29T12:00:00Z","detail":{}}`, clock.Add(-30 * time.Second), false},
		{"no time", `{}`, clock, false},
		{"empty input", ``, clock, false},
		{"future time", `{"scheduledTime":"2027-01-01T00:00:00Z"}`, clock, false},
		{"malformed time", `{"scheduledTime":"yesterday"}`, time.Time{}, true},
		{"not JSON", `nope`, time.Time{}, true},
	} {
		got, err := sweeptrigger.NowFrom([]byte(tc.input), clock)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("%s: NowFrom = %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}
