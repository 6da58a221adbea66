package httpapi_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// The sample events in events/ are written by `go test ./internal/ports/httpapi -run
// TestSampleEvents -update` and checked by every run of the test.
var update = flag.Bool("update", false, "rewrite the sample events in events/")

// LocalWebhookSecret is the documented webhook secret of local runs; the sample
// webhooks are signed with it.
const LocalWebhookSecret = local.DefaultWebhookSecret

const (
	sampleBike   = "bike-42"
	sampleRenter = "alice"
	sampleKey    = "3c0b6a2e-rental-request-1"
	// sampleOperatorClient is the operator app client whose client-credentials
	// token calls the operator routes: its id is the token's subject.
	sampleOperatorClient = "5ktl2o8fl6ga3bcu7rpvmjqh1n"
	sampleRenterClient   = "3n4b5urk1ft4fl3mg5e62d9ado"
	sampleIssuer         = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE42"
)

// sampleClaims is the authorizer context API Gateway's JWT authorizer passes for a
// Cognito access token of sub with scope: every claim as a string, and the scopes.
func sampleClaims(sub, client, scope string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	iat := sampleTime.Add(-5 * time.Minute).Unix()
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
		Claims: map[string]string{
			"sub": sub, "iss": sampleIssuer, "client_id": client, "token_use": "access", "scope": scope,
			"auth_time": fmt.Sprint(iat), "iat": fmt.Sprint(iat), "exp": fmt.Sprint(iat + 3600), "jti": "0b0c5d6e-sample-token",
		},
		Scopes: strings.Fields(scope),
	}}
}

var (
	sampleTime   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	sampleRental = rental.NewRentalID(sampleBike, ident.Derived(rental.RentalSuffixLength, sampleBike, sampleRenter, sampleKey))
	sampleRef    = payment.ReferenceFor(sampleRental)
)

type sample struct {
	file, method, route, path, body string
	headers                         map[string]string
	caller                          httpapi.Access // Renter or Operator: the claims API Gateway's JWT authorizer verified
	setup                           func(h *harness)
	canceller                       httpapi.Canceller
	index                           func(t *testing.T) *deadlinekinds.Listing // the to-do list, if any
	status                          int
}

func samples() []sample {
	register := func(h *harness) { h.expect("PUT", "/bikes/"+sampleBike, "", nil, http.StatusCreated) }
	request := func(h *harness) {
		register(h)
		h.expect("POST", "/rentals", fmt.Sprintf(`{"bikeId":%q}`, sampleBike), as(sampleRenter, map[string]string{"Idempotency-Key": sampleKey}), http.StatusAccepted)
	}
	prepared := func(h *harness) { request(h); h.prepare(sampleRental) }
	rented := func(h *harness) { request(h); approve(h.t, h, sampleRental, sampleRenter) }
	confirmBody := `{"id":"evt-sample-1","type":"payment.succeeded","paymentReference":"` + sampleRef + `"}`
	rejectBody := `{"id":"evt-sample-2","type":"payment.failed","paymentReference":"` + sampleRef + `","reason":"card declined"}`
	return []sample{
		{file: "register-bike.json", method: "PUT", route: "/bikes/{bikeId}", path: "/bikes/" + sampleBike, caller: httpapi.Operator, status: 201},
		{file: "get-bike.json", method: "GET", route: "/bikes/{bikeId}", path: "/bikes/" + sampleBike, setup: register, status: 200},
		{file: "return-bike.json", method: "POST", route: "/bikes/{bikeId}/return", path: "/bikes/" + sampleBike + "/return", caller: httpapi.Operator, setup: rented, status: 200},
		{file: "request-rental.json", method: "POST", route: "/rentals", path: "/rentals",
			body:    fmt.Sprintf(`{"bikeId":%q}`, sampleBike),
			headers: map[string]string{"content-type": "application/json", "idempotency-key": sampleKey}, caller: httpapi.Renter, setup: register, status: 202},
		{file: "list-rentals.json", method: "GET", route: "/rentals", path: "/rentals", caller: httpapi.Renter, setup: prepared, status: 200},
		{file: "get-rental.json", method: "GET", route: "/rentals/{rentalId}", path: "/rentals/" + sampleRental, caller: httpapi.Renter, setup: prepared, status: 200},
		{file: "cancel-payment.json", method: "POST", route: "/rentals/{rentalId}/cancel-payment", path: "/rentals/" + sampleRental + "/cancel-payment",
			caller: httpapi.Operator, setup: prepared, canceller: &fakeCanceller{outcome: process.OutcomeCancelled}, status: 200},
		{file: "payment-succeeded.json", method: "POST", route: "/webhooks/payments", path: "/webhooks/payments",
			body:    confirmBody,
			headers: map[string]string{"content-type": "application/json", "payment-signature": webhook.Sign([]byte(LocalWebhookSecret), []byte(confirmBody), sampleTime)},
			setup:   prepared, status: 200},
		{file: "payment-failed.json", method: "POST", route: "/webhooks/payments", path: "/webhooks/payments",
			body:    rejectBody,
			headers: map[string]string{"content-type": "application/json", "payment-signature": webhook.Sign([]byte(LocalWebhookSecret), []byte(rejectBody), sampleTime)},
			setup:   prepared, status: 200},
		{file: "pending-payments.json", method: "GET", route: "/payments/pending", path: "/payments/pending", caller: httpapi.Operator,
			index: sampleIndex, status: 200},
		{file: "deadlines.json", method: "GET", route: "/deadlines", path: "/deadlines", caller: httpapi.Operator, index: sampleIndex, status: 200},
		{file: "stuck-rentals.json", method: "GET", route: "/processes/stuck", path: "/processes/stuck", caller: httpapi.Operator, index: sampleIndex, status: 200},
		{file: "refunds-owed.json", method: "GET", route: "/refunds/owed", path: "/refunds/owed", caller: httpapi.Operator, index: sampleIndex, status: 200},
		{file: "console.json", method: "GET", route: "/console", path: "/console", status: 200},
		{file: "console-config.json", method: "GET", route: "/console/config", path: "/console/config", status: 200},
		{file: "console-asset.json", method: "GET", route: "/console/{asset}", path: "/console/app.js", status: 200},
	}
}

