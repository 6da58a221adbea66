package moto

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTheProxyPassesOnOneRequestAtATime: while the backend holds a request, no
// other reaches it, however many clients send at once.
func TestTheProxyPassesOnOneRequestAtATime(t *testing.T) {
	var inFlight, most atomic.Int32
	arrived := make(chan struct{}, 16)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		arrived <- struct{}{}
		// Hold the request until another arrives beside it, or long enough
		// for the others, all sent at once, to have reached an unserialized
		// backend.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	s := &server{}
	if err := s.serveProxy(u); err != nil {
		t.Fatal(err)
	}
	defer s.proxy.Close()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			resp, err := http.Get(s.endpoint)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	if n := len(arrived); n != 6 || most.Load() != 1 {
		t.Errorf("%d requests arrived, at most %d at once; want 6, one at a time", n, most.Load())
	}
}

// TestTheServerGetsNoClientSettings: moto reads AWS_ settings (a region, a
// profile) and goes through proxies like any client; the server is started
// without them, whatever the machine or a test has set.
func TestTheServerGetsNoClientSettings(t *testing.T) {
	got := serverEnv([]string{"PATH=/bin", "AWS_REGION=eu-north-9", "aws_profile=x", "HTTP_PROXY=http://p", "https_proxy=http://p",
		"MOTO_ALLOW_NONEXISTENT_REGION=true", "HOME=/root", "PYENV_ROOT=/p"})
	if want := []string{"PATH=/bin", "HOME=/root", "PYENV_ROOT=/p"}; !slices.Equal(got, want) {
		t.Errorf("serverEnv = %q, want %q", got, want)
	}
}
