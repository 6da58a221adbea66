package local

import (
	"net/http"
	"testing"
	"time"

	"github.com/bikerental/bikerental"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// TestTheEdgeAllowsWhatItsAllowanceSays holds Edge.Allowance, which Holds judges the
// web ACL by, to what Check does: for every route of the API and every request an
// attacker would send to it, a fresh template edge lets through exactly the
// allowance's limit from one address at one instant and refuses the next, with the
// allowance's rule (or refuses the first, when the allowance says refused).
func TestTheEdgeAllowsWhatItsAllowanceSays(t *testing.T) {
	tpl, err := samtemplate.Parse(bikerental.Template)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tried := 0
	for _, rt := range httpapi.Routes() {
		for _, r := range attackerRequests(rt) {
			edge, err := EdgeOf(tpl, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			tried++
			a := edge.Allowance(r)
			what := rt.Method + " " + r.URL.EscapedPath() + " (" + r.Header.Get("Authorization") + ")"
			if a.Refused {
				if v := edge.Check(r); !v.Blocked() || v.Rule != a.Rule {
					t.Errorf("%s: refused by %s, says its allowance; Check: %+v", what, a.Rule, v)
				}
				continue
			}
			for i := range a.Limit {
				if v := edge.Check(r); v.Blocked() {
					t.Fatalf("%s: request %d of %s's %d: refused by %s", what, i+1, a.Rule, a.Limit, v.Rule)
				}
			}
			if v := edge.Check(r); v.Rule != a.Rule || v.Status != http.StatusTooManyRequests {
				t.Errorf("%s: request %d: %+v, want %s's 429", what, a.Limit+1, v, a.Rule)
			}
		}
	}
	if tried < 2*len(httpapi.Routes()) {
		t.Errorf("%d requests tried for %d routes", tried, len(httpapi.Routes()))
	}
}
