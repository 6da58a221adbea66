package local_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

func TestGatewayCarriesRequestsAndResponsesUnchanged(t *testing.T) {
	var seen events.APIGatewayV2HTTPRequest
	srv := httptest.NewServer(local.Gateway{Function: local.InProcess(func(_ context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		seen = e
		return events.APIGatewayV2HTTPResponse{StatusCode: 418, Headers: map[string]string{"X-Test": "yes"}, Body: "teapot"}, nil
	})})
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/rentals/a%2Fb?x=1&x=2", strings.NewReader("{\"a\":1}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Payment-Signature", "t=1,v1=ab")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 418 || string(body) != "teapot" || resp.Header.Get("X-Test") != "yes" {
		t.Errorf("response = %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if seen.Version != "2.0" || seen.RawPath != "/rentals/a%2Fb" || seen.RawQueryString != "x=1&x=2" ||
		seen.QueryStringParameters["x"] != "1,2" || seen.RequestContext.HTTP.Method != "POST" ||
		seen.Headers["content-type"] != "application/json" || seen.Headers["payment-signature"] != "t=1,v1=ab" ||
		seen.Body != `{"a":1}` || seen.IsBase64Encoded || seen.RequestContext.RequestID == "" {
		t.Errorf("event = %+v", seen)
	}
}

func TestGatewayBase64EncodesBinaryBodies(t *testing.T) {
	var seen events.APIGatewayV2HTTPRequest
	srv := httptest.NewServer(local.Gateway{Function: local.InProcess(func(_ context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		seen = e
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})})
	defer srv.Close()
	http.Post(srv.URL+"/x", "application/octet-stream", strings.NewReader("\xff\xfe"))
	if !seen.IsBase64Encoded || seen.Body != "//4=" {
		t.Errorf("binary body: %q base64=%v", seen.Body, seen.IsBase64Encoded)
	}
}

func TestGatewayAnswers500WhenTheFunctionFails(t *testing.T) {
	srv := httptest.NewServer(local.Gateway{Function: local.InProcess(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("boom")
	})})
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || strings.Contains(string(body), "boom") {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
}

// TestSignedWebhookOverHTTP checks that the body the API verifies is the exact bytes
// sent, as API Gateway delivers them.
func TestSignedWebhookOverHTTP(t *testing.T) {
	verifier, _ := webhook.NewVerifier([]byte(local.DefaultWebhookSecret), webhook.DefaultTolerance)
	a := httpapi.New(httpapi.Config{Commands: command.New(eventstore.NewMemory(), command.WithProvider(generic.Provider{})), Webhook: verifier})
	srv := httptest.NewServer(local.Gateway{Function: local.InProcess(a.Handle)})
	defer srv.Close()
	body := "{ \"id\": \"evt-1\", \"type\": \"payment.failed\", \"paymentReference\": \"rp_b1_AAAAAAAAAAAAAAAAAAAAAA\", \"reason\" : \"card declined\" }"
	for _, tc := range []struct {
		sig  string
		want int
	}{
		{webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(body), time.Now()), http.StatusNotFound}, // signed, but no such payment
		{webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(strings.ReplaceAll(body, " ", "")), time.Now()), http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/webhooks/payments", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhook.Header, tc.sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
		}
	}
}

