// Package apicontract is test support: it checks requests and responses of the
// HTTP API against its OpenAPI document, api/openapi.yaml, so that a test of any
// package can assert that what the handler answers is what the document says.
// It is for tests only; no function of the service imports it.
//
// The document is found from the working directory, which is the package's
// directory under go test: Load walks up to the module root, the directory with
// this module's go.mod, and reads api/openapi.yaml there. It is loaded and
// validated once per test binary.
//
// Responses are checked with kin-openapi's openapi3filter: the operation is found
// by a router over the document's paths (its servers are ignored, so concrete
// paths such as /rentals/b1_abc match without a host), and the status must be one
// the operation documents; the Content-Type, the documented headers and the body
// are then validated against it. A path that is no route must be answered 404,
// and a method the path does not allow 405, whose Allow must list exactly the
// methods the document gives the path; both with a body of the document's Problem
// schema and its X-Request-Id header, as the document's description says. They
// belong to no operation, so the document declares no response for them (a
// component no operation refers to is one a linter reports as unused).
package apicontract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// ModulePath is the module whose root holds the document.
const ModulePath = "github.com/bikerental/bikerental"

// DocumentPath is where the document is, relative to the module root.
const DocumentPath = "api/openapi.yaml"

// ErrNoOperation reports a request that the document has no operation for: its
// path is no route, or the path does not allow its method.
var ErrNoOperation = errors.New("apicontract: no operation in the document")

// Contract is the loaded and validated document, with a router over its paths.
// It is safe for concurrent use.
type Contract struct {
	doc    *openapi3.T
	router routers.Router
	file   string
}

// The operator console's files are text the document describes as strings.
func init() {
	for _, typ := range []string{"text/html", "text/css", "text/javascript", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(typ, openapi3filter.PlainBodyDecoder)
	}
}

var loaded = sync.OnceValues(func() (*Contract, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	return LoadFile(filepath.Join(root, filepath.FromSlash(DocumentPath)))
})

// Load returns the contract of api/openapi.yaml, found by walking up from the
// working directory to the module root. The document is read, validated and
// routed once; later calls return the same Contract or the same error.
func Load() (*Contract, error) { return loaded() }

// MustLoad is Load for tests: it fails t when the document cannot be loaded or is
// not valid.
func MustLoad(t testing.TB) *Contract {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// LoadFile loads, validates and routes the OpenAPI document at path. Load is
// what tests want; this is for checking another document.
func LoadFile(path string) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("apicontract: loading %s: %w", path, err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("apicontract: %s is not a valid OpenAPI document: %w", path, err)
	}
	// Route on paths alone: with the document's servers the router would only
	// match requests to those hosts, and tests call the handler with none.
	routed := *doc
	routed.Servers = nil
	router, err := gorillamux.NewRouter(&routed)
	if err != nil {
		return nil, fmt.Errorf("apicontract: routing %s: %w", path, err)
	}
	return &Contract{doc: doc, router: router, file: path}, nil
}

// ModuleRoot returns the directory of this module's go.mod: the first one found
// walking up from the working directory or, failing that, from this source file.
func ModuleRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if isModuleRoot(dir) {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", fmt.Errorf("apicontract: no go.mod of module %s above %s", ModulePath, strings.Join(starts, " or "))
}

// isModuleRoot reports whether dir holds the go.mod of ModulePath.
func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == ModulePath
		}
	}
	return false
}

// File returns the path the document was loaded from.
func (c *Contract) File() string { return c.file }

// Document returns the loaded document. Callers must not change it.
func (c *Contract) Document() *openapi3.T { return c.doc }

// Routes returns every operation of the document as "METHOD /path/{param}",
// sorted.
func (c *Contract) Routes() []string {
	var out []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// methods are the ones FindRoute is asked about to learn what a path allows.
var methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace, http.MethodConnect,
}

