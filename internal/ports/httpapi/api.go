// Package httpapi is the service's HTTP API as an API Gateway HTTP API (payload format
// 2.0) handler: it validates requests, turns them into commands and queries, and
// answers with JSON, or with application/problem+json (RFC 9457) when it refuses.
package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// MaxBodyBytes is the largest request body accepted; larger ones get 413.
const MaxBodyBytes = 16 * 1024

// MaxWebhookBodyBytes is the largest webhook body accepted: a provider's event
// carries the whole object it is about.
const MaxWebhookBodyBytes = 256 * 1024

// Canceller sends CancelRentalPayment to the rental-payment process;
// *process.Process is one.
type Canceller interface {
	CancelRentalPayment(ctx context.Context, rentalID string, meta command.Meta) (process.Outcome, error)
}

// WebhookParser verifies a payment provider's webhook and says what it reports
// (the adapters in internal/adapters/provider).
type WebhookParser interface {
	ParseWebhook(header func(string) string, body []byte, now time.Time) (payment.ProviderEvent, error)
}

// Config is what the API needs.
type Config struct {
	Commands *command.Handler
	// Webhook verifies the generic provider's Payment-Signature, for
	// POST /webhooks/payments. Required.
	Webhook *webhook.Verifier
	// Stripe verifies and reads Stripe's webhooks, for POST /webhooks/stripe; while
	// nil that route answers 501.
	Stripe WebhookParser
	// Canceller handles cancel-payment; while nil that route answers 501.
	Canceller Canceller
	// Deadlines reads the to-do list, for GET /payments/pending, GET /deadlines,
	// GET /processes/stuck and GET /refunds/owed; while nil they answer 501.
	Deadlines *deadlinekinds.Listing
	Logger    *slog.Logger
	// Now is the clock the webhook signatures are checked against.
	Now func() time.Time
	// OperatorScope is the token scope that opens operator routes
	// (DefaultOperatorScope if empty).
	OperatorScope string
	// Console says how the operator console signs in (GET /console/config).
	Console ConsoleSignIn
	// ConsoleClientID and OperatorGroup, when both set, hold the console's tokens
	// to a group: a token the app client ConsoleClientID issued opens operator
	// routes only if its cognito:groups claim names OperatorGroup as well as the
	// scope, for a user pool that signs renters and operators in alike.
	ConsoleClientID string
	OperatorGroup   string
}

// API handles HTTP API requests. It is safe for concurrent use.
type API struct {
	cfg    Config
	routes []route
	// mux finds a request's route by the routes' patterns: the standard library's
	// http.ServeMux, behind API Gateway's event (find).
	mux *http.ServeMux
	// csp is the console's Content-Security-Policy.
	csp string
	// toDo are the kinds of cfg.Deadlines GET /deadlines lists (toDoKinds), or
	// toDoErr why there are none.
	toDo    deadlines.Kinds
	toDoErr error
}

// New returns the API for cfg.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OperatorScope == "" {
		cfg.OperatorScope = DefaultOperatorScope
	}
	a := &API{cfg: cfg, mux: http.NewServeMux(), csp: ConsoleCSP(cfg.Console)}
	if cfg.Deadlines != nil {
		a.toDo, a.toDoErr = toDoKinds(cfg.Deadlines)
	}
	a.routes = a.table()
	for i := range a.routes {
		rt := &a.routes[i]
		var names []string
		for _, part := range strings.Split(rt.Pattern, "/") {
			if name, ok := strings.CutPrefix(part, "{"); ok {
				names = append(names, strings.TrimSuffix(name, "}"))
			}
		}
		a.mux.Handle(rt.Method+" "+rt.Pattern, found{rt, names})
	}
	return a
}

// Access says who may call a route. On AWS the gateway enforces it before the
// function runs (template.yaml declares the same per route, checked by a test); the
// handler enforces it again from the claims the gateway passes.
type Access string

// Who may call a route.
const (
	// Public routes answer anyone, and their answers name nobody.
	Public Access = "public"
	// Webhook routes are the payment provider's, authenticated by their signature.
	Webhook Access = "webhook"
	// Renter routes need a valid token; its subject is the renter. Operators' tokens
	// are valid too.
	Renter Access = "renter"
	// Operator routes need a valid token that carries the operator scope.
	Operator Access = "operator"
)

// Route is one route of the API and who may call it.
type Route struct {
	Method  string
	Pattern string
	Access  Access
}

type route struct {
	Route
	handle func(*request) response
}

