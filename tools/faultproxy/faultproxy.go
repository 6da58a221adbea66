// Package faultproxy is a loopback HTTP proxy that injects faults between AWS SDK
// clients and the AWS endpoint they talk to (the local emulator, usually), so that
// the service can be watched while DynamoDB throttles, fails, slows down or drops
// connections.
//
// On a configurable share of the requests it forwards, the proxy injects one fault,
// chosen at random among the configured kinds:
//
//   - Throttle: 400 with DynamoDB's ThrottlingException (the x-amzn-ErrorType header
//     and the JSON __type the AWS SDK reads), which the SDK's standard retryer treats
//     as a retryable throttling error;
//   - ServerError: 500 with DynamoDB's InternalServerError, retryable too;
//   - Slow: the request waits 100 to 300ms, then is forwarded;
//   - DropBefore: the connection is closed without an answer and the request is not
//     forwarded, so nothing was written;
//   - DropAfter: the request is forwarded and its answer thrown away, then the
//     connection is closed without an answer: the write may have happened, and the
//     client cannot tell (the ambiguous case).
//
// The SDK reports both drops as a *smithyhttp.RequestSendError, a connection error
// it retries. Choices come from a generator seeded by Config.Seed, so that a run with
// one request at a time is repeatable.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is one kind of fault.
type Kind string

// The kinds of fault the proxy injects.
const (
	// Throttle answers 400 with DynamoDB's ThrottlingException without forwarding.
	Throttle Kind = "throttle"
	// ServerError answers 500 with DynamoDB's InternalServerError without forwarding.
	ServerError Kind = "server-error"
	// Slow delays the request by SlowMin to SlowMax, then forwards it.
	Slow Kind = "slow"
	// DropBefore closes the connection without forwarding the request or answering.
	DropBefore Kind = "drop-before"
	// DropAfter forwards the request, discards the answer and closes the connection
	// without answering.
	DropAfter Kind = "drop-after"
)

// The bounds of the delay of a Slow fault.
const (
	SlowMin = 100 * time.Millisecond
	SlowMax = 300 * time.Millisecond
)

// AllKinds returns every kind of fault, in a fixed order.
func AllKinds() []Kind { return []Kind{Throttle, ServerError, Slow, DropBefore, DropAfter} }