// ValidateResponse checks one response of the API to a request for method and
// path (concrete, such as /rentals/b1_abc; query and reqHeader may be nil)
// against the document: the operation must document status, and the response
// must have that status's Content-Type, headers and body. A problem body's
// requestId must also be the X-Request-Id header. The request itself is not
// validated (see ValidateRequest): tests send bad requests on purpose, and no
// credentials are checked. A path the document has no operation for is checked
// against the 404 or 405 that the document's conventions give it (see unrouted).
func (c *Contract) ValidateResponse(method, path string, query url.Values, reqHeader http.Header, status int, respHeader http.Header, body []byte) error {
	req, err := newRequest(method, path, query, reqHeader, nil)
	if err != nil {
		return err
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		route, err = c.unrouted(req, err, status, respHeader)
		if err != nil {
			return err
		}
	}
	header := canonical(respHeader)
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: params,
			Route:      route,
			Options:    requestOptions(),
		},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("%s %s answered %d: %w", method, path, status, err)
	}
	if err := sameRequestID(header, body); err != nil {
		return fmt.Errorf("%s %s answered %d: %w", method, path, status, err)
	}
	return nil
}

// unrouted returns a route whose only response is the one a request with no
// operation gets: 404 for an unknown path, 405 for a method the path does not
// allow, after checking the latter's Allow header. The response is a Problem
// document with X-Request-Id, built from the document's own components.
func (c *Contract) unrouted(req *http.Request, findErr error, status int, respHeader http.Header) (*routers.Route, error) {
	var want int
	switch {
	case errors.Is(findErr, routers.ErrPathNotFound):
		want = http.StatusNotFound
	case errors.Is(findErr, routers.ErrMethodNotAllowed):
		want = http.StatusMethodNotAllowed
	default:
		return nil, fmt.Errorf("%w for %s %s: %v", ErrNoOperation, req.Method, req.URL.Path, findErr)
	}
	if status != want {
		return nil, fmt.Errorf("%w for %s %s (%v): it must be answered %d, not %d", ErrNoOperation, req.Method, req.URL.Path, findErr, want, status)
	}
	if want == http.StatusMethodNotAllowed {
		if err := c.checkAllow(req, canonical(respHeader).Get("Allow")); err != nil {
			return nil, err
		}
	}
	problem, requestID := c.doc.Components.Schemas["Problem"], c.doc.Components.Headers["X-Request-Id"]
	if problem == nil || requestID == nil {
		return nil, errors.New("apicontract: the document has no components.schemas.Problem or components.headers.X-Request-Id")
	}
	resp := openapi3.NewResponse().WithDescription(http.StatusText(want)).
		WithContent(openapi3.Content{"application/problem+json": openapi3.NewMediaType().WithSchemaRef(problem)})
	resp.Headers = openapi3.Headers{"X-Request-Id": requestID}
	op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(want, &openapi3.ResponseRef{Value: resp}))}
	return &routers.Route{Spec: c.doc, Path: req.URL.Path, PathItem: &openapi3.PathItem{}, Method: req.Method, Operation: op}, nil
}

// checkAllow reports whether allow lists exactly the methods the document gives
// the request's path.
func (c *Contract) checkAllow(req *http.Request, allow string) error {
	var documented []string
	for _, m := range methods {
		probe := req.Clone(req.Context())
		probe.Method = m
		if _, _, err := c.router.FindRoute(probe); err == nil {
			documented = append(documented, m)
		}
	}
	var got []string
	for m := range strings.SplitSeq(allow, ",") {
		if m = strings.TrimSpace(m); m != "" {
			got = append(got, m)
		}
	}
	slices.Sort(got)
	slices.Sort(documented)
	if !slices.Equal(got, documented) {
		return fmt.Errorf("%s %s answered 405 with Allow %q; the document allows %s", req.Method, req.URL.Path, allow, strings.Join(documented, ", "))
	}
	return nil
}

