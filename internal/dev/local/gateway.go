// Package local runs the service on one machine for development: it plays the parts
// AWS plays in production (API Gateway in front of the command function, for now)
// and invokes the same handlers the Lambda functions run.
package local

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
)

// MaxPayloadBytes is API Gateway's limit on a request's payload; larger ones get 413
// without reaching the handler, as on AWS.
const MaxPayloadBytes = 10 * 1024 * 1024

// Gateway is an http.Handler that plays API Gateway's HTTP API in front of one Lambda
// function: each request becomes a payload 2.0 event, and the function's response
// becomes the HTTP response. Like the deployed API's JWT authorizer, it checks the
// bearer token of every route that needs one (api.Renter and api.Operator routes)
// before the function runs, answering 401 or 403 itself, and passes the verified
// claims in the event's request context; requests on no route go to the function,
// which answers 404 or 405. With a Throttle it first plays the stage's throttling,
// answering 429 itself to a request over its route's limit; with an Edge, before
// that, the web ACL in front of the API, answering a request it blocks as it says.
type Gateway struct {
	Function Invoker
	// Authorizer checks bearer tokens. While nil, every route that needs a token is
	// refused with 401.
	Authorizer *auth.Authorizer
	// OperatorScope is the scope operator routes require (api.DefaultOperatorScope
	// if empty), as the template's AuthorizationScopes.
	OperatorScope string
	// Throttle, when set, limits each route's requests as the template's route
	// settings do; nil throttles nothing.
	Throttle *Throttle
	// Edge, when set, plays the web ACL the template puts in front of the API
	// (FloodGuard=edge) before the throttle; nil plays none.
	Edge *Edge
	// Logger receives one line per refused token, with the reason (never the
	// token), and per throttled request; nil logs nothing.
	Logger *slog.Logger
}

// ServeHTTP implements http.Handler.
func (g Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.Edge != nil {
		if v := g.Edge.Check(r); v.Blocked() {
			g.writeEdge(w, r, v)
			return
		}
	}
	if refused := g.throttle(r); refused != nil {
		refused.write(w)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayloadBytes+1))
	if err != nil {
		http.Error(w, `{"message":"Bad Request"}`, http.StatusBadRequest)
		return
	}
	if len(body) > MaxPayloadBytes {
		http.Error(w, `{"message":"Request Entity Too Large"}`, http.StatusRequestEntityTooLarge)
		return
	}
	event := Event(r, body, time.Now())
	if refused := g.authorize(r, &event); refused != nil {
		refused.write(w)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := Call(r.Context(), g.Function, event, &resp); err != nil {
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

// refusal is an answer the gateway gives itself.
type refusal struct {
	status    int
	challenge string
	requestID string
	body      []byte
}

func (f *refusal) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/problem+json")
	if f.challenge != "" {
		w.Header().Set("WWW-Authenticate", f.challenge)
	}
	w.Header().Set("X-Request-Id", f.requestID)
	w.WriteHeader(f.status)
	w.Write(f.body)
}

// writeEdge answers as the web ACL's rule said: its status, headers and body.
func (g Gateway) writeEdge(w http.ResponseWriter, r *http.Request, v EdgeVerdict) {
	if g.Logger != nil {
		g.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request blocked at the edge", slog.String("rule", v.Rule),
			slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()), slog.String("source", clientAddress(r)))
	}
	for k, vs := range v.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(v.Status)
	w.Write(v.Body)
}

// throttle plays the stage's throttling before anything else, as API Gateway does:
// a request its route's bucket has no token for is refused with 429.
func (g Gateway) throttle(r *http.Request) *refusal {
	if g.Throttle == nil {
		return nil
	}
	key := ""
	if rt, ok := httpapi.RouteFor(r.Method, r.URL.EscapedPath()); ok {
		key = rt.Method + " " + rt.Pattern
	}
	if g.Throttle.Allow(key) {
		return nil
	}
	requestID := ident.Random(16)
	if g.Logger != nil {
		g.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request throttled", slog.String("requestId", requestID), slog.String("route", key))
	}
	return blankRefusal(http.StatusTooManyRequests, "this route's request rate is over its limit; retry later", requestID)
}

// authorize plays the JWT authorizer for the route r is on: it refuses a missing or
// invalid token (401) and a token without the operator scope on an operator route
// (403), and otherwise puts the verified claims into the event.
func (g Gateway) authorize(r *http.Request, e *events.APIGatewayV2HTTPRequest) *refusal {
	rt, ok := httpapi.RouteFor(r.Method, e.RawPath)
	if !ok || rt.Access == httpapi.Public || rt.Access == httpapi.Webhook {
		return nil
	}
	scope := g.OperatorScope
	if scope == "" {
		scope = httpapi.DefaultOperatorScope
	}
	var scopes []string
	if rt.Access == httpapi.Operator {
		scopes = []string{scope}
	}
	err := errors.New("local: no authorizer configured")
	if g.Authorizer != nil {
		var claims *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		if claims, err = g.Authorizer.Authorize(r.Context(), r.Header.Get("Authorization"), scopes); err == nil {
			e.RequestContext.Authorizer = claims
			return nil
		}
	}
	if g.Logger != nil {
		g.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request refused by the authorizer", slog.String("requestId", e.RequestContext.RequestID),
			slog.String("method", rt.Method), slog.String("route", rt.Pattern), slog.String("reason", err.Error()))
	}
	if errors.Is(err, auth.ErrForbidden) {
		return problemRefusal(httpapi.ProblemForbidden, "this route is for operators: the token lacks the operator scope",
			fmt.Sprintf(`Bearer realm="bikerental", error="insufficient_scope", scope=%q`, scope), e.RequestContext.RequestID)
	}
	challenge := `Bearer realm="bikerental"`
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token"`
	}
	return problemRefusal(httpapi.ProblemUnauthenticated, "this route needs a valid bearer token from the service's identity provider in the Authorization header",
		challenge, e.RequestContext.RequestID)
}

func problemRefusal(typ httpapi.ProblemType, detail, challenge, requestID string) *refusal {
	status := typ.Status()
	body, _ := json.Marshal(httpapi.Problem{Type: typ.URI(), Title: http.StatusText(status), Status: status, Detail: detail, RequestID: requestID})
	return &refusal{status: status, challenge: challenge, requestID: requestID, body: body}
}

// blankRefusal is a generic refusal of the gateway's own, of type about:blank.
func blankRefusal(status int, detail, requestID string) *refusal {
	body, _ := json.Marshal(httpapi.Problem{Type: httpapi.AboutBlank.URI(), Title: http.StatusText(status), Status: status, Detail: detail, RequestID: requestID})
	return &refusal{status: status, requestID: requestID, body: body}
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

// serve serves h on l until ctx ends, then shuts down within five seconds. What the
// server itself has to say goes to logger, as warnings, not to the standard logger.
func serve(ctx context.Context, l net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
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
