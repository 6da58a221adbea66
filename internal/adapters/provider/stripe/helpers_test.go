package stripe_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	stripesdk "github.com/stripe/stripe-go/v85"

	stripe "github.com/bikerental/bikerental/internal/adapters/provider/stripe"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
)

func TestMain(m *testing.M) { stripemock.Main(m) }

// The ids of the recorded responses and events in testdata.
const (
	reference    = "rp_01JZ8K3M6Q2W4E5R7T9YAB"
	paymentID    = "pi_3TbC4nLkdIwHu7ix0yXq2aZd"
	clientSecret = "pi_3TbC4nLkdIwHu7ix0yXq2aZd_secret_Hk2lQm9XvTz3RbN0wYcD4eF7g"
	refundID     = "re_3TbC4nLkdIwHu7ix0Vd3Jt8S"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sent is one request as it reached the server.
type sent struct {
	Method, Path, RawQuery string
	IdempotencyKey         string
	StripeVersion          string
	Authorization          string
	ContentType            string
	Form                   url.Values
}

func record(t testing.TB, r *http.Request) sent {
	t.Helper()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read request body: %v", err)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		t.Errorf("request body %q is not a form: %v", body, err)
	}
	return sent{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		StripeVersion:  r.Header.Get("Stripe-Version"),
		Authorization:  r.Header.Get("Authorization"),
		ContentType:    r.Header.Get("Content-Type"),
		Form:           form,
	}
}

// recorder is an http.RoundTripper that keeps what the SDK sends, so that tests
// against stripe-mock can see the exact requests it accepted.
type recorder struct {
	t    testing.TB
	mu   sync.Mutex
	sent []sent
	// replied holds the Idempotency-Key header of each answer.
	replied []string
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	seen := r.Clone(r.Context())
	seen.Body = io.NopCloser(bytes.NewReader(body))
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	s := record(rec.t, seen)
	resp, err := http.DefaultTransport.RoundTrip(out)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.sent = append(rec.sent, s)
	if err == nil {
		rec.replied = append(rec.replied, resp.Header.Get("Idempotency-Key"))
	} else {
		rec.replied = append(rec.replied, "")
	}
	return resp, err
}

func (rec *recorder) requests() []sent {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.sent)
}

// reply is a recorded answer: a status, a testdata file (or a body) and headers.
type reply struct {
	status int
	file   string
	body   []byte
	header map[string]string
}

// fakeStripe is an httptest server that answers with recorded Stripe responses and
// records the requests. answer is asked for each request in turn (n counts from 0).
type fakeStripe struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	sent   []sent
	answer func(n int, s sent) reply
	// block, if set, makes every request wait for the client to give up.
	block bool
}

func newFakeStripe(t testing.TB, answer func(n int, s sent) reply) *fakeStripe {
	f := &fakeStripe{t: t, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeStripe) serve(w http.ResponseWriter, r *http.Request) {
	s := record(f.t, r)
	f.mu.Lock()
	n := len(f.sent)
	f.sent = append(f.sent, s)
	f.mu.Unlock()
	if f.block {
		<-r.Context().Done()
		return
	}
	rep := f.answer(n, s)
	body := rep.body
	if rep.file != "" {
		body = fixture(f.t, rep.file)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_Fake"+strings.Repeat("x", n+1))
	w.Header().Set("Stripe-Version", stripesdk.APIVersion)
	if s.IdempotencyKey != "" {
		w.Header().Set("Idempotency-Key", s.IdempotencyKey)
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	w.Write(body)
}

func (f *fakeStripe) requests() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// idempotent plays Stripe's idempotency on top of answer: the first answer to a key
// is kept and replayed, with Idempotent-Replayed: true, to a request with the same
// key, method, path and parameters; a request that reuses a key with other
// parameters is refused with Stripe's idempotency_error.
func idempotent(answer func(n int, s sent) reply) func(int, sent) reply {
	type first struct {
		s sent
		r reply
	}
	var mu sync.Mutex
	keys := map[string]first{}
	return func(n int, s sent) reply {
		mu.Lock()
		defer mu.Unlock()
		if s.IdempotencyKey == "" {
			return answer(n, s)
		}
		f, ok := keys[s.IdempotencyKey]
		if !ok {
			r := answer(n, s)
			keys[s.IdempotencyKey] = first{s, r}
			return r
		}
		if f.s.Method != s.Method || f.s.Path != s.Path || f.s.Form.Encode() != s.Form.Encode() {
			return reply{status: http.StatusBadRequest, file: "api/error.idempotency_mismatch.json"}
		}
		r := f.r
		r.header = map[string]string{"Idempotent-Replayed": "true"}
		return r
	}
}

func newProvider(t testing.TB, apiURL string, client *http.Client) *stripe.Provider {
	t.Helper()
	p, err := stripe.New(stripe.Config{
		SecretKey:     testKey,
		WebhookSecret: webhookSecret,
		APIURL:        apiURL,
		HTTPClient:    client,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	testKey       = stripemock.SecretKey
	webhookSecret = "whsec_test_5f3c9a1e7b2d4c6e8a0b1d3f5e7c9a2b"
)

func wantForm(t testing.TB, what string, got url.Values, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: form %v, want exactly %v", what, got, want)
	}
	for k, v := range want {
		if vs := got[k]; len(vs) != 1 || vs[0] != v {
			t.Errorf("%s: form %s = %q, want %q", what, k, vs, v)
		}
	}
}
