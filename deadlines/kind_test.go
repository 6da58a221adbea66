package deadlines_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

var placed = deadlines.Events{Opens: []string{"OrderPlaced"}, Settles: []string{"OrderConfirmed"}}

func TestABadDeclarationIsRefusedNamingTheKindAndTheFault(t *testing.T) {
	good := deadlines.Kind{Name: "unconfirmed-order", After: time.Minute, Changes: placed, Work: deadlines.Send{}}
	with := func(f func(k *deadlines.Kind)) deadlines.Kind {
		k := good
		f(&k)
		return k
	}
	for _, c := range []struct {
		name  string
		kinds []deadlines.Kind
		want  string
	}{
		{"no kinds", nil, "no kinds"},
		{"upper case", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Name = "Order" })}, `kind "Order": want a name of lower-case`},
		{"a leading digit", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Name = "1-order" })}, `kind "1-order": want a name`},
		{"markup", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Name = "<b>order</b>" })}, `want a name`},
		{"too long", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Name = strings.Repeat("a", 65) })}, "at most 64"},
		{"a negative duration", []deadlines.Kind{with(func(k *deadlines.Kind) { k.After = -time.Second })}, `kind "unconfirmed-order": After -1s: want a positive duration`},
		{"no changes", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Changes = nil })}, "no Changes"},
		{"nothing opens", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Changes = deadlines.Events{Settles: []string{"X"}} })}, "no record type opens"},
		{"opens and settles", []deadlines.Kind{with(func(k *deadlines.Kind) {
			k.Changes = deadlines.Events{Opens: []string{"X"}, Settles: []string{"X"}}
		})}, `record type "X"`},
		{"no work", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Work = nil })}, "no Work"},
		{"a bad backoff", []deadlines.Kind{with(func(k *deadlines.Kind) {
			k.Work = deadlines.Send{Retry: deadlines.Backoff{First: time.Hour, Max: time.Minute}}
		})}, "Max wait of at least First"},
		{"by hand yields", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Work, k.Yields = deadlines.ByHand{}, []string{"x"} })}, "yields to nothing"},
		{"twice", []deadlines.Kind{good, good}, "declared twice"},
		{"overlapping prefixes", []deadlines.Kind{good, with(func(k *deadlines.Kind) { k.Name, k.Prefix = "other", "unconfirmed-order#x" })}, "overlap"},
		{"takes an unknown kind", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Takes = "nothing" })}, `takes over "nothing"`},
		{"takes a kind of another prefix", []deadlines.Kind{good, with(func(k *deadlines.Kind) { k.Name, k.Takes = "shipping", "unconfirmed-order" })}, `takes over "unconfirmed-order"`},
		{"listed as a kind by hand", []deadlines.Kind{
			with(func(k *deadlines.Kind) { k.Name, k.Prefix, k.Work = "a", "x#", deadlines.ByHand{} }),
			with(func(k *deadlines.Kind) { k.Name, k.Prefix, k.Work = "b", "x#", deadlines.ByHand{ListedAs: "a"} }),
		}, `lists as "a"`},
		{"yields to an unknown kind", []deadlines.Kind{with(func(k *deadlines.Kind) { k.Yields = []string{"nothing"} })}, `yields to "nothing"`},
	} {
		ks, err := deadlines.NewKinds(c.kinds...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewKinds = %v, %v; want an error saying %q", c.name, ks.Names(), err, c.want)
		}
	}
	if _, err := deadlines.NewKinds(good, with(func(k *deadlines.Kind) { k.Name, k.After, k.Work = "order-2-review", 0, deadlines.ByHand{} }),
		with(func(k *deadlines.Kind) { k.Name, k.After = "retry-3", 0 })); err != nil {
		t.Errorf("names of letters, digits and hyphens, and kinds due at once: %v", err)
	}
}

func TestEventsReadTheCommonCase(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    deadlines.Record
		want deadlines.Change
		ok   bool
	}{
		{deadlines.Record{Stream: "order-1", Position: 1, Type: "OrderPlaced", At: at}, deadlines.Change{Subject: "order-1"}, true},
		{deadlines.Record{Stream: "order-1", Position: 2, Type: "OrderConfirmed", At: at}, deadlines.Change{Subject: "order-1", Settled: true, How: "OrderConfirmed"}, true},
		{deadlines.Record{Stream: "order-1", Position: 3, Type: "OrderShipped", At: at}, deadlines.Change{}, false},
	} {
		got, ok, err := placed.Change(c.r)
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("Change(%s) = %+v, %v, %v; want %+v, %v", c.r.Type, got, ok, err, c.want, c.ok)
		}
	}
	if _, _, err := placed.Change(deadlines.Record{Type: "OrderPlaced"}); err == nil {
		t.Error("a record of no stream, so of no subject, was read")
	}
}
