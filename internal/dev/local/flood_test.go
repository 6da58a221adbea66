package local_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/wiring"
)

// The floods: each kind of route, without credentials, at more than the rates
// measured against today's throttling (60 to 70 a second), for a bounded time.
const (
	floodRate     = 80 // requests a second, per flood
	floodFor      = 4 * time.Second
	callsPerFlood = 16 // valid calls of each kind during the floods: with the one before, under the edge's 20 a minute per address on GET /deadlines
)

// clientFrom returns an HTTP client whose connections leave from the loopback
// address ip: locally, a source of its own, as the edge's per-address rule sees it.
func clientFrom(ip string) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 64}}
}

// call is one valid caller's request: built anew each time (a webhook is signed
// at the time it is sent).
type call struct {
	name string
	req  func() *http.Request
}

func (c call) status(t *testing.T, client *http.Client) int {
	t.Helper()
	resp, err := client.Do(c.req())
	if err != nil {
		t.Errorf("%s: %v", c.name, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestFloodsWithoutCredentialsKeepNoValidCallerOut runs the local stack as make run
// does (the template's throttling, and its edge in front) and floods, from another
// address, an operator route, a renter route and the generic webhook with requests
// that carry no token or signature. Meanwhile an operator, a renter and the provider
// call the same routes with their credentials: every one is answered as it is
// without a flood, none 429. The floods themselves are refused (401) before they
// can spend the routes' limits.
func TestFloodsWithoutCredentialsKeepNoValidCallerOut(t *testing.T) {
	base := floodStack(t, true)
	ctx := context.Background()
	tokens := &auth.Tokens{BaseURL: base}
	operator, err := tokens.Operator(ctx, "flood-operator")
	if err != nil {
		t.Fatal(err)
	}
	renter, err := tokens.Renter(ctx, "flood-renter")
	if err != nil {
		t.Fatal(err)
	}
	const hook = `{"id":"evt-flood","type":"payment.failed","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA","reason":"card declined"}`
	request := func(method, path, body string, header ...string) func() *http.Request {
		return func() *http.Request {
			req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			return req
		}
	}
	signed := func() *http.Request {
		req := request("POST", "/webhooks/payments", hook)()
		req.Header.Set(webhook.Header, webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(hook), time.Now()))
		return req
	}
	valid := []call{
		{"an operator's GET /deadlines", request("GET", "/deadlines", "", "Authorization", auth.Bearer(operator))},
		{"a renter's POST /rentals", request("POST", "/rentals", `{"bikeId":"no-such-bike"}`, "Authorization", auth.Bearer(renter))},
		{"a signed webhook", signed},
	}
	floods := []call{
		{"GET /deadlines without a token", request("GET", "/deadlines", "")},
		{"POST /rentals without a token", request("POST", "/rentals", `{"bikeId":"no-such-bike"}`)},
		{"POST /webhooks/payments unsigned", request("POST", "/webhooks/payments", "{}")},
	}

	honest := clientFrom("127.0.0.1")
	want := map[string]int{}
	for _, c := range valid {
		want[c.name] = c.status(t, honest)
		if want[c.name] == http.StatusTooManyRequests || want[c.name] == 0 {
			t.Fatalf("%s before any flood: %d", c.name, want[c.name])
		}
	}

	flooder := clientFrom("127.0.0.2")
	var wg sync.WaitGroup
	sent := make([]atomic.Int64, len(floods))
	refused := make([]atomic.Int64, len(floods))
	stop := time.Now().Add(floodFor)
	for i, f := range floods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			flood(t, flooder, f, stop, &sent[i], &refused[i])
		}()
	}
	got := map[string][]int{}
	for range callsPerFlood {
		time.Sleep(floodFor / callsPerFlood) // spreading the valid calls over the flood, not waiting for an outcome
		for _, c := range valid {
			got[c.name] = append(got[c.name], c.status(t, honest))
		}
	}
	wg.Wait()

	for i, f := range floods {
		rate := float64(sent[i].Load()) / floodFor.Seconds()
		if rate < 0.75*floodRate {
			t.Errorf("%s: the flood reached %.0f requests a second, want about %d", f.name, rate, floodRate)
		}
		if refused[i].Load() != sent[i].Load() {
			t.Errorf("%s: %d of %d were refused 401", f.name, refused[i].Load(), sent[i].Load())
		}
	}
	for _, c := range valid {
		for n, status := range got[c.name] {
			if status != want[c.name] {
				t.Errorf("%s during the floods, call %d: %d, want %d as without a flood", c.name, n+1, status, want[c.name])
			}
		}
	}
}

// flood sends f at floodRate until stop, counting what it sent and what was refused
// with 401.
func flood(t *testing.T, client *http.Client, f call, stop time.Time, sent, refused *atomic.Int64) {
	tick := time.NewTicker(time.Second / floodRate)
	defer tick.Stop()
	var inflight sync.WaitGroup
	defer inflight.Wait()
	slots := make(chan struct{}, 32)
	for now := range tick.C {
		if now.After(stop) {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			continue // as many in flight as the machine can answer: the rate check reports a shortfall
		}
		sent.Add(1)
		inflight.Add(1)
		go func() {
			defer func() { <-slots; inflight.Done() }()
			resp, err := client.Do(f.req())
			if err != nil {
				t.Errorf("%s: %v", f.name, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				refused.Add(1)
			}
		}()
	}
}

// floodStack runs the local stack on fresh tables, throttled as make run runs it,
// with the edge in front when edge is true, until the test ends; it returns the
// API's base URL.
func floodStack(t *testing.T, edge bool) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := emulatortest.Config(t)
	env := map[string]string{wiring.EnvEventsTable: emulatortest.TableName(t, "events"), wiring.EnvDeadlinesTable: emulatortest.TableName(t, "pending"),
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret}
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: func(k string) string { return env[k] },
		SweepInterval: time.Hour, Logger: slog.New(slog.DiscardHandler), Throttle: true, Edge: edge})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, ctx, cancel, up)
}