// TestGatewayPlaysTheJWTAuthorizer puts the gateway, with its authorizer, in front of
// the real handler, with the local issuer serving its keys over HTTP as an identity
// provider does, and sends every kind of credential an attacker might.
func TestGatewayPlaysTheJWTAuthorizer(t *testing.T) {
	issuerSrv := httptest.NewUnstartedServer(nil)
	issuerSrv.Start()
	defer issuerSrv.Close()
	issuer, err := auth.NewIssuer(issuerSrv.URL, local.LocalAudience)
	if err != nil {
		t.Fatal(err)
	}
	issuerSrv.Config.Handler = issuer.Handler(httpapi.DefaultOperatorScope)
	// Another issuer at the same address, with its own key: what a forger has.
	forger, _ := auth.NewIssuer(issuerSrv.URL, local.LocalAudience)
	stranger, _ := auth.NewIssuer("https://elsewhere.example", local.LocalAudience)
	other, _ := auth.NewIssuer(issuerSrv.URL, "another-audience")
	authorizer, err := auth.NewAuthorizer(auth.AuthorizerConfig{Issuer: issuerSrv.URL, Audiences: []string{local.LocalAudience}})
	if err != nil {
		t.Fatal(err)
	}
	verifier, _ := webhook.NewVerifier([]byte(local.DefaultWebhookSecret), webhook.DefaultTolerance)
	store := eventstore.NewMemory()
	a := httpapi.New(httpapi.Config{Commands: command.New(store, command.WithProvider(generic.Provider{})), Webhook: verifier})
	srv := httptest.NewServer(local.Gateway{Function: local.InProcess(a.Handle), Authorizer: authorizer})
	defer srv.Close()

	mint := func(i *auth.Issuer, sub string, scopes ...string) string {
		tok, err := i.Mint(sub, scopes, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ops := mint(issuer, "ops", httpapi.DefaultOperatorScope)
	alice := mint(issuer, "alice")
	expired := func() string {
		old := issuer.Now
		issuer.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
		defer func() { issuer.Now = old }()
		return mint(issuer, "alice")
	}()
	future := func() string {
		old := issuer.Now
		issuer.Now = func() time.Time { return time.Now().Add(10 * time.Minute) }
		defer func() { issuer.Now = old }()
		return mint(issuer, "alice")
	}()
	_, payload, _ := strings.Cut(alice, ".")
	payload, _, _ = strings.Cut(payload, ".")
	unsigned := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + payload + "."

	call := func(method, path, body, authorization string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, body := call("PUT", "/bikes/b1", "", "Bearer "+ops); resp.StatusCode != http.StatusCreated {
		t.Fatalf("an operator registering a bike: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		name, authorization string
		status              int
		challenge           string
	}{
		{"no token", "", 401, `Bearer realm="bikerental"`},
		{"an empty bearer", "Bearer ", 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"a malformed token", "Bearer not.a.jwt", 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"signed by another key", "Bearer " + mint(forger, "alice"), 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"alg none", "Bearer " + unsigned, 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"expired", "Bearer " + expired, 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"not yet valid", "Bearer " + future, 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"the wrong issuer", "Bearer " + mint(stranger, "alice"), 401, `Bearer realm="bikerental", error="invalid_token"`},
		{"the wrong audience", "Bearer " + mint(other, "alice"), 401, `Bearer realm="bikerental", error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := call("POST", "/rentals", `{"bikeId":"b1"}`, tc.authorization)
			if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != tc.challenge ||
				resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, "#problem-unauthenticated") ||
				resp.Header.Get("X-Request-Id") == "" || !strings.Contains(body, resp.Header.Get("X-Request-Id")) {
				t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
			}
			if tok := strings.TrimPrefix(tc.authorization, "Bearer "); len(tok) > 8 && strings.Contains(body, tok) {
				t.Errorf("the answer echoes the token: %s", body)
			}
		})
	}
	// A renter's token opens renter routes but not operator routes.
	if resp, body := call("POST", "/bikes/b1/return", "", "Bearer "+alice); resp.StatusCode != http.StatusForbidden ||
		resp.Header.Get("WWW-Authenticate") != `Bearer realm="bikerental", error="insufficient_scope", scope="bikerental/operator"` ||
		!strings.Contains(body, "#problem-forbidden") {
		t.Errorf("a renter on an operator route: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if recs, _ := store.Read(context.Background(), "bike-b1", 0); len(recs) != 1 {
		t.Fatalf("refused requests wrote to the bike: %d events", len(recs))
	}
	// The renter is the token's subject, whatever else the request says.
	resp, body := call("POST", "/rentals", `{"bikeId":"b1"}`, "Bearer "+alice)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(body, `"renter":"alice"`) {
		t.Fatalf("alice's request: %d %s", resp.StatusCode, body)
	}
	if resp, _ := call("GET", "/bikes/b1", "", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("the public bike view needs no token: %d", resp.StatusCode)
	}
}