func (a *API) table() []route {
	return []route{
		{Route{http.MethodPut, "/bikes/{bikeId}", Operator}, a.registerBike},
		{Route{http.MethodGet, "/bikes/{bikeId}", Public}, a.getBike},
		{Route{http.MethodPost, "/bikes/{bikeId}/return", Operator}, a.returnBike},
		{Route{http.MethodPost, "/rentals", Renter}, a.requestBike},
		{Route{http.MethodGet, "/rentals", Renter}, a.listRentals},
		{Route{http.MethodGet, "/rentals/{rentalId}", Renter}, a.getRental},
		{Route{http.MethodPost, "/rentals/{rentalId}/cancel-payment", Operator}, a.cancelPayment},
		{Route{http.MethodPost, "/rentals/{rentalId}/refund-made-by-hand", Operator}, a.refundMadeByHand},
		{Route{http.MethodPost, "/webhooks/payments", Webhook}, a.genericWebhook},
		{Route{http.MethodPost, "/webhooks/stripe", Webhook}, a.stripeWebhook},
		{Route{http.MethodGet, "/payments/pending", Operator}, a.outstandingPayments},
		{Route{http.MethodGet, "/deadlines", Operator}, a.deadlines},
		{Route{http.MethodGet, "/processes/stuck", Operator}, a.stuckRentals},
		{Route{http.MethodGet, "/refunds/owed", Operator}, a.refundsOwed},
		{Route{http.MethodGet, ConsolePath, Public}, a.consoleIndex},
		{Route{http.MethodGet, ConsolePath + "/config", Public}, a.consoleConfig},
		{Route{http.MethodGet, ConsolePath + "/{asset}", Public}, a.consoleAsset},
	}
}

// Routes lists every route the API serves; template.yaml must declare the same.
func Routes() []Route {
	var out []Route
	for _, r := range (&API{}).table() {
		out = append(out, r.Route)
	}
	return out
}

// routing is the API's route table without handlers, for RouteFor.
var routing = New(Config{})

// RouteFor returns the route that serves method on path, as the handler would find
// it, and false when none does. It lets the local gateway authorize a request by its
// route exactly as API Gateway does on AWS.
func RouteFor(method, path string) (Route, bool) {
	rt, _, _ := routing.find(method, path)
	if rt == nil {
		return Route{}, false
	}
	return rt.Route, true
}

// request is one API call being handled.
type request struct {
	ctx       context.Context
	raw       *events.APIGatewayV2HTTPRequest
	params    []pathParam
	requestID string
	body      []byte
	caller    caller
}

// param returns the value of the path parameter name, "" if the route has none.
func (r *request) param(name string) string {
	for _, p := range r.params {
		if p.name == name {
			return p.value
		}
	}
	return ""
}

func (r *request) header(name string) string {
	for k, v := range r.raw.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// response is what a route answers; toEvent turns it into API Gateway's shape.
type response struct {
	status  int
	headers map[string]string
	body    []byte
	problem *Problem // sent as the body, with the request id, when set
	err     error    // logged, never sent
	// logAttrs are logged with the request's line, never sent.
	logAttrs []slog.Attr
}

// Handle answers one HTTP API request. It never returns an error: every failure,
// a panic included, is an HTTP response carrying the request id, so API Gateway
// never answers with a bare 502.
func (a *API) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, _ error) {
	start := time.Now()
	r := &request{ctx: ctx, raw: &req, requestID: req.RequestContext.RequestID}
	if r.requestID == "" {
		r.requestID = ident.UUID()
	}
	method := req.RequestContext.HTTP.Method
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	pattern := "unmatched"
	var out response
	defer func() {
		if p := recover(); p != nil {
			out = internalError(fmt.Errorf("panic: %v", p))
			resp = out.toEvent(r.requestID)
		}
		a.log(r, method, pattern, out, time.Since(start))
	}()
	out = a.dispatch(r, method, path, &pattern)
	return out.toEvent(r.requestID), nil
}

