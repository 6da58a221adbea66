package webhook

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	secret      = []byte("whsec_0123456789abcdef0123456789")
	otherSecret = []byte("whsec_fedcba9876543210fedcba9876")
	body        = []byte(`{"type":"payment.confirmed","reference":"rp_r-1"}`)
	signedAt    = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z
)

func newVerifier(t testing.TB) *Verifier {
	t.Helper()
	v, err := NewVerifier(secret, DefaultTolerance)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// v1 returns the hex signature of body at ts under key.
func v1(key []byte, ts time.Time, b []byte) string {
	return hex.EncodeToString(mac(key, ts.Unix(), b))
}

func TestVerify(t *testing.T) {
	good := v1(secret, signedAt, body)
	wrong := v1(otherSecret, signedAt, body)
	tampered := append([]byte(nil), body...)
	tampered[10] ^= 0x01
	ts := "t=1767225600"

	tests := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		err    error // nil means accepted
	}{
		{"valid signature", Sign(secret, body, signedAt), body, signedAt, nil},
		{"valid a bit later", Sign(secret, body, signedAt), body, signedAt.Add(90 * time.Second), nil},
		{"valid with sub-second now", Sign(secret, body, signedAt), body, signedAt.Add(1500 * time.Millisecond), nil},
		{"valid empty body", Sign(secret, nil, signedAt), nil, signedAt, nil},
		{"wrong secret", Sign(otherSecret, body, signedAt), body, signedAt, ErrSignatureMismatch},
		{"tampered body", Sign(secret, body, signedAt), tampered, signedAt, ErrSignatureMismatch},
		{"tampered timestamp", "t=1767225601,v1=" + good, body, signedAt, ErrSignatureMismatch},
		{"replayed 6 minutes old", Sign(secret, body, signedAt), body, signedAt.Add(6 * time.Minute), ErrStaleSignature},
		{"future beyond tolerance", Sign(secret, body, signedAt.Add(6*time.Minute)), body, signedAt, ErrStaleSignature},
		{"past edge accepted", Sign(secret, body, signedAt), body, signedAt.Add(DefaultTolerance), nil},
		{"future edge accepted", Sign(secret, body, signedAt.Add(DefaultTolerance)), body, signedAt, nil},
		{"just past edge", Sign(secret, body, signedAt), body, signedAt.Add(DefaultTolerance + time.Nanosecond), ErrStaleSignature},
		{"just future of edge", Sign(secret, body, signedAt.Add(DefaultTolerance)), body, signedAt.Add(-time.Nanosecond), ErrStaleSignature},
		{"huge authentic timestamp", "t=9223372036854775807,v1=" + hex.EncodeToString(mac(secret, 1<<63-1, body)), body, signedAt, ErrStaleSignature},
		{"stale and wrong is mismatch", Sign(otherSecret, body, signedAt), body, signedAt.Add(time.Hour), ErrSignatureMismatch},
		{"missing header", "", body, signedAt, ErrMissingSignature},
		{"blank header", "  \t ", body, signedAt, ErrMissingSignature},
		{"no t", "v1=" + good, body, signedAt, ErrMalformedSignature},
		{"no v1", ts, body, signedAt, ErrMalformedSignature},
		{"only v0", ts + ",v0=" + good, body, signedAt, ErrMalformedSignature},
		{"duplicate t", ts + "," + ts + ",v1=" + good, body, signedAt, ErrMalformedSignature},
		{"non-numeric t", "t=abc,v1=" + good, body, signedAt, ErrMalformedSignature},
		{"empty t", "t=,v1=" + good, body, signedAt, ErrMalformedSignature},
		{"plus-signed t", "t=+1767225600,v1=" + good, body, signedAt, ErrMalformedSignature},
		{"hex t", "t=0x6955b900,v1=" + good, body, signedAt, ErrMalformedSignature},
		{"fractional t", "t=1767225600.5,v1=" + good, body, signedAt, ErrMalformedSignature},
		{"t overflows int64", "t=99999999999999999999,v1=" + good, body, signedAt, ErrMalformedSignature},
		{"non-hex v1", ts + ",v1=" + strings.Repeat("zz", 32), body, signedAt, ErrMalformedSignature},
		{"short v1", ts + ",v1=" + good[:62], body, signedAt, ErrMalformedSignature},
		{"long v1", ts + ",v1=" + good + "00", body, signedAt, ErrMalformedSignature},
		{"empty v1", ts + ",v1=", body, signedAt, ErrMalformedSignature},
		{"one bad v1 among good", ts + ",v1=" + good + ",v1=xyz", body, signedAt, ErrMalformedSignature},
		{"garbage", "garbage", body, signedAt, ErrMalformedSignature},
		{"garbage commas", ",,,", body, signedAt, ErrMalformedSignature},
		{"empty key", "=1," + ts + ",v1=" + good, body, signedAt, ErrMalformedSignature},
		{"trailing comma", ts + ",v1=" + good + ",", body, signedAt, ErrMalformedSignature},
		{"multiple v1 one valid", ts + ",v1=" + wrong + ",v1=" + good, body, signedAt, nil},
		{"multiple v1 valid first", ts + ",v1=" + good + ",v1=" + wrong, body, signedAt, nil},
		{"multiple v1 none valid", ts + ",v1=" + wrong + ",v1=" + wrong, body, signedAt, ErrSignatureMismatch},
		{"unknown keys ignored", "v0=nothex," + ts + ",scheme=x,v1=" + good + ",v2=" + wrong, body, signedAt, nil},
		{"whitespace tolerated", "  t=1767225600 ,\tv1=" + good + "  ", body, signedAt, nil},
		{"upper-case hex", ts + ",v1=" + strings.ToUpper(good), body, signedAt, nil},
		{"keys are case-sensitive", "T=1767225600,V1=" + good, body, signedAt, ErrMalformedSignature},
	}
	v := newVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(tt.header, tt.body, tt.now)
			if tt.err == nil {
				if err != nil {
					t.Fatalf("Verify() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("Verify() = %v, want %v", err, tt.err)
			}
			if !errors.Is(err, ErrUnauthorized) {
				t.Errorf("Verify() = %v, does not match ErrUnauthorized", err)
			}
			for _, other := range []error{ErrMissingSignature, ErrMalformedSignature, ErrStaleSignature, ErrSignatureMismatch} {
				if other != tt.err && errors.Is(err, other) {
					t.Errorf("Verify() = %v, also matches %v", err, other)
				}
			}
			// The message must leak neither the secret nor the expected MAC.
			msg := err.Error()
			for _, leak := range []string{string(secret), hex.EncodeToString(secret), good, strings.ToUpper(good), v1(secret, signedAt, tt.body)} {
				if strings.Contains(msg, leak) {
					t.Errorf("Verify() error %q leaks %q", msg, leak)
				}
			}
		})
	}
}