// sampleIndex is a to-do list holding the sample rental's overdue payment, its
// stuck process and a refund owed.
func sampleIndex(t *testing.T) *deadlinekinds.Listing {
	d := newToDo(t, 2)
	d.open("payment", sampleRental, sampleTime.Add(-5*time.Minute))
	d.open("stuck", sampleRental, sampleTime.Add(-5*time.Minute))
	d.open("refund", sampleRental, sampleTime.Add(-time.Hour))
	return d.listing()
}

// event builds the request exactly as API Gateway's HTTP API (payload 2.0) sends it.
func (s sample) event() events.APIGatewayV2HTTPRequest {
	headers := map[string]string{
		"accept":            "*/*",
		"host":              "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
		"user-agent":        "curl/8.5.0",
		"x-amzn-trace-id":   "Root=1-6749ad40-0b3c6e4a5f1d2c3b4a596877",
		"x-forwarded-for":   "203.0.113.10",
		"x-forwarded-port":  "443",
		"x-forwarded-proto": "https",
	}
	if s.body != "" {
		headers["content-length"] = fmt.Sprint(len(s.body))
	}
	for k, v := range s.headers {
		headers[k] = v
	}
	params := map[string]string{}
	routeParts, pathParts := strings.Split(s.route, "/"), strings.Split(s.path, "/")
	for i, p := range routeParts {
		if strings.HasPrefix(p, "{") {
			params[strings.Trim(p, "{}")] = pathParts[i]
		}
	}
	if len(params) == 0 {
		params = nil
	}
	routeKey := s.method + " " + s.route
	ctx := events.APIGatewayV2HTTPRequestContext{
		RouteKey:     routeKey,
		AccountID:    "123456789012",
		Stage:        "$default",
		RequestID:    "CdtVxjKuoAMEJfA=",
		APIID:        "a1b2c3d4e5",
		DomainName:   "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
		DomainPrefix: "a1b2c3d4e5",
		Time:         sampleTime.Format("02/Jan/2006:15:04:05 -0700"),
		TimeEpoch:    sampleTime.UnixMilli(),
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
			Method: s.method, Path: s.path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.10", UserAgent: "curl/8.5.0",
		},
	}
	switch s.caller {
	case httpapi.Renter:
		ctx.Authorizer = sampleClaims(sampleRenter, sampleRenterClient, "aws.cognito.signin.user.admin")
	case httpapi.Operator:
		ctx.Authorizer = sampleClaims(sampleOperatorClient, sampleOperatorClient, httpapi.DefaultOperatorScope)
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: s.path, Headers: headers,
		PathParameters: params, RequestContext: ctx, Body: s.body,
	}
}

func TestSampleEvents(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "events")
	all := samples()
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			b, err := sampleJSON(s.event())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, s.file), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(all) {
		t.Errorf("events/ holds %d files, want %d (one per route): run with -update", len(files), len(all))
	}
	for _, s := range all {
		t.Run(s.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, s.file))
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			var req events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				t.Fatalf("%s is not an HTTP API event: %v", s.file, err)
			}
			h := newHarness(t, eventstore.NewMemory(), s.canceller)
			cfg := httpapi.Config{Commands: h.commands, Webhook: mustVerifier(t), Canceller: s.canceller, Now: func() time.Time { return sampleTime }}
			if s.index != nil {
				cfg.Deadlines = s.index(t)
			}
			h.api = httpapi.New(cfg)
			if s.setup != nil {
				s.setup(h)
			}
			resp, err := h.api.Handle(context.Background(), req)
			if err != nil || resp.StatusCode != s.status {
				t.Fatalf("%s answered %d (%v), want %d: %s", s.file, resp.StatusCode, err, s.status, resp.Body)
			}
			if s.file == "request-rental.json" && !strings.Contains(resp.Body, sampleRental) {
				t.Errorf("the sample rental request did not create %s: %s", sampleRental, resp.Body)
			}
		})
	}
}

// sampleJSON renders an event as API Gateway sends it: aws-lambda-go's struct always
// writes requestContext.authentication, which API Gateway only sends with mutual TLS,
// and empty strings where API Gateway's IAM authorizer context has nulls.
func sampleJSON(e events.APIGatewayV2HTTPRequest) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	rc := m["requestContext"].(map[string]any)
	delete(rc, "authentication")
	if auth, ok := rc["authorizer"].(map[string]any); ok {
		delete(auth, "iam")
	}
	return json.MarshalIndent(m, "", "  ")
}

func mustVerifier(t *testing.T) *webhook.Verifier {
	v, err := webhook.NewVerifier([]byte(LocalWebhookSecret), webhook.DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