// ParseKinds parses a comma-separated list of kinds, such as "throttle,drop-after";
// "all" or an empty string means every kind.
func ParseKinds(s string) ([]Kind, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return AllKinds(), nil
	}
	var kinds []Kind
	for part := range strings.SplitSeq(s, ",") {
		k := Kind(strings.TrimSpace(part))
		if !k.valid() {
			return nil, fmt.Errorf("faultproxy: unknown fault kind %q (want one of %v, or all)", part, AllKinds())
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

func (k Kind) valid() bool {
	for _, known := range AllKinds() {
		if k == known {
			return true
		}
	}
	return false
}

// The error bodies, as DynamoDB sends them (awsJson1_0).
const (
	throttleBody    = `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`
	serverErrorBody = `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error (injected by faultproxy)."}`
)

// Config says which requests get a fault and which faults they get.
type Config struct {
	// Rate is the share of eligible requests that get a fault, from 0 (none) to 1
	// (every one).
	Rate float64
	// Seed seeds the choice of the requests and of their faults.
	Seed int64
	// Kinds are the faults to choose from, with equal chances; empty means AllKinds.
	Kinds []Kind
	// Eligible, when set, selects the requests that may get a fault; the others are
	// always forwarded untouched (and counted in Stats.Requests). DynamoDBOnly is one.
	Eligible func(*http.Request) bool
	// SpareFinalAttempt forwards untouched every request that the AWS SDK marks as
	// its last attempt (the amz-sdk-request header's attempt equals its max), so that
	// every fault is transient: one that the SDK's retries overcome, unless the
	// retryer's token bucket runs dry. Off, a request may meet a fault on every
	// attempt and fail after the SDK's last retry.
	SpareFinalAttempt bool
}

// DynamoDBOnly reports whether r is a call of the DynamoDB API (X-Amz-Target
// "DynamoDB_20120810.*"), as opposed to DynamoDB Streams, EventBridge Scheduler or
// the emulator's own routes. Use it as Config.Eligible to put faults only where the
// service's own code calls AWS: on AWS, Lambda reads the streams and the scheduler
// fires the sweep, while locally the runner's stand-ins for them do.
func DynamoDBOnly(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
}

// Stats counts what the proxy did.
type Stats struct {
	// Requests is every request the proxy received.
	Requests int64
	// Forwarded is the requests that reached the upstream, DropAfter and Slow
	// faults included.
	Forwarded int64
	// Spared is the requests that were chosen for a fault but passed untouched
	// because the SDK marked them as its last attempt (Config.SpareFinalAttempt).
	Spared int64
	// Faults counts the faults injected, by kind.
	Faults map[Kind]int64
	// Operations counts the requests by AWS operation, from the X-Amz-Target
	// header ("DynamoDB_20120810.Query" counts as "DynamoDB.Query"), or by method
	// and path for requests without one ("GET /schedules/x").
	Operations map[string]int64
	// Conflicts counts, by operation, the upstream answers that refused a write for
	// its condition (ConditionalCheckFailedException, TransactionCanceledException):
	// on PutItem and TransactWriteItems these are the event store's concurrency
	// conflicts, which the service retries from a fresh read.
	Conflicts map[string]int64
}

// Faulted returns how many faults were injected, of every kind.
func (s Stats) Faulted() int64 {
	var n int64
	for _, c := range s.Faults {
		n += c
	}
	return n
}

// String summarises the counts on one line.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests, %d forwarded, %d faults", s.Requests, s.Forwarded, s.Faulted())
	sep := " ("
	for _, k := range AllKinds() {
		if n := s.Faults[k]; n > 0 {
			fmt.Fprintf(&b, "%s%s %d", sep, k, n)
			sep = ", "
		}
	}
	if sep != " (" {
		b.WriteString(")")
	}
	if s.Spared > 0 {
		fmt.Fprintf(&b, ", %d spared as last attempts", s.Spared)
	}
	fmt.Fprintf(&b, "; %d event-store conflicts", s.StoreConflicts())
	return b.String()
}

// StoreConflicts returns the event store's concurrency conflicts: failed conditions
// on PutItem and TransactWriteItems.
func (s Stats) StoreConflicts() int64 {
	return s.Conflicts["DynamoDB.PutItem"] + s.Conflicts["DynamoDB.TransactWriteItems"]
}

// Proxy is an http.Handler that forwards to one upstream and injects faults. It is
// safe for concurrent use.
type Proxy struct {
	cfg     Config
	kinds   []Kind
	forward *httputil.ReverseProxy

	mu    sync.Mutex
	rate  float64 // cfg.Rate until SetRate changes it
	rng   *rand.Rand
	stats Stats
}

// SetRate changes the share of eligible requests that get a fault, from the next
// request on, so that a test can fault one step of a scenario and not the others.
func (p *Proxy) SetRate(rate float64) error {
	if rate < 0 || rate > 1 {
		return fmt.Errorf("faultproxy: rate %v is not between 0 and 1", rate)
	}
	p.mu.Lock()
	p.rate = rate
	p.mu.Unlock()
	return nil
}

// New returns a proxy to upstream (a base URL such as "http://127.0.0.1:4566").
func New(upstream string, cfg Config) (*Proxy, error) {
	target, err := url.Parse(upstream)
	if err != nil || target.Scheme == "" || target.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream %q is not an absolute URL", upstream)
	}
	if cfg.Rate < 0 || cfg.Rate > 1 {
		return nil, fmt.Errorf("faultproxy: rate %v is not between 0 and 1", cfg.Rate)
	}
	kinds := cfg.Kinds
	if len(kinds) == 0 {
		kinds = AllKinds()
	}
	for _, k := range kinds {
		if !k.valid() {
			return nil, fmt.Errorf("faultproxy: unknown fault kind %q", k)
		}
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{
		Proxy:               nil, // loopback: never through an HTTP proxy of the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	rp.ErrorLog = log.New(io.Discard, "", 0)
	seed := uint64(cfg.Seed)
	p := &Proxy{
		cfg:     cfg,
		rate:    cfg.Rate,
		kinds:   append([]Kind(nil), kinds...),
		forward: rp,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		stats:   Stats{Faults: map[Kind]int64{}, Operations: map[string]int64{}, Conflicts: map[string]int64{}},
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		errorType := resp.Header.Get("X-Amzn-Errortype")
		if strings.Contains(errorType, "ConditionalCheckFailed") || strings.Contains(errorType, "TransactionCanceled") {
			p.mu.Lock()
			p.stats.Conflicts[operation(resp.Request)]++
			p.mu.Unlock()
		}
		return nil
	}
	return p, nil
}

// Stats returns a copy of the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Faults = maps.Clone(p.stats.Faults)
	s.Operations = maps.Clone(p.stats.Operations)
	s.Conflicts = maps.Clone(p.stats.Conflicts)
	return s
}

// operation names the AWS operation r calls, for Stats.Operations.
func operation(r *http.Request) string {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		service, op, _ := strings.Cut(target, ".")
		service, _, _ = strings.Cut(service, "_")
		return service + "." + op
	}
	path := r.URL.Path
	if i := strings.IndexByte(strings.TrimPrefix(path, "/"), '/'); i >= 0 {
		path = path[:i+1] + "/…" // the first segment only: no resource names
	}
	return r.Method + " " + path
}