func (a *API) dispatch(r *request, method, path string, pattern *string) response {
	rt, params, allowed := a.find(method, path)
	if rt != nil {
		*pattern = rt.Pattern
		r.params = params
		if refused := a.authorize(r, rt.Access); refused != nil {
			return *refused
		}
		limit := MaxBodyBytes
		if rt.Access == Webhook {
			limit = MaxWebhookBodyBytes
		}
		body, failure := readBody(r.raw, limit)
		if failure != nil {
			return *failure
		}
		r.body = body
		return rt.handle(r)
	}
	if len(allowed) > 0 {
		resp := blank(http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", method, path))
		resp.headers["Allow"] = strings.Join(allowed, ", ")
		return resp
	}
	return blank(http.StatusNotFound, fmt.Sprintf("no route %s %s", method, path))
}

// find returns the route for method and path with its path parameters or, when
// there is none, the methods the path allows (none for an unknown path), in the
// route table's order. The mux matches: a literal segment beats a parameter
// ("/payments/pending" is no bike's id), and a GET pattern answers only GET here, as
// API Gateway's routes do. Outer slashes are trimmed, and an empty segment is a
// parameter's empty value (the handler then refuses it), as before the mux: the mux
// would clean the path instead, so an empty segment reaches it as emptySegment.
func (a *API) find(method, path string) (*route, []pathParam, []string) {
	trimmed := strings.Trim(path, "/")
	for strings.Contains(trimmed, "//") {
		trimmed = strings.ReplaceAll(trimmed, "//", "/"+emptySegment+"/")
	}
	if rt, params := a.match(method, trimmed); rt != nil && rt.Method == method {
		return rt, params, nil
	}
	// The methods of the routes whose pattern the path matches, in the table's
	// order: the mux is asked once per method.
	byMethod := map[string]*route{}
	var allowed []string
	for i := range a.routes {
		m := a.routes[i].Method
		rt, asked := byMethod[m]
		if !asked {
			rt, _ = a.match(m, trimmed)
			byMethod[m] = rt
		}
		if rt == &a.routes[i] {
			allowed = append(allowed, m)
		}
	}
	return nil, nil, allowed
}

// emptySegment stands for an empty path segment while the mux matches: a NUL,
// which no path API Gateway passes holds (its raw paths are percent-encoded).
const emptySegment = "\x00"

// match asks the mux for the route of method on the trimmed path.
func (a *API) match(method, trimmed string) (*route, []pathParam) {
	req := &http.Request{Method: method, URL: &url.URL{Path: "/" + trimmed}, Host: "api"}
	var m matched
	a.mux.ServeHTTP(&m, req)
	for i := range m.params {
		if m.params[i].value == emptySegment {
			m.params[i].value = ""
		}
	}
	return m.rt, m.params
}

// found is what the mux serves for a route: it hands the route and its path values
// back to match, through the response writer.
type found struct {
	rt    *route
	names []string
}

func (f found) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m, ok := w.(*matched)
	if !ok {
		return
	}
	m.rt = f.rt
	for _, n := range f.names {
		m.params = append(m.params, pathParam{n, r.PathValue(n)})
	}
}

// matched is the response writer match gives the mux: it keeps the route found, and
// discards what the mux's own 404 and 405 handlers write.
type matched struct {
	rt     *route
	params []pathParam
	header http.Header
}

func (m *matched) Header() http.Header {
	if m.header == nil {
		m.header = http.Header{}
	}
	return m.header
}
func (m *matched) Write(b []byte) (int, error) { return len(b), nil }
func (m *matched) WriteHeader(int)             {}

// pathParam is the value of one of a route's parameters in a request's path.
type pathParam struct{ name, value string }

func readBody(req *events.APIGatewayV2HTTPRequest, limit int) ([]byte, *response) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			p := blank(http.StatusBadRequest, "the request body is not valid base64")
			return nil, &p
		}
		body = decoded
	}
	if len(body) > limit {
		p := blank(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is %d bytes, at most %d are accepted", len(body), limit))
		return nil, &p
	}
	return body, nil
}

func (a *API) log(r *request, method, pattern string, out response, took time.Duration) {
	if len(method) > 16 { // the client chose it: keep the log line bounded
		method = method[:16] + "..."
	}
	attrs := []slog.Attr{
		slog.String("requestId", r.requestID),
		slog.String("method", method),
		slog.String("route", pattern),
		slog.Int("status", out.status),
		slog.Float64("durationMs", float64(took.Microseconds())/1000),
	}
	level := slog.LevelInfo
	if out.status >= 500 {
		level = slog.LevelError
	}
	if out.err != nil {
		attrs = append(attrs, slog.String("error", out.err.Error()))
	}
	attrs = append(attrs, out.logAttrs...)
	a.cfg.Logger.LogAttrs(r.ctx, level, "request", attrs...)
}

func (o response) toEvent(requestID string) events.APIGatewayV2HTTPResponse {
	// Every response gets its own headers map when it is made, so it is completed
	// here rather than copied.
	headers := o.headers
	if headers == nil {
		headers = make(map[string]string, 1)
	}
	if _, ok := headers["X-Request-Id"]; !ok {
		headers["X-Request-Id"] = requestID
	}
	body := o.body
	if o.problem != nil {
		p := *o.problem
		p.RequestID = requestID
		body, _ = json.Marshal(p) // a Problem always marshals
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: o.status, Headers: headers, Body: string(body)}
}