// sameRequestID checks that a problem body's requestId is the X-Request-Id header.
func sameRequestID(header http.Header, body []byte) error {
	mediaType, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mediaType != "application/problem+json" {
		return nil
	}
	var p struct {
		RequestID string `json:"requestId"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("problem body: %w", err)
	}
	if id := header.Get("X-Request-Id"); p.RequestID != id {
		return fmt.Errorf("problem requestId %q is not the X-Request-Id header %q", p.RequestID, id)
	}
	return nil
}

// ValidateRequest checks a request against the document: its operation must exist,
// and its path, query and header parameters and its body must be as the operation
// describes. Credentials are not checked: the security requirements are taken as
// met.
func (c *Contract) ValidateRequest(method, path string, query url.Values, header http.Header, body []byte) error {
	req, err := newRequest(method, path, query, header, body)
	if err != nil {
		return err
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%w for %s %s: %v", ErrNoOperation, method, path, err)
	}
	input := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: requestOptions()}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// ValidateEvent is ValidateResponse for the handler's own types: the API Gateway
// HTTP API (payload format 2.0) request and the response the handler gave it.
func (c *Contract) ValidateEvent(req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) error {
	method, path, query, reqHeader, err := fromEvent(req)
	if err != nil {
		return err
	}
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Add(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			return fmt.Errorf("apicontract: response body is not valid base64: %w", err)
		}
	}
	return c.ValidateResponse(method, path, query, reqHeader, resp.StatusCode, header, body)
}

// ValidateRequestEvent is ValidateRequest for an API Gateway HTTP API (payload
// format 2.0) request.
func (c *Contract) ValidateRequestEvent(req events.APIGatewayV2HTTPRequest) error {
	method, path, query, header, err := fromEvent(req)
	if err != nil {
		return err
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return fmt.Errorf("apicontract: request body is not valid base64: %w", err)
		}
	}
	return c.ValidateRequest(method, path, query, header, body)
}

func fromEvent(req events.APIGatewayV2HTTPRequest) (method, path string, query url.Values, header http.Header, err error) {
	method = req.RequestContext.HTTP.Method
	path = req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	if req.RawQueryString != "" {
		if query, err = url.ParseQuery(req.RawQueryString); err != nil {
			return "", "", nil, nil, fmt.Errorf("apicontract: request query: %w", err)
		}
	} else if len(req.QueryStringParameters) > 0 {
		query = url.Values{}
		for k, v := range req.QueryStringParameters {
			// Payload 2.0 joins a repeated parameter's values with commas.
			query[k] = strings.Split(v, ",")
		}
	}
	header = http.Header{}
	for k, v := range req.Headers {
		header.Add(k, v)
	}
	return method, path, query, header, nil
}

func requestOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
		MultiError:          true,
		SkipSettingDefaults: true,
	}
}

// newRequest builds the http.Request the router and validators look at. The path
// is trimmed of outer slashes as the handler does before matching.
func newRequest(method, path string, query url.Values, header http.Header, body []byte) (*http.Request, error) {
	if method == "" {
		return nil, errors.New("apicontract: no method")
	}
	p := "/" + strings.Trim(path, "/")
	u, err := url.Parse(p)
	if err != nil || u.Path == "" || u.RawQuery != "" || u.Fragment != "" || u.Host != "" {
		u = &url.URL{Path: p} // as the handler sees it: the path, byte for byte
	}
	u.RawQuery = query.Encode()
	req := (&http.Request{
		Method:        method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        canonical(header),
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          "apicontract.invalid",
		RequestURI:    u.RequestURI(),
	}).WithContext(context.Background())
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	return req, nil
}

// canonical returns h with canonical keys ("WWW-Authenticate" as
// "Www-Authenticate"), as http.Header.Get expects them, whatever map it was
// written as.
func canonical(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		key := http.CanonicalHeaderKey(k)
		out[key] = append(out[key], vs...)
	}
	return out
}
