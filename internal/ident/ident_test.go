package ident

import (
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
