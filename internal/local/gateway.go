// Package local runs the service on one machine for development: it plays the parts
// AWS plays in production (API Gateway in front of the command function, for now)
// and invokes the same handlers the Lambda functions run.
package local

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/ident"
)

// MaxPayloadBytes is API Gateway's limit on a request's payload; larger ones get 413
// without reaching the handler, as on AWS.
const MaxPayloadBytes = 10 * 1024 * 1024

// Gateway is an http.Handler that plays API Gateway's HTTP API with a $default route
// to one Lambda function: each request becomes a payload 2.0 event, and the function's
// response becomes the HTTP response.
type Gateway struct {
	Function Invoker
}

// ServeHTTP implements http.Handler.
func (g Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		http.Error(w, `{"message":"Bad Request"}`, http.StatusBadRequest)
		return
	}
	if len(body) > MaxPayloadBytes {
		http.Error(w, `{"message":"Request Entity Too Large"}`, http.StatusRequestEntityTooLarge)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := Call(r.Context(), g.Function, Event(r, body, time.Now()), &resp); err != nil {
		// What API Gateway answers when the function fails.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"message":"Internal Server Error"}`)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(out)
}

// Event returns the HTTP API payload 2.0 event API Gateway would send for r.
func Event(r *http.Request, body []byte, now time.Time) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header))
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.String())
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	if len(query) == 0 {
		query = nil
	}
	sourceIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	e := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              "$default",
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     "$default",
			AccountID:    "000000000000",
			Stage:        "$default",
			RequestID:    ident.Random(16),
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: "local",
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			e.Body = string(body)
		} else {
			e.Body, e.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return e
}

// serve serves h on l until ctx ends, then shuts down within five seconds.
func serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	select {
	case err := <-errs:
		return fmt.Errorf("local: serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}

// DefaultWebhookSecret is the payment webhook secret of local runs when
// PAYMENT_WEBHOOK_SECRET is not set. It is public: never use it on AWS, where the
// secret comes from Secrets Manager.
const DefaultWebhookSecret = "local-webhook-secret-not-for-production"
