package local_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/webhook"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/local"
)

// The floods with forged credentials: each from its own address at forgedRate, under
// the edge's PerSourceRate (1,200 a minute) and over what the routes can take from
// them (an operator list's 5 a second; a webhook's 25, from two addresses).
const (
	forgedRate = 20 // requests a second, per address
	forgedFor  = 12 * time.Second
	// settle is how long after the edge first refuses a flood its route's bucket is
	// given to hold a token again (a fifth of a second at 5 a second).
	settle = time.Second
)

// forgedFlood is one address's flood: what it sent, and when and how often the edge
// refused it (429 with Retry-After; the route's own 429 has none).
type forgedFlood struct {
	name, addr, route string
	limit             int // the per-address limit of the edge's rule on its route
	req               func() *http.Request

	mu         sync.Mutex
	sent, edge int
	firstEdge  time.Time
}

func (f *forgedFlood) run(t *testing.T, stop time.Time) {
	client := clientFrom(f.addr)
	tick := time.NewTicker(time.Second / forgedRate)
	defer tick.Stop()
	for now := range tick.C {
		if now.After(stop) {
			return
		}
		resp, err := client.Do(f.req())
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		f.mu.Lock()
		f.sent++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
			if f.edge == 0 {
				f.firstEdge = time.Now()
			}
			f.edge++
		}
		f.mu.Unlock()
	}
}

// honestCall is one valid call made during the floods: when it started, and its status.
type honestCall struct {
	at     time.Time
	status int
}

// TestFloodsWithForgedCredentialsKeepNoValidCallerOut runs the local stack as make
// run does and floods with credentials that pass the edge's credential rules but
// are worthless: GET /deadlines with "Authorization: Bearer x" from one address,
// and POST /webhooks/payments with a forged signature from two, each at 20 a second
// for 12 s. Meanwhile three operators (an address each, one call a second) and the
// provider's sender (four a second) call the same routes with real credentials. The
// edge's per-address rules refuse each flood once it has sent its route's allowance
// (at most 20, and 100); from a second after that until the floods end, every valid
// call is answered as without a flood, none 429. What the floods' allowances cost
// valid callers before the edge refused them is logged.
func TestFloodsWithForgedCredentialsKeepNoValidCallerOut(t *testing.T) {
	base := floodStack(t, true)
	ctx := context.Background()
	operator, err := (&auth.Tokens{BaseURL: base}).Operator(ctx, "forged-flood-operator")
	if err != nil {
		t.Fatal(err)
	}
	const hook = `{"id":"evt-forged","type":"payment.failed","paymentReference":"rp_b1_AAAAAAAAAAAAAAAAAAAAAA","reason":"card declined"}`
	get := func(path string, header ...string) func() *http.Request {
		return func() *http.Request {
			req, _ := http.NewRequest("GET", base+path, nil)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			return req
		}
	}
	hookWith := func(signature func() string) func() *http.Request {
		return func() *http.Request {
			req, _ := http.NewRequest("POST", base+"/webhooks/payments", strings.NewReader(hook))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(webhook.Header, signature())
			return req
		}
	}
	signed := hookWith(func() string { return webhook.Sign([]byte(local.DefaultWebhookSecret), []byte(hook), time.Now()) })
	forged := hookWith(func() string { return fmt.Sprintf("t=%d,v1=%064x", time.Now().Unix(), 0) })
	floods := []*forgedFlood{
		{name: "GET /deadlines with a forged bearer token", addr: "127.0.0.2", route: "GET /deadlines", limit: 20, req: get("/deadlines", "Authorization", "Bearer x")},
		{name: "POST /webhooks/payments forged, first address", addr: "127.0.0.3", route: "POST /webhooks/payments", limit: 100, req: forged},
		{name: "POST /webhooks/payments forged, second address", addr: "127.0.0.4", route: "POST /webhooks/payments", limit: 100, req: forged},
	}
	valid := []struct {
		name, addr, route string
		every             time.Duration
		req               func() *http.Request
	}{
		{"an operator's GET /deadlines", "127.0.0.10", "GET /deadlines", time.Second, get("/deadlines", "Authorization", auth.Bearer(operator))},
		{"a second operator's GET /deadlines", "127.0.0.11", "GET /deadlines", time.Second, get("/deadlines", "Authorization", auth.Bearer(operator))},
		{"a third operator's GET /deadlines", "127.0.0.12", "GET /deadlines", time.Second, get("/deadlines", "Authorization", auth.Bearer(operator))},
		{"the provider's signed webhook", "127.0.0.20", "POST /webhooks/payments", time.Second / 4, signed},
	}

	want := map[string]int{}
	for _, c := range valid {
		want[c.name] = call{c.name, c.req}.status(t, clientFrom(c.addr))
		if want[c.name] == http.StatusTooManyRequests || want[c.name] == 0 {
			t.Fatalf("%s before any flood: %d", c.name, want[c.name])
		}
	}
	var wg sync.WaitGroup
	stop := time.Now().Add(forgedFor)
	for _, f := range floods {
		wg.Go(func() { f.run(t, stop) })
	}
	got := make([][]honestCall, len(valid))
	for i, c := range valid {
		wg.Go(func() {
			client := clientFrom(c.addr)
			tick := time.NewTicker(c.every) // spreading the valid calls over the floods, not waiting for an outcome
			defer tick.Stop()
			for now := range tick.C {
				if now.After(stop) {
					return
				}
				got[i] = append(got[i], honestCall{now, call{c.name, c.req}.status(t, client)})
			}
		})
	}
	wg.Wait()

	refused := checkFloodsRefused(t, floods, stop.Add(-forgedFor))
	for i, c := range valid {
		var before, beforeThrottled, after int
		for _, h := range got[i] {
			if h.at.Before(refused[c.route].Add(settle)) {
				before++
				if h.status == http.StatusTooManyRequests {
					beforeThrottled++
				}
				continue
			}
			after++
			if h.status != want[c.name] {
				t.Errorf("%s once the edge refused the floods of its route: %d, want %d as without a flood", c.name, h.status, want[c.name])
			}
		}
		if after < 5 {
			t.Errorf("%s: %d calls once the edge refused the floods, too few to measure", c.name, after)
		}
		t.Logf("%s: %d of %d answered 429 before the edge refused the floods; %d calls after", c.name, beforeThrottled, before, after)
	}
}

// checkFloodsRefused checks that the edge refused every flood once it had sent its
// allowance, and returns, per route, when the edge had refused every flood of it (the
// floods' start, for a route with a flood the edge never refused).
func checkFloodsRefused(t *testing.T, floods []*forgedFlood, start time.Time) map[string]time.Time {
	t.Helper()
	refused, never := map[string]time.Time{}, map[string]bool{}
	defer func() {
		for route := range never {
			refused[route] = start
		}
	}()
	for _, f := range floods {
		rate := float64(f.sent) / forgedFor.Seconds()
		if rate < 0.75*forgedRate {
			t.Errorf("%s: the flood reached %.0f requests a second, want about %d", f.name, rate, forgedRate)
		}
		if f.edge == 0 {
			t.Errorf("%s: the edge refused none of %d", f.name, f.sent)
			never[f.route] = true
			continue
		}
		if through := f.sent - f.edge; through > f.limit {
			t.Errorf("%s: %d of %d got through the edge, want %d at most", f.name, through, f.sent, f.limit)
		}
		if r, ok := refused[f.route]; !ok || f.firstEdge.After(r) {
			refused[f.route] = f.firstEdge
		}
	}
	return refused
}
