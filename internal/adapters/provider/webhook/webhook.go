// Package webhook verifies the payment provider's signed webhooks: the
// Payment-Signature header carries a timestamp and one or more HMAC-SHA256
// signatures of "<timestamp>.<raw body>" made with a shared secret.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the name of the HTTP header carrying the signature, whose value is
// "t=<unix seconds>,v1=<hex HMAC-SHA256>" as produced by Sign.
const Header = "Payment-Signature"

// DefaultTolerance is the largest accepted difference, in either direction,
// between a signature's timestamp and the verification time.
const DefaultTolerance = 5 * time.Minute

// MinSecretLen is the shortest secret, in bytes, NewVerifier accepts.
const MinSecretLen = 16

// Errors returned by Verify. Each one matches ErrUnauthorized with errors.Is,
// and Verify may wrap them with a reason; no message ever contains the secret
// or the expected signature.
var (
	// ErrUnauthorized is the parent of every Verify error: the webhook must be
	// refused (typically with 401) and its body not processed.
	ErrUnauthorized = errors.New("unauthorized webhook")
	// ErrMissingSignature is returned for an empty (or all-whitespace) header.
	ErrMissingSignature = fmt.Errorf("%w: missing signature header", ErrUnauthorized)
	// ErrMalformedSignature is returned for a header that does not follow the
	// scheme: an item that is not key=value, a missing or duplicate t, a t that
	// is not a base-10 integer, no v1, or a v1 that is not 64 hex digits.
	ErrMalformedSignature = fmt.Errorf("%w: malformed signature header", ErrUnauthorized)
	// ErrStaleSignature is returned for an authentic signature whose timestamp
	// is further than the tolerance from the verification time, in the past
	// (a replay) or in the future.
	ErrStaleSignature = fmt.Errorf("%w: signature timestamp outside tolerance", ErrUnauthorized)
	// ErrSignatureMismatch is returned when no v1 signature matches the body
	// and timestamp under the secret.
	ErrSignatureMismatch = fmt.Errorf("%w: signature mismatch", ErrUnauthorized)
)

// Timestamps beyond ±2^62 seconds cannot be turned into a time.Time safely;
// they are well formed but necessarily outside any tolerance of a real clock.
const maxAbsUnix = 1 << 62

// Verifier checks Payment-Signature headers against one shared secret. Build
// it with NewVerifier; a zero Verifier refuses every header. It is safe for
// concurrent use.
type Verifier struct {
	secret    []byte
	tolerance time.Duration
}

// NewVerifier returns a Verifier for secret (copied) that accepts timestamps
// at most tolerance away from the verification time; a zero tolerance means
// DefaultTolerance. It returns an error if secret is shorter than MinSecretLen
// bytes or tolerance is negative. The error never contains the secret.
func NewVerifier(secret []byte, tolerance time.Duration) (*Verifier, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("webhook secret must be at least %d bytes, got %d", MinSecretLen, len(secret))
	}
	if tolerance < 0 {
		return nil, fmt.Errorf("webhook tolerance must not be negative, got %v", tolerance)
	}
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	return &Verifier{secret: append([]byte(nil), secret...), tolerance: tolerance}, nil
}

// Verify returns nil only if header is a well-formed Payment-Signature value,
// one of its v1 signatures is the HMAC-SHA256 of "<t>.<body>" under the secret
// (compared in constant time), and t is within the tolerance of now in both
// directions, bounds included. Otherwise it returns an error matching, with
// errors.Is, ErrUnauthorized and exactly one of ErrMissingSignature,
// ErrMalformedSignature, ErrSignatureMismatch or ErrStaleSignature, checked in
// that order: a timestamp is only reported stale once the signature is
// authentic. body must be the raw request body, byte for byte.
func (v *Verifier) Verify(header string, body []byte, now time.Time) error {
	if v == nil || len(v.secret) < MinSecretLen {
		return fmt.Errorf("%w: verifier has no secret (use NewVerifier)", ErrUnauthorized)
	}
	if strings.TrimSpace(header) == "" {
		return ErrMissingSignature
	}
	ts, sigs, err := parse(header)
	if err != nil {
		return err
	}
	expected := mac(v.secret, ts, body)
	matched := false
	for _, sig := range sigs {
		// No early exit: the time taken does not depend on which one matched.
		if hmac.Equal(sig, expected) {
			matched = true
		}
	}
	if !matched {
		return ErrSignatureMismatch
	}
	if ts > maxAbsUnix || ts < -maxAbsUnix {
		return ErrStaleSignature
	}
	skew := now.Sub(time.Unix(ts, 0))
	if skew > v.tolerance || skew < -v.tolerance {
		return ErrStaleSignature
	}
	return nil
}

// Sign returns the Payment-Signature header value for body signed with secret
// at t (truncated to whole seconds): "t=<unix seconds>,v1=<hex HMAC-SHA256>".
// A Verifier built with the same secret accepts it within its tolerance of t.
func Sign(secret []byte, body []byte, t time.Time) string {
	ts := t.Unix()
	return "t=" + strconv.FormatInt(ts, 10) + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// mac returns HMAC-SHA256 of "<ts>.<body>" under secret.
func mac(secret []byte, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// parse splits a non-empty header into its timestamp and decoded v1
// signatures. Errors wrap ErrMalformedSignature and never echo the header.
func parse(header string) (ts int64, sigs [][]byte, err error) {
	seenT := false
	for item := range strings.SplitSeq(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || key == "" {
			return 0, nil, fmt.Errorf("%w: item is not key=value", ErrMalformedSignature)
		}
		switch key {
		case "t":
			if seenT {
				return 0, nil, fmt.Errorf("%w: duplicate t", ErrMalformedSignature)
			}
			seenT = true
			if ts, err = parseUnix(value); err != nil {
				return 0, nil, err
			}
		case "v1":
			if len(value) != 2*sha256.Size {
				return 0, nil, fmt.Errorf("%w: v1 is not %d hex digits", ErrMalformedSignature, 2*sha256.Size)
			}
			sig, err := hex.DecodeString(value)
			if err != nil {
				return 0, nil, fmt.Errorf("%w: v1 is not hex", ErrMalformedSignature)
			}
			sigs = append(sigs, sig)
		default:
			// Other schemes (v0, future versions) are ignored.
		}
	}
	if !seenT {
		return 0, nil, fmt.Errorf("%w: missing t", ErrMalformedSignature)
	}
	if len(sigs) == 0 {
		return 0, nil, fmt.Errorf("%w: missing v1", ErrMalformedSignature)
	}
	return ts, sigs, nil
}

// parseUnix parses an optionally '-'-signed string of ASCII decimal digits
// that fits an int64 (no '+', spaces, underscores or other bases).
func parseUnix(s string) (int64, error) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return 0, fmt.Errorf("%w: t is not a base-10 integer", ErrMalformedSignature)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("%w: t is not a base-10 integer", ErrMalformedSignature)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: t is out of range", ErrMalformedSignature)
	}
	return n, nil
}
