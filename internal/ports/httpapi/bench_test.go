package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// The API's benchmarks: whole requests handled against the in-memory store, and the
// decoding every request goes through on its way to a command.
//
//	go test -run '^$' -bench . -benchmem ./internal/ports/httpapi/

var benchSecret = []byte("bench-webhook-secret-0123456789")

func benchAPI(b *testing.B) (*API, *command.Handler) {
	b.Helper()
	verifier, err := webhook.NewVerifier(benchSecret, webhook.DefaultTolerance)
	if err != nil {
		b.Fatal(err)
	}
	commands := command.New(eventstore.NewMemory(), command.WithProvider(generic.Provider{}))
	return New(Config{Commands: commands, Webhook: verifier, Logger: slog.New(slog.DiscardHandler)}), commands
}

func benchRequest(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"user-agent": "bench/1.0", "accept": "*/*", "host": "api.example.com", "x-forwarded-for": "192.0.2.1"}
	if body != "" {
		h["content-type"] = "application/json"
	}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			// alice, with the operator scope, so that every route lets her in.
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: map[string]string{"sub": "alice", "scope": DefaultOperatorScope}}},
			RequestID: "bench-request",
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
}

func handle(b *testing.B, a *API, req events.APIGatewayV2HTTPRequest, status int) {
	resp, err := a.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != status {
		b.Fatalf("%s %s: %d %s (%v), want %d", req.RequestContext.HTTP.Method, req.RawPath, resp.StatusCode, resp.Body, err, status)
	}
}

// BenchmarkHandle measures whole API requests against the in-memory store: routing,
// decoding, the command or query, and the response. The POST /rentals case is a
// retry with the same Idempotency-Key, which answers the first 202 again and appends
// nothing, so every iteration does the same work; the webhook case is the payment
// provider's redelivered, signed event, found by its receipt.
func BenchmarkHandle(b *testing.B) {
	a, commands := benchAPI(b)
	rentalBody := `{"bikeId":"bike-42"}`
	rentalKey := map[string]string{"Idempotency-Key": "7d1c2a5e-order-42"}
	handle(b, a, benchRequest(http.MethodPut, "/bikes/bike-42", "", nil), http.StatusCreated)
	handle(b, a, benchRequest(http.MethodPost, "/rentals", rentalBody, rentalKey), http.StatusAccepted)
	rentalID := rental.NewRentalID("bike-42", ident.Derived(rental.RentalSuffixLength, "bike-42", "alice", rentalKey["Idempotency-Key"]))
	ref := payment.ReferenceFor(rentalID)
	if _, err := commands.Payment(context.Background(), payment.PreparePayment{Reference: ref, PaymentID: "pay_1", Amount: 1500, Currency: "EUR"}, command.Meta{}); err != nil {
		b.Fatal(err)
	}
	paid := `{"id":"evt-bench-1","type":"payment.succeeded","paymentReference":"` + ref + `"}`
	handle(b, a, benchRequest(http.MethodPost, "/webhooks/payments", paid, map[string]string{webhook.Header: webhook.Sign(benchSecret, []byte(paid), time.Now())}), http.StatusOK)

	cases := []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
	}{
		{"PUT-bike-again", benchRequest(http.MethodPut, "/bikes/bike-42", "", nil), http.StatusOK},
		{"GET-bike", benchRequest(http.MethodGet, "/bikes/bike-42", "", nil), http.StatusOK},
		{"POST-rentals-idempotent-retry", benchRequest(http.MethodPost, "/rentals", rentalBody, rentalKey), http.StatusAccepted},
		{"POST-webhook-redelivery", benchRequest(http.MethodPost, "/webhooks/payments", paid,
			map[string]string{webhook.Header: webhook.Sign(benchSecret, []byte(paid), time.Now())}), http.StatusOK},
		{"GET-rental", benchRequest(http.MethodGet, "/rentals/"+rentalID, "", nil), http.StatusOK},
		{"unknown-route", benchRequest(http.MethodGet, "/no/such/route", "", nil), http.StatusNotFound},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				handle(b, a, c.req, c.status)
			}
		})
	}
}

// BenchmarkDecode measures the request decoding each route goes through: finding the
// route and its path parameters, reading a header, the depth scan and strict JSON
// decoding of a body, and checking and hashing an Idempotency-Key.
func BenchmarkDecode(b *testing.B) {
	a, _ := benchAPI(b)
	raw := benchRequest(http.MethodPost, "/rentals", `{"bikeId":"bike-42"}`,
		map[string]string{"Idempotency-Key": "7d1c2a5e-order-42"})
	r := &request{ctx: context.Background(), raw: &raw, requestID: "bench-request", body: []byte(raw.Body)}

	for _, rt := range []struct{ method, path string }{
		{http.MethodPost, "/rentals"},
		{http.MethodPost, "/bikes/bike-42/return"},
		{http.MethodPost, "/webhooks/payments"},
		{http.MethodGet, "/payments/pending"},
	} {
		method, path := rt.method, rt.path
		b.Run("route/"+method+strings.ReplaceAll(path, "/", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rt, _, _ := a.find(method, path); rt == nil {
					b.Fatalf("no route for %s", path)
				}
			}
		})
	}
	b.Run("header", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r.header("Idempotency-Key") == "" {
				b.Fatal("no Idempotency-Key")
			}
		}
	})
	b.Run("json-body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var body RentalRequest
			if bad := decodeJSON(r, &body, false); bad != nil || body.BikeID != "bike-42" {
				b.Fatalf("decode: %+v", bad)
			}
		}
	})
	b.Run("idempotency-key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			key := r.header("Idempotency-Key")
			if !validKey(key) {
				b.Fatal("key refused")
			}
			if len(ident.Derived(rental.RentalSuffixLength, "bike-42", "alice", key)) != rental.RentalSuffixLength {
				b.Fatal("short suffix")
			}
		}
	})
}
