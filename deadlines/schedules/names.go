package schedules

import (
	"crypto/sha256"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// MaxName is the longest name EventBridge Scheduler takes for a schedule.
const MaxName = 64

// hashLen is how many characters of a key's hash end a derived name: about 119
// bits, so that two keys never share a name in practice.
const hashLen = 20

// Name returns the name of the one-time schedule of the row at key: the key
// itself when it is a name Scheduler takes without a dot (1 to 64 of A-Z, a-z, 0-9,
// '-' and '_'), and otherwise the key's first characters with every other
// character as '_', a dot, and 20 characters of the key's SHA-256. Verbatim names
// have no dot and derived ones have one, so two keys never share a name. The
// name of a key never changes: a schedule is found again by it.
func Name(key string) string {
	if key != "" && len(key) <= MaxName && plain(key) {
		return key
	}
	keep := min(len(key), MaxName-1-hashLen)
	out := []byte(key[:keep])
	for i, c := range out {
		if !plainByte(c) {
			out[i] = '_'
		}
	}
	return string(append(append(out, '.'), hash(key)...))
}

func plain(s string) bool {
	for _, c := range []byte(s) {
		if !plainByte(c) {
			return false
		}
	}
	return true
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// hash returns hashLen characters of A-Z, a-z and 0-9 of the SHA-256 of key.
func hash(key string) []byte {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte(key))
	n := new(big.Int).SetBytes(sum[:])
	base, digit := big.NewInt(int64(len(alphabet))), new(big.Int)
	out := make([]byte, hashLen)
	for i := range out {
		n.DivMod(n, base, digit)
		out[i] = alphabet[digit.Int64()]
	}
	return out
}

// AtExpression returns the Scheduler expression of a one-time schedule that fires
// at t, truncated to the whole second, in UTC: the schedule fires at most a second
// early, and the sweep (Sweeper.SweepOne) waits for the exact due time.
func AtExpression(t time.Time) string {
	return "at(" + t.UTC().Format("2006-01-02T15:04:05") + ")"
}

// ParseAtExpression reverses AtExpression, for what plays Scheduler in tests and
// local runs.
func ParseAtExpression(expr string) (time.Time, error) {
	raw, ok := strings.CutPrefix(expr, "at(")
	raw, ok2 := strings.CutSuffix(raw, ")")
	t, err := time.Parse("2006-01-02T15:04:05", raw)
	if !ok || !ok2 || err != nil {
		return time.Time{}, fmt.Errorf("schedules: %q is not an at() expression", expr)
	}
	return t, nil
}