func TestVerifyCustomTolerance(t *testing.T) {
	v, err := NewVerifier(secret, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h := Sign(secret, body, signedAt)
	if err := v.Verify(h, body, signedAt.Add(30*time.Second)); err != nil {
		t.Errorf("at edge: %v", err)
	}
	if err := v.Verify(h, body, signedAt.Add(31*time.Second)); !errors.Is(err, ErrStaleSignature) {
		t.Errorf("past edge: %v, want %v", err, ErrStaleSignature)
	}
}

func TestNewVerifier(t *testing.T) {
	tests := []struct {
		name      string
		secret    []byte
		tolerance time.Duration
		ok        bool
	}{
		{"valid", secret, DefaultTolerance, true},
		{"exactly minimum length", []byte("0123456789abcdef"), time.Minute, true},
		{"zero tolerance means default", secret, 0, true},
		{"nil secret", nil, DefaultTolerance, false},
		{"empty secret", []byte{}, DefaultTolerance, false},
		{"secret too short", []byte("0123456789abcde"), DefaultTolerance, false},
		{"negative tolerance", secret, -time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVerifier(tt.secret, tt.tolerance)
			if tt.ok != (err == nil) || tt.ok != (v != nil) {
				t.Fatalf("NewVerifier() = %v, %v; want ok=%v", v, err, tt.ok)
			}
			if err != nil && len(tt.secret) > 0 && strings.Contains(err.Error(), string(tt.secret)) {
				t.Errorf("error %q leaks the secret", err)
			}
			if v != nil && v.tolerance <= 0 {
				t.Errorf("tolerance = %v, want positive", v.tolerance)
			}
		})
	}
}