// choose counts the request and decides its fault: "" for none. It also returns
// the delay of a Slow fault.
func (p *Proxy) choose(r *http.Request) (Kind, time.Duration) {
	eligible := p.cfg.Eligible == nil || p.cfg.Eligible(r)
	final := p.cfg.SpareFinalAttempt && finalAttempt(r.Header.Get("amz-sdk-request"))
	op := operation(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	p.stats.Operations[op]++
	if !eligible || p.rate <= 0 || p.rng.Float64() >= p.rate {
		return "", 0
	}
	kind := p.kinds[p.rng.IntN(len(p.kinds))]
	delay := SlowMin + time.Duration(p.rng.Int64N(int64(SlowMax-SlowMin)+1))
	if final {
		p.stats.Spared++
		return "", 0
	}
	p.stats.Faults[kind]++
	return kind, delay
}

// finalAttempt reports whether an amz-sdk-request header value ("attempt=2; max=4")
// marks the SDK's last attempt.
func finalAttempt(header string) bool {
	attempt, maxAttempts := -1, -1
	for part := range strings.SplitSeq(header, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch k {
		case "attempt":
			attempt = n
		case "max":
			maxAttempts = n
		}
	}
	return attempt > 0 && maxAttempts > 0 && attempt >= maxAttempts
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, delay := p.choose(r)
	switch kind {
	case Throttle:
		discardBody(r)
		writeError(w, http.StatusBadRequest, "ThrottlingException", throttleBody)
	case ServerError:
		discardBody(r)
		writeError(w, http.StatusInternalServerError, "InternalServerError", serverErrorBody)
	case Slow:
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		p.pass(w, r)
	case DropBefore:
		discardBody(r)
		drop(w)
	case DropAfter:
		p.pass(sink{header: http.Header{}}, r)
		drop(w)
	default:
		p.pass(w, r)
	}
}

// forwardTimeout bounds a forwarded request.
const forwardTimeout = 60 * time.Second

// pass forwards r to the upstream. The forwarded request is not cancelled when the
// client goes away, as a request that reached DynamoDB is carried out whether or not
// its client still waits for the answer.
func (p *Proxy) pass(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.stats.Forwarded++
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), forwardTimeout)
	defer cancel()
	p.forward.ServeHTTP(w, r.WithContext(ctx))
}

func discardBody(r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, 32<<20))
}

func writeError(w http.ResponseWriter, status int, errorType, body string) {
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-ErrorType", errorType)
	h.Set("X-Amzn-RequestId", "faultproxy-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)) // as DynamoDB sends, and its SDK checks
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// drop closes the client's connection without a response: by hijacking it where the
// server allows (HTTP/1.x), by aborting the handler otherwise.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0) // reset, as a load balancer that gives up does
	}
	conn.Close()
}

// sink is a ResponseWriter that throws the response away.
type sink struct{ header http.Header }

func (s sink) Header() http.Header         { return s.header }
func (s sink) Write(b []byte) (int, error) { return len(b), nil }
func (s sink) WriteHeader(int)             {}

// Server is a Proxy serving on a loopback port of its own.
type Server struct {
	*Proxy
	// URL is the proxy's base URL, e.g. "http://127.0.0.1:41234": point the AWS
	// clients there.
	URL string

	srv  *http.Server
	done chan struct{}
}

// Start serves a new Proxy to upstream on 127.0.0.1 on a free port. Stop it with
// Close.
func Start(upstream string, cfg Config) (*Server, error) {
	p, err := New(upstream, cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	s := &Server{
		Proxy: p,
		URL:   "http://" + l.Addr().String(),
		srv: &http.Server{
			Handler:           p,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(l)
	}()
	return s, nil
}

// Close stops the server and closes its connections, waiting at most a few seconds
// for requests being forwarded. It is safe to call more than once.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
