package load

import (
	"context"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/ident"
)

func TestIntentsAreDealtInTheirShares(t *testing.T) {
	g := newGen(Config{Rentals: 20, Mix: DefaultMix})
	got := map[Intent]int{}
	var first []Intent
	for {
		i, ok := g.claim(context.Background())
		if !ok {
			break
		}
		got[i]++
		if len(first) < 4 {
			first = append(first, i)
		}
	}
	want := map[Intent]int{Confirm: 10, Reject: 4, NeverPay: 3, OperatorCancel: 3}
	for i, n := range want {
		if got[i] != n {
			t.Errorf("%s: %d of 20, want %d (all: %v)", i, got[i], n, got)
		}
	}
	if first[0] != Confirm || first[1] == first[0] {
		t.Errorf("the first intents %v are not spread", first)
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix("confirmed=1, never-paid=3")
	if err != nil || m != (Mix{Confirm: 1, NeverPay: 3}) {
		t.Errorf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"confirmed", "paid=1", "confirmed=-1", "confirmed=0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	rep := Report{
		Rentals:  map[Intent][]string{Confirm: {"a", "b"}, Reject: {"c"}, NeverPay: {"d"}, OperatorCancel: {"e"}},
		Diverted: []string{"f"},
	}
	end := EndState{
		Rentals: map[string]string{"a": "returned", "b": "approved", "c": "rejected", "d": "cancelled", "e": "cancelled", "f": "cancelled"},
		Bikes:   map[string]string{"x": "available", "y": "rented"},
	}
	if v := Check(rep, end); len(v) != 0 {
		t.Errorf("violations %v, want none", v)
	}
	end.Rentals["d"] = "awaiting-payment"
	end.Bikes["x"] = "requested"
	rep.Unclean = 1
	if v := Check(rep, end); len(v) != 3 {
		t.Errorf("violations %v, want 3", v)
	}
}

func TestBackoff(t *testing.T) {
	base := 100 * time.Millisecond
	us := time.Microsecond
	for try, want := range []time.Duration{100000 * us, 100000 * us, 150000 * us, 225000 * us, 337500 * us, 506250 * us} {
		if got := backoff(base, try); got != want {
			t.Errorf("backoff(%v, %d) = %v, want %v", base, try, got, want)
		}
	}
	if got := backoff(base, 100); got != 8*base {
		t.Errorf("backoff(%v, 100) = %v, want the cap %v", base, got, 8*base)
	}
}

func TestRentedBikes(t *testing.T) {
	rentals := map[string]string{
		"b1_AAAAAAAAAAAAAAAAAAAAAA": "approved",
		"b2_AAAAAAAAAAAAAAAAAAAAAA": "returned",
		"b3_AAAAAAAAAAAAAAAAAAAAAA": "cancelled",
		"not-a-rental-id":           "approved",
	}
	got := rentedBikes(rentals)
	if len(got) != 1 || !got["b1"] {
		t.Errorf("rentedBikes = %v, want only b1", got)
	}
}

func TestRenterIdentities(t *testing.T) {
	prefix := "load-abcdef789012345" // as long as a prefix may be
	if got := renterID(prefix, 0, 1); got != prefix+"-r1-1" {
		t.Errorf("renterID = %q", got)
	}
	if id := renterID(prefix, 9999, 99999); !ident.Valid(id) {
		t.Errorf("renter %q is not a valid renter id", id)
	}
	if id := operatorSubject(prefix); !ident.Valid(id) {
		t.Errorf("operator %q is not a valid subject", id)
	}
}
