package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// The world every fuzzed request meets: bike fb1 is registered and available, bike
// fb2 is requested by alice with its payment prepared (on the to-do list: its
// payment overdue, its process not stuck yet), and the clock stands still.
var (
	fuzzNow    = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	fuzzRental = rental.NewRentalID("fb2", "FuzzFuzzFuzzFuzzFuzz00")
	fuzzRef    = payment.ReferenceFor(fuzzRental)
)

const fuzzRequestID = "fuzz-request-1"

// fuzzWorld returns an API over a fresh in-memory store holding the world above,
// and the buffer its logs go to. A fresh world per input keeps every input
// reproducible on its own.
func fuzzWorld(t *testing.T) (*httpapi.API, *syncBuffer) {
	t.Helper()
	store := eventstore.NewMemory()
	commands := command.New(store, command.WithProvider(generic.Provider{}))
	ctx := context.Background()
	for _, c := range []rental.Command{
		rental.RegisterBike{BikeID: "fb1"},
		rental.RegisterBike{BikeID: "fb2"},
		rental.RequestBike{BikeID: "fb2", Renter: "alice", RentalID: fuzzRental},
	} {
		if _, err := commands.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	prepare := payment.PreparePayment{Reference: fuzzRef, PaymentID: "pay-fuzz", Amount: 1500, Currency: "EUR"}
	if _, err := commands.Payment(ctx, prepare, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	todo := newToDo(t, 2)
	todo.open(deadlinekinds.Payment, fuzzRental, fuzzNow.Add(-5*time.Minute))
	todo.open(deadlinekinds.Stuck, fuzzRental, fuzzNow.Add(5*time.Minute))
	verifier, err := webhook.NewVerifier(secret, webhook.DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	return httpapi.New(httpapi.Config{
		Commands:  commands,
		Webhook:   verifier,
		Canceller: &fakeCanceller{outcome: process.OutcomeNothingToDo},
		Deadlines: todo.listing(),
		Logger:    slog.New(slog.NewJSONHandler(logs, nil)),
		Now:       func() time.Time { return fuzzNow },
	}), logs
}

// fuzzRequest builds the event API Gateway would send. The path may carry a query
// string; a body that is not UTF-8 arrives base64-encoded, as API Gateway sends
// binary bodies. Every request is signed with the webhook secret, so that the
// webhooks' bodies are reached; refused signatures are the business of
// TestWebhooks and of the webhook package's FuzzVerify.
//
// caller says who sends it, as the gateway's authorizer would have verified: 0
// nobody, 1 alice (fb2's renter), 2 bob, anything else the operator.
func fuzzRequest(method, path, contentType string, body []byte, caller byte) events.APIGatewayV2HTTPRequest {
	rawPath, rawQuery, _ := strings.Cut(path, "?")
	req := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        rawPath,
		RawQueryString: rawQuery,
		Headers:        map[string]string{"payment-signature": webhook.Sign(secret, body, fuzzNow)},
		Body:           string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: fuzzRequestID,
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath},
		},
	}
	if contentType != "" {
		req.Headers["content-type"] = contentType
	}
	switch caller {
	case 0:
	case 1:
		req.RequestContext.Authorizer = claims("alice", false)
	case 2:
		req.RequestContext.Authorizer = claims("bob", false)
	default:
		req.RequestContext.Authorizer = claims("ops", true)
	}
	if !utf8.Valid(body) {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	if query, err := url.ParseQuery(rawQuery); err == nil && len(query) > 0 {
		req.QueryStringParameters = map[string]string{}
		for k, v := range query {
			req.QueryStringParameters[k] = strings.Join(v, ",") // API Gateway joins repeated keys
		}
	}
	return req
}

func FuzzHandle(f *testing.F) {
	const js = "application/json"
	hook := "/webhooks/payments"
	paid := `{"id":"evt-fuzz-1","type":"payment.succeeded","paymentReference":"` + fuzzRef + `"}`
	failed := `{"id":"evt-fuzz-2","type":"payment.failed","paymentReference":"` + fuzzRef + `","reason":"card declined"}`
	const nobody, alice, bob, ops = 0, 1, 2, 3
	for _, seed := range []struct {
		method, path, contentType, body string
		caller                          byte
	}{
		{"PUT", "/bikes/fb3", "", "", ops},
		{"PUT", "/bikes/fb1", js, "{}", ops},
		{"PUT", "/bikes/fb3", "", "", alice},
		{"PUT", "/bikes/fb3", "", "", nobody},
		{"GET", "/bikes/fb2", "", "", nobody},
		{"POST", "/bikes/fb2/return", "", "", ops},
		{"POST", "/bikes/fb2/return", "", "", alice},
		{"POST", "/bikes/fb2/return", js, `{"rentalId":"` + fuzzRental + `"}`, ops},
		{"POST", "/bikes/fb2/return", js, `{"rentalId":"fb1_AAAAAAAAAAAAAAAAAAAAAA"}`, ops},
		{"POST", "/rentals", js, `{"bikeId":"fb1"}`, bob},
		{"POST", "/rentals", js, `{"bikeId":"fb1"}`, alice},
		{"POST", "/rentals", js, `{"bikeId":"fb1"}`, nobody},
		{"POST", "/rentals", js, `{"bikeId":"fb1","renter":"alice"}`, bob},
		{"POST", "/rentals", js, `{"bikeId":"fb2","bikeId":"fb1"}`, bob},
		{"POST", "/rentals", js, `{"BIKEID":"fb1"}`, bob},
		{"POST", "/bikes/fb2/return", js, `{"rentalId":"` + fuzzRental + `","RentalId":"` + fuzzRental + `"}`, ops},
		{"POST", hook, js, `{"id":"evt-fuzz-4","type":"payment.failed","type":"payment.succeeded","paymentReference":"` + fuzzRef + `"}`, nobody},
		{"POST", "/rentals", js, `{"bikeId":"fb1"}]]]`, bob},
		{"POST", "/rentals", js, "{\"bikeId\":\"fb1\"}\n \t\r", bob},
		{"POST", "/rentals", "application/merge-patch+json; charset=utf-8", `{"bikeId":"fb2"}`, bob},
		{"GET", "/rentals", "", "", alice},
		{"GET", "/rentals?limit=1&cursor=djI", "", "", alice},
		{"GET", "/rentals?cursor=djA", "", "", alice},
		{"GET", "/rentals?limit=101", "", "", bob},
		{"GET", "/rentals/" + fuzzRental, "", "", ops},
		{"GET", "/rentals/" + fuzzRental, "", "", alice},
		{"GET", "/rentals/" + fuzzRental, "", "", bob},
		{"POST", "/rentals/" + fuzzRental + "/cancel-payment", js, "{}", ops},
		{"POST", "/rentals/" + fuzzRental + "/cancel-payment", js, "{}", alice},
		{"POST", hook, js, paid, nobody},
		{"POST", hook, js, paid + "]", nobody},
		{"POST", hook, js, failed, nobody},
		{"POST", hook, js, `{"id":"evt-fuzz-3","type":"payment.refunded","paymentReference":"` + fuzzRef + `"}`, nobody},
		{"POST", hook, js, `{"id":"evt-fuzz-1","type":"payment.failed","paymentReference":"` + fuzzRef + `"}`, nobody},
		{"POST", "/webhooks/stripe", js, `{"id":"evt_1","type":"payment_intent.succeeded"}`, nobody},
		{"GET", "/payments/pending?limit=1", "", "", ops},
		{"GET", "/payments/pending?limit=0&limit=2", "", "", ops},
		{"GET", "/payments/pending", "", "", bob},
		{"GET", "/deadlines?limit=1", "", "", ops},
		{"GET", "/deadlines?limit=1&cursor=eyJsIjoiIiwiZCI6MCwiayI6InBheW1lbnQiLCJzIjoiPGltZz4ifQ", "", "", ops},
		{"GET", "/deadlines?kind=stuck&overdue=false&cursor=%3Cimg%3E", "", "", ops},
		{"GET", "/deadlines?cursor=", "", "", ops},
		{"GET", "/processes/stuck?limit=1", "", "", ops},
		{"GET", "/refunds/owed", "", "", alice},
		{"POST", "/rentals", js, `{"bikeId":"fb1","x":` + arrays(httpapi.MaxJSONDepth) + `}`, bob},
		{"POST", hook, js, `{"id":"e","type":"payment.failed","paymentReference":"` + fuzzRef + `","reason":"\"[[[[{{{{\\"}`, nobody},
		{"POST", "/rentals", "text/plain", "bikeId=fb1", bob},
		{"POST", "/rentals", js, "\xff\xfe{}", bob},
		{"DELETE", "/bikes/fb1", "", "", ops},
		{"GET", "//bikes//fb1", "", "", nobody},
		{"GET", "/rentals/fb2_AAAAAAAAAAAAAAAAAAAAAA", "", "", alice},
		{"POST", hook, js, `{"id":"e","type":"payment.succeeded","paymentReference":"rp_"}`, nobody},
		{"", "", "", "", nobody},
	} {
		f.Add(seed.method, seed.path, seed.contentType, []byte(seed.body), seed.caller)
	}
	f.Fuzz(func(t *testing.T, method, path, contentType string, body []byte, caller byte) {
		a, logs := fuzzWorld(t)
		resp, err := a.Handle(context.Background(), fuzzRequest(method, path, contentType, body, caller))
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		if got := resp.Headers["X-Request-Id"]; got != fuzzRequestID {
			t.Errorf("X-Request-Id = %q, want %q", got, fuzzRequestID)
		}
		status, ct := resp.StatusCode, resp.Headers["Content-Type"]
		switch {
		case status >= 500 && status != http.StatusNotImplemented: // 501: a route this world does not configure
			t.Fatalf("bad input answered %d: %s\nlogs: %s", status, resp.Body, logs.String())
		case status >= 400:
			var p httpapi.Problem
			if ct != "application/problem+json" {
				t.Errorf("%d with Content-Type %q, want application/problem+json", status, ct)
			}
			if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
				t.Fatalf("%d with a body that is not a problem: %v: %q", status, err, resp.Body)
			}
			if p.Status != status || p.Type == "" || p.Title == "" || p.RequestID != fuzzRequestID {
				t.Errorf("%d with problem %+v", status, p)
			}
		case status >= 200 && status < 300:
			if ct != "application/json" || !json.Valid([]byte(resp.Body)) || resp.Body == "" {
				t.Errorf("%d with Content-Type %q and body %q, want JSON", status, ct, resp.Body)
			}
		default:
			t.Errorf("status %d", status)
		}
		// Nothing about alice's rental reaches anyone else, unless they named it.
		asked := method + path + contentType + string(body)
		if (caller == 0 || caller == 2) && strings.Contains(resp.Body, "alice") && !strings.Contains(asked, "alice") {
			t.Errorf("caller %d learned of alice: %d %s", caller, status, resp.Body)
		}
		if caller == 0 && status == http.StatusOK && method != "GET" && !strings.HasPrefix(path, "/webhooks/") {
			t.Errorf("an anonymous %s %s succeeded: %s", method, path, resp.Body)
		}
		line := logs.String()
		if strings.Count(line, "\n") != 1 || !json.Valid([]byte(line)) {
			t.Errorf("one request did not log one JSON line: %q", line)
		}
		if bytes.Contains([]byte(line), secret) {
			t.Errorf("the log line carries the webhook secret: %s", line)
		}
	})
}
