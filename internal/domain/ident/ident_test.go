package ident

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"a", true}, {"bike-01_X", true}, {strings.Repeat("z", 64), true},
		{"", false}, {strings.Repeat("z", 65), false}, {"a b", false}, {"a/b", false}, {"é", false}, {"a.b", false},
	} {
		if got := Valid(tc.id); got != tc.want {
			t.Errorf("Valid(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestRandomAndDerived(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		r := Random(22)
		if len(r) != 22 || !Alphanumeric(r) || seen[r] {
			t.Fatalf("Random(22) = %q (seen before: %v)", r, seen[r])
		}
		seen[r] = true
	}
	a, b := Derived(22, "ab", "c"), Derived(22, "a", "bc")
	if a == b || a != Derived(22, "ab", "c") || len(a) != 22 || !Alphanumeric(a) {
		t.Fatalf("Derived: %q, %q", a, b)
	}
	if d := Derived(200, "x"); len(d) != 200 || !Alphanumeric(d) {
		t.Fatalf("Derived(200) = %q", d)
	}
}

func TestUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if u := UUID(); !re.MatchString(u) || u == UUID() {
		t.Fatalf("UUID() = %q", u)
	}
}

// TestDerivedIsStable pins Derived's output: rental ids made from Idempotency-Keys are
// stored, so a retry after an upgrade must derive the same one.
func TestDerivedIsStable(t *testing.T) {
	for _, tc := range []struct {
		n     int
		parts []string
		want  string
	}{
		{22, []string{"bike-42", "alice", "7d1c2a5e-order-42"}, "w9fQUWmcIomyY4ewtP9tne"},
		{22, []string{"rp_bike-1_AAAAAAAAAAAAAAAAAAAAAA"}, "YKGjGr0way9FPQCktWzHoc"},
		{100, []string{"", "x"}, "g6pvI7AZFJReJJhkJ3yTNgKDAbHpSNE6h5uhNQPDouxtrLCZBdSLVRpfW2DRAOEzxjqkgZIzwgV1iy0Y4XXBF4HOBsFtIguzPne5"},
		{200, []string{"x"}, "SPuAmNkZwb5Bf4kz37BLAByno0PXPy6guzN4c92IFhQ2rapzSRYnNdwGQW9qQMWHBf2iAC0gRJ2pKXvnhXlh6pfy4tJxjbsSPi6cAbnALGLMpoQPnKrTmrtVi7yk4KMVRmLLE1ZpHbrzHQbmUopFukMJ8kBuAi4CDUCAojU76f5ZGwC1OgWXOyjUsc4xpN9Da76mn1sT"},
	} {
		if got := Derived(tc.n, tc.parts...); got != tc.want {
			t.Errorf("Derived(%d, %q) = %q, want %q", tc.n, tc.parts, got, tc.want)
		}
	}
	// Inputs longer than the stack buffers hash the same way as short ones.
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		n     int
		parts []string
	}{
		{22, []string{long}}, {22, []string{long, long, "x"}}, {65, []string{"a"}}, {1000, []string{long[:100], ""}}, {0, nil},
	} {
		if got, want := Derived(tc.n, tc.parts...), derivedByStreaming(tc.n, tc.parts...); got != want {
			t.Errorf("Derived(%d, %d parts) = %q, want %q", tc.n, len(tc.parts), got, want)
		}
	}
}

// derivedByStreaming is Derived as first written, with a streaming hash.
func derivedByStreaming(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var l [8]byte
		binary.BigEndian.PutUint64(l[:], uint64(len(p)))
		h.Write(l[:])
		h.Write([]byte(p))
	}
	seed := h.Sum(nil)
	out := make([]byte, 0, n)
	for counter := uint64(0); len(out) < n; counter++ {
		block := sha256.Sum256(append(seed, byte(counter)))
		for _, b := range block {
			if b < 248 {
				out = append(out, alphabet[int(b)%62])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out)
}

func TestFormatUUID(t *testing.T) {
	for _, b := range [][16]byte{
		{},
		{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		want := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		if got := formatUUID(b); got != want {
			t.Errorf("formatUUID(%x) = %q, want %q", b, got, want)
		}
	}
}
