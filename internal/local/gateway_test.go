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

	"github.com/bikerental/bikerental/internal/api"
	"github.com/bikerental/bikerental/internal/command"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/local"
	"github.com/bikerental/bikerental/internal/webhook"
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
	a := api.New(api.Config{Commands: command.New(eventstore.NewMemory()), Webhook: verifier})
	srv := httptest.NewServer(local.Gateway{Function: local.InProcess(a.Handle)})
	defer srv.Close()
	body := "{ \"reason\" : \"card declined\" }"
	for _, tc := range []struct {
		sig  string
		want int
	}{
		{webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(body), time.Now()), http.StatusNotFound}, // signed, but no such payment
		{webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(strings.ReplaceAll(body, " ", "")), time.Now()), http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/payments/rp_b1_AAAAAAAAAAAAAAAAAAAAAA/reject", strings.NewReader(body))
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
