package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// findBySplitting is the router as first written: split the path and each pattern
// at their slashes and compare them segment by segment. find must agree with it.
func findBySplitting(a *API, method, path string) (string, map[string]string, []string) {
	segments := strings.Split(strings.Trim(path, "/"), "/")
	var allowed []string
	for _, rt := range a.table() {
		parts := strings.Split(strings.Trim(rt.Pattern, "/"), "/")
		if len(parts) != len(segments) {
			continue
		}
		params, ok := map[string]string{}, true
		for i, p := range parts {
			if strings.HasPrefix(p, "{") {
				if segments[i] == "pending" && p == "{paymentReference}" {
					ok = false
					break
				}
				params[strings.Trim(p, "{}")] = segments[i]
			} else if p != segments[i] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if rt.Method != method {
			allowed = append(allowed, rt.Method)
			continue
		}
		return rt.Pattern, params, nil
	}
	return "", nil, allowed
}

func TestFindAgreesWithSplitting(t *testing.T) {
	a := New(Config{})
	paths := []string{
		"", "/", "//", "/bikes", "/bikes/", "/bikes/b1", "/bikes/b1/", "//bikes//b1//", "/bikes//return",
		"/bikes/b1/return", "/bikes/b1/return/x", "/bikes/b1/returns", "/bikes/return", "/rentals", "/rentals/",
		"/rentals/r1", "/rentals/r1/cancel-payment", "/rentals//cancel-payment", "/payments", "/payments/pending",
		"/payments/pending/", "/payments/pending/confirm", "/payments/rp_1/confirm", "/payments/rp_1/reject",
		"/payments//confirm", "/payments/rp_1", "/nope", "/bikes/b1/return/", "rentals", "bikes/b1",
		"/bikes/{bikeId}", "/Bikes/b1", "/bikes/b%2F1",
	}
	methods := []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, "get", ""}
	for _, path := range paths {
		for _, method := range methods {
			rt, params, allowed := a.find(method, path)
			wantPattern, wantParams, wantAllowed := findBySplitting(a, method, path)
			gotPattern := ""
			if rt != nil {
				gotPattern = rt.Pattern
				if rt.Method != method || rt.handle == nil {
					t.Errorf("%s %q: found %s %s without a handler", method, path, rt.Method, rt.Pattern)
				}
			}
			got := map[string]string{}
			for _, p := range params {
				got[p.name] = p.value
			}
			if gotPattern != wantPattern || !slices.Equal(allowed, wantAllowed) || len(got) != len(params) ||
				wantPattern != "" && !maps.Equal(got, wantParams) {
				t.Errorf("%s %q: find = %q %v allowed %v, want %q %v allowed %v",
					method, path, gotPattern, got, allowed, wantPattern, wantParams, wantAllowed)
			}
		}
	}
}