func TestNewVerifierCopiesSecret(t *testing.T) {
	s := append([]byte(nil), secret...)
	v, err := NewVerifier(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := Sign(secret, body, signedAt)
	for i := range s {
		s[i] = 0
	}
	if err := v.Verify(h, body, signedAt); err != nil {
		t.Errorf("Verify after caller mutated its secret: %v", err)
	}
}

func TestZeroVerifierRefuses(t *testing.T) {
	// A Verifier not built by NewVerifier has no secret and must accept nothing,
	// not even a header signed with the empty secret.
	for name, v := range map[string]*Verifier{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			err := v.Verify(Sign(nil, body, signedAt), body, signedAt)
			if !errors.Is(err, ErrUnauthorized) {
				t.Errorf("Verify() = %v, want %v", err, ErrUnauthorized)
			}
		})
	}
}

func TestSign(t *testing.T) {
	got := Sign(secret, body, signedAt.Add(999*time.Millisecond))
	want := "t=1767225600,v1=" + v1(secret, signedAt, body)
	if got != want {
		t.Errorf("Sign() = %q, want %q", got, want)
	}
}

func FuzzVerify(f *testing.F) {
	good := Sign(secret, body, signedAt)
	for _, seed := range []struct {
		header string
		body   []byte
		ts     int64
	}{
		{good, body, signedAt.Unix()},
		{"", nil, 0},
		{"garbage", []byte("x"), -1},
		{"t=1767225600,v1=" + strings.Repeat("0", 64), body, signedAt.Unix()},
		{"t=1,t=2,v1=,v0=", nil, 1},
		{" , = ,=,t=-0,v1=" + strings.Repeat("g", 64), []byte{0, 0xff}, 1 << 40},
		{"t=-9223372036854775808,v1=" + good[len(good)-64:], body, -1 << 40},
		{good + ",v1=" + good[len(good)-64:], body, 1 << 62},
	} {
		f.Add(seed.header, seed.body, seed.ts)
	}
	v := newVerifier(f)
	f.Fuzz(func(t *testing.T, header string, b []byte, ts int64) {
		// Keep the signing time within ±2^40 s (±35,000 years) of the epoch.
		ts %= 1 << 40
		now := time.Unix(ts, 0)

		// Arbitrary input never panics, and any refusal is an ErrUnauthorized.
		if err := v.Verify(header, b, now); err != nil && !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Verify(%q) = %v, not an ErrUnauthorized", header, err)
		}

		// A header made by Sign always verifies, at the signing time and
		// anywhere within the tolerance.
		h := Sign(secret, b, now)
		for _, at := range []time.Time{now, now.Add(DefaultTolerance), now.Add(-DefaultTolerance)} {
			if err := v.Verify(h, b, at); err != nil {
				t.Fatalf("Verify(Sign(body=%q, t=%d)) at %d = %v", b, ts, at.Unix(), err)
			}
		}
		// ...and not for another body.
		if err := v.Verify(h, append(b[:len(b):len(b)], 'x'), now); !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("Verify(Sign(body), body+x) = %v, want %v", err, ErrSignatureMismatch)
		}
	})
}
