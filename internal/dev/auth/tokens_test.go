package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestTokenHandler(t *testing.T) {
	iss, srv := startIssuer(t)
	a := newTestAuthorizer(t, iss, nil)
	pad := func(body string, size int) string { return body + strings.Repeat(" ", size-len(body)) }
	invalid := func(detail string) *Problem {
		return &Problem{Type: problemBase + "invalid-request", Title: "Bad Request", Status: 400, Detail: detail}
	}
	cases := []struct {
		name        string
		method      string // POST if empty
		body        string
		wantStatus  int
		wantProblem *Problem // for a refusal
		wantSub     string   // for a token
		wantScopes  []string
	}{
		{name: "renter", body: `{"sub": "alice"}`, wantStatus: 200, wantSub: "alice"},
		{name: "operator", body: `{"sub": "ops", "operator": true}`, wantStatus: 200, wantSub: "ops", wantScopes: []string{testOperator}},
		{name: "operator false", body: `{"operator": false, "sub": "bob"}`, wantStatus: 200, wantSub: "bob"},
		{name: "sub of 64 characters", body: `{"sub":"` + strings.Repeat("a", 64) + `"}`, wantStatus: 200, wantSub: strings.Repeat("a", 64)},
		{name: "sub with digits, dash and underscore", body: `{"sub":"A-z_09"}`, wantStatus: 200, wantSub: "A-z_09"},
		{name: "trailing whitespace", body: "{\"sub\":\"a\"}\r\n\t ", wantStatus: 200, wantSub: "a"},
		{name: "exactly 4 KiB", body: pad(`{"sub":"a"}`, MaxTokenRequestBytes), wantStatus: 200, wantSub: "a"},
		{name: "oversized", body: pad(`{"sub":"a"}`, MaxTokenRequestBytes+1), wantStatus: 413,
			wantProblem: &Problem{Type: "about:blank", Title: "Request Entity Too Large", Status: 413, Detail: "the body must be at most 4096 bytes"}},
		{name: "unknown field", body: `{"sub":"alice","admin":true}`, wantStatus: 400, wantProblem: invalid(`unknown member "admin"`)},
		{name: "field in another case", body: `{"SUB":"alice"}`, wantStatus: 400, wantProblem: invalid(`member "SUB" is not known: names are case-sensitive, and the member is "sub"`)},
		{name: "missing sub", body: `{"operator":true}`, wantStatus: 400, wantProblem: invalid("sub is required")},
		{name: "empty object", body: `{}`, wantStatus: 400, wantProblem: invalid("sub is required")},
		{name: "empty sub", body: `{"sub":""}`, wantStatus: 400, wantProblem: invalid("sub is required")},
		{name: "sub with a space", body: `{"sub":"al ice"}`, wantStatus: 400, wantProblem: invalid("sub must be 1 to 64 letters, digits, '_' or '-'")},
		{name: "sub with a slash", body: `{"sub":"../etc"}`, wantStatus: 400, wantProblem: invalid("sub must be 1 to 64 letters, digits, '_' or '-'")},
		{name: "sub not ASCII", body: `{"sub":"élodie"}`, wantStatus: 400, wantProblem: invalid("sub must be 1 to 64 letters, digits, '_' or '-'")},
		{name: "sub of 65 characters", body: `{"sub":"` + strings.Repeat("a", 65) + `"}`, wantStatus: 400, wantProblem: invalid("sub must be 1 to 64 letters, digits, '_' or '-'")},
		{name: "sub a number", body: `{"sub":42}`, wantStatus: 400, wantProblem: invalid(`member "sub" must be a string`)},
		{name: "sub null", body: `{"sub":null}`, wantStatus: 400, wantProblem: invalid(`member "sub" must not be null`)},
		{name: "operator a string", body: `{"sub":"a","operator":"yes"}`, wantStatus: 400, wantProblem: invalid(`member "operator" must be a boolean`)},
		{name: "sub twice", body: `{"sub":"a","sub":"b"}`, wantStatus: 400, wantProblem: invalid(`member "sub" appears twice`)},
		{name: "operator twice", body: `{"sub":"a","operator":false,"operator":true}`, wantStatus: 400, wantProblem: invalid(`member "operator" appears twice`)},
		{name: "operator in another case", body: `{"sub":"a","Operator":true}`, wantStatus: 400, wantProblem: invalid(`member "Operator" is not known: names are case-sensitive, and the member is "operator"`)},
		{name: "operator null", body: `{"sub":"a","operator":null}`, wantStatus: 400, wantProblem: invalid(`member "operator" must not be null`)},
		{name: "too deep", body: `{"sub":"a","x":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`, wantStatus: 400, wantProblem: invalid("arrays and objects nest more than 16 levels deep")},
		{name: "trailing garbage", body: `{"sub":"a"}]]]`, wantStatus: 400, wantProblem: invalid("unexpected data after the JSON value")},
		{name: "second object", body: `{"sub":"a"}{"sub":"b"}`, wantStatus: 400, wantProblem: invalid("unexpected data after the JSON value")},
		{name: "unterminated object", body: `{"sub":"a"`, wantStatus: 400, wantProblem: invalid("the JSON ends too soon")},
		{name: "array", body: `[{"sub":"a"}]`, wantStatus: 400, wantProblem: invalid("the body must be a JSON object")},
		{name: "null", body: `null`, wantStatus: 400, wantProblem: invalid("the body must be a JSON object")},
		{name: "empty body", body: ``, wantStatus: 400, wantProblem: invalid("the body must be a JSON object")},
		{name: "form body", body: `sub=alice`, wantStatus: 400, wantProblem: invalid("malformed JSON at byte 1")},
		{name: "GET", method: http.MethodGet, wantStatus: 405,
			wantProblem: &Problem{Type: "about:blank", Title: "Method Not Allowed", Status: 405, Detail: "only POST is allowed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			status, ctype, body := get(t, method, srv.URL+TokenPath, tc.body)
			if status != tc.wantStatus {
				t.Fatalf("got status %d, want %d: %s", status, tc.wantStatus, body)
			}
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.DisallowUnknownFields()
			if tc.wantProblem != nil {
				var got Problem
				if err := dec.Decode(&got); err != nil {
					t.Fatalf("problem %s: %v", body, err)
				}
				if ctype != "application/problem+json" || got != *tc.wantProblem {
					t.Fatalf("got %s %+v, want application/problem+json %+v", ctype, got, *tc.wantProblem)
				}
				return
			}
			var got TokenResponse
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("response %s: %v", body, err)
			}
			if ctype != "application/json" || got.ExpiresIn != 3600 {
				t.Fatalf("got %s, expiresIn %d; want application/json, 3600", ctype, got.ExpiresIn)
			}
			var required []string
			if tc.wantScopes != nil {
				required = []string{testOperator}
			}
			authz, err := a.Authorize(context.Background(), "Bearer "+got.Token, required)
			if err != nil {
				t.Fatalf("the token does not pass: %v", err)
			}
			if authz.JWT.Claims["sub"] != tc.wantSub || !reflect.DeepEqual(authz.JWT.Scopes, tc.wantScopes) {
				t.Fatalf("got sub %q, scopes %#v; want %q, %#v", authz.JWT.Claims["sub"], authz.JWT.Scopes, tc.wantSub, tc.wantScopes)
			}
		})
	}
}

func TestTokenHandlerWithoutOperatorScope(t *testing.T) {
	iss, err := NewIssuer("http://localhost:1", testAudience)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		body       string
		wantStatus int
	}{
		{name: "renter", body: `{"sub":"alice"}`, wantStatus: 200},
		{name: "operator", body: `{"sub":"ops","operator":true}`, wantStatus: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			iss.TokenHandler("").ServeHTTP(rec, httptest.NewRequest(http.MethodPost, TokenPath, strings.NewReader(tc.body)))
			if rec.Code != tc.wantStatus {
				t.Fatalf("got %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
		})
	}
}
