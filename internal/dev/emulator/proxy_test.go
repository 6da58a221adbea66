package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestTheProxyLogsThroughTheStacksLogger: a request whose client gives up is not
// logged at all, and one moto cannot answer is logged as a warning through the
// logger WithLogger gives, never through the standard logger.
func TestTheProxyLogsThroughTheStacksLogger(t *testing.T) {
	var std bytes.Buffer
	log.SetOutput(&std)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	arrived := make(chan struct{}, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // moto busy until the client gives up
	}))
	var logged bytes.Buffer
	s := newServer([]Option{WithLogger(slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))})
	u, _ := url.Parse(backend.URL)
	if err := s.serveProxy(u); err != nil {
		t.Fatal(err)
	}
	defer s.proxy.Close()

	// The client gives up while the request is at moto.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the cancelled request was answered %s", resp.Status)
	}

	// moto is gone: the next request cannot be passed on.
	backend.Close()
	resp, err := http.Post(s.Endpoint+"/", "application/x-amz-json-1.0", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a request moto cannot answer: %s, want 502", resp.Status)
	}

	// Once Stop has begun, moto is expected to be gone.
	s.stopping.Store(true)
	if resp, err := http.Post(s.Endpoint+"/", "application/x-amz-json-1.0", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
	}

	// Shutdown waits for the proxy's handlers, the cancelled request's included, to
	// finish: everything it will log is logged.
	shutdown, cancelShutdown := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelShutdown()
	if err := s.proxy.Shutdown(shutdown); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("the proxy logged %d lines, want one warning for the request moto could not answer:\n%s", len(lines), logged.String())
	}
	var line struct{ Level, Msg, Error string }
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line.Level != "WARN" || line.Error == "" {
		t.Errorf("the proxy's line %q: want a JSON warning with the error (%v)", lines[0], err)
	}
	if strings.Contains(logged.String(), "context canceled") {
		t.Errorf("the cancelled request was logged:\n%s", logged.String())
	}
	if std.Len() > 0 {
		t.Errorf("the proxy wrote to the standard logger:\n%s", std.String())
	}
}
