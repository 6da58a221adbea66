package deadline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/eventstore"

	"github.com/bikerental/bikerental/internal/app/deadline"
)

// testKinds are two kinds declared here alone: the trigger knows only what kinds
// say of their keys.
var testKinds = deadline.MustKinds(
	deadline.Kind{Name: "alpha", Prefix: "rp_", After: time.Minute, Changes: noChanges{}, Work: deadline.Send{}, Valid: validID},
	deadline.Kind{Name: "beta", Prefix: "beta-", After: time.Hour, Changes: noChanges{}, Work: deadline.Send{}},
)

func validID(s string) bool {
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// noChanges reads no record.
type noChanges struct{}

func (noChanges) Change(eventstore.Record) (deadline.Change, bool, error) {
	return deadline.Change{}, false, nil
}

func TestParseTrigger(t *testing.T) {
	for input, wantOne := range map[string]bool{
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`: true,
		`{"scheduledTime":"2026-11-29T12:00:00Z"}`:                                                   false,
		`null`:                           false,
		`{"kind":"beta","key":"beta-x"}`: true,
		`{"kind":"alpha","key":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`: true,
	} {
		tr, err := deadline.ParseTrigger([]byte(input), testKinds)
		if err != nil || tr.OneRow() != wantOne {
			t.Errorf("Parse(%s) = %+v, %v; want one payment %v", input, tr, err, wantOne)
		}
	}
	for _, bad := range []string{
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b2_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"rentalId":"b1 x","paymentReference":"rp_b1 x"}`,
		`{"rentalId":42}`,
		`{"kind":"beta","key":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"kind":"gamma","key":"beta-x"}`,
		`{"kind":"beta"}`,
		`{"key":"beta-x"}`,
		`{"kind":"beta","key":"beta-"}`,
		`{"kind":"beta","key":"beta-x","rentalId":"b1_AAAAAAAAAAAAAAAAAAAAAA","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA"}`,
	} {
		if _, err := deadline.ParseTrigger([]byte(bad), testKinds); err == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

// FuzzParseTrigger checks that no input makes the sweep's trigger parsing panic, and
// that a one-row trigger it accepts names a row of the kind it names (and one of
// today's form, a row of the rental it names).
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
		tr, err := deadline.ParseTrigger(input, testKinds)
		if err != nil {
			return
		}
		if tr.OneRow() {
			k, subject, ok := testKinds.OfKey(tr.Key)
			if !ok || k.Name != tr.Kind || (tr.RentalID != "" && subject != tr.RentalID) {
				t.Fatalf("accepted %q: key %q is no row of kind %q (rental %q)", input, tr.Key, tr.Kind, tr.RentalID)
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
		got, err := deadline.NowFrom([]byte(tc.input), clock, testKinds)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("%s: NowFrom = %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}
