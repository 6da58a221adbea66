package deadlines_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// testKinds are two kinds declared here alone: the trigger knows only what kinds
// say of their keys.
var testKinds = deadlines.MustKinds(
	deadlines.Kind{Name: "alpha", Prefix: "ord_", After: time.Minute, Changes: noChanges{}, Work: deadlines.Send{}, Valid: validID},
	deadlines.Kind{Name: "beta", Prefix: "beta-", After: time.Hour, Changes: noChanges{}, Work: deadlines.Send{}},
	deadlines.Kind{Name: "gamma-2", After: 0, Changes: noChanges{}, Work: deadlines.ByHand{}},
)

func validID(s string) bool {
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// noChanges reads no record.
type noChanges struct{}

func (noChanges) Change(deadlines.Record) (deadlines.Change, bool, error) {
	return deadlines.Change{}, false, nil
}

func TestParseTrigger(t *testing.T) {
	for input, wantOne := range map[string]bool{
		`{"scheduledTime":"2026-11-29T12:00:00Z"}`: false,
		`{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","account":"123456789012","time":"2026-11-29T12:00:00Z","region":"us-east-1","resources":[],"detail":{}}`: false,
		`null`:                           false,
		`{}`:                             false,
		`{"kind":"beta","key":"beta-x"}`: true,
		`{"kind":"alpha","key":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`: true,
	} {
		tr, err := deadlines.ParseTrigger([]byte(input), testKinds)
		if err != nil || tr.OneRow() != wantOne {
			t.Errorf("Parse(%s) = %+v, %v; want one row %v", input, tr, err, wantOne)
		}
	}
	for _, bad := range []string{
		`{"kind":"beta","key":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"kind":"gamma","key":"beta-x"}`,
		`{"kind":"gamma-2","key":"gamma-2#x"}`, // worked off by hand: no sweep sends it
		`{"kind":"beta"}`,
		`{"key":"beta-x"}`,
		`{"kind":"beta","key":"beta-"}`,
		`{"kind":42}`,
		`{"scheduledTime":"2026-11-29T12:00:00Z"} {}`,
		`[]`,
	} {
		if _, err := deadlines.ParseTrigger([]byte(bad), testKinds); err == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

// TestATriggerWithAnUnknownMemberIsRefused checks that an input naming a member the
// trigger does not have is refused, and says which, rather than read as a sweep of
// every row: the one-row form is the kind and the key alone.
// Only a Scheduled Event's envelope, which AWS defines, may hold members the
// sweep does not read.
func TestATriggerWithAnUnknownMemberIsRefused(t *testing.T) {
	for input, member := range map[string]string{
		`{"orderId":"o1_AAAAAAAAAAAAAAAAAAAAAA","orderReference":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`:                                        "orderId",
		`{"orderReference":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`:                                                                              "orderReference",
		`{"kind":"alpha","key":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA","orderId":"o1_AAAAAAAAAAAAAAAAAAAAAA"}`:                                    "orderId",
		`{"scheduledTime":"2026-11-29T12:00:00Z","orderReference":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`:                                       "orderReference",
		`{"source":"aws.events","time":"2026-11-29T12:00:00Z","orderId":"o1_AAAAAAAAAAAAAAAAAAAAAA"}`:                                     "source",
		`{"detail-type":"Scheduled Event","source":"aws.scheduler","time":"2026-11-29T12:00:00Z","detail":{}}`:                            "detail-type",
		`{"scheduledTime":"2026-11-29T12:00:00Z","Orderid":"o1_AAAAAAAAAAAAAAAAAAAAAA","orderreference":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`: "Orderid",
	} {
		tr, err := deadlines.ParseTrigger([]byte(input), testKinds)
		if err == nil || !strings.Contains(err.Error(), `unknown field "`+member+`"`) {
			t.Errorf("Parse(%s) = %+v, %v; want refused for the unknown member %q", input, tr, err, member)
		}
		if tr != (deadlines.Trigger{}) {
			t.Errorf("Parse(%s) answered the trigger %+v, want none", input, tr)
		}
	}
	event := `{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-29T12:00:00Z","replay-name":"r","detail":{}}`
	if tr, err := deadlines.ParseTrigger([]byte(event), testKinds); err != nil || tr.Time != "2026-11-29T12:00:00Z" || tr.OneRow() {
		t.Errorf("Parse(%s) = %+v, %v; want the Scheduled Event's time, its envelope's other members unread", event, tr, err)
	}
}

// FuzzParseTrigger checks that no input makes the sweep's trigger parsing panic, and
// that a one-row trigger it accepts names a row of the kind it names.
func FuzzParseTrigger(f *testing.F) {
	for _, seed := range []string{
		`{"scheduledTime":"2026-11-29T12:00:00Z"}`,
		`{"version":"0","detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-29T12:00:00Z","detail":{}}`,
		`{"kind":"alpha","key":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"kind":"beta","key":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"orderId":"o1_AAAAAAAAAAAAAAAAAAAAAA","orderReference":"ord_o1_AAAAAAAAAAAAAAAAAAAAAA"}`,
		`null`, ``, `[]`, `{"time":1}`,
	} {
		f.Add([]byte(seed))
	}
	clock := time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, input []byte) {
		tr, err := deadlines.ParseTrigger(input, testKinds)
		if err != nil {
			return
		}
		if tr.OneRow() {
			k, ok := testKinds.ByName(tr.Kind)
			if _, valid := k.SubjectOf(tr.Key); !ok || !valid {
				t.Fatalf("accepted %q: key %q is no row of kind %q", input, tr.Key, tr.Kind)
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
		got, err := deadlines.NowFrom([]byte(tc.input), clock, testKinds)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("%s: NowFrom = %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}
